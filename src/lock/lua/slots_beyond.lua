--[[
  slots_beyond: slots held beyond a daemon's limit, in one EXISTS: above 0, a daemon of a
  larger `limit` holds the key too.

  Reply (lock/replies_admin.h SlotsBeyondReply), an integer `held`: how many of the slot keys
  exist, or -1 when the user may not ask (an ACL without +exists or the slot keys): an
  optional look must not fail as a refusal, which would hold the node back from the daemon's
  next attempt.
]]
local slot_keys = KEYS  -- the slot keys limit..63

local n = redis.pcall('EXISTS', unpack(slot_keys))
if type(n) ~= 'number' then
  return -1
end
return n
