--[[
  drop_adopt: an `adopt` that did not reach a quorum: its record dropped where it was written.

  Reply (lock/replies_once.h DropAdoptReply), an integer `ours`:
    1  dropped
    0  not ours (another adopt since): nothing changed
]]
local witness_key = KEYS[1]  -- the witness
local slot_s = ARGV[1]       -- the slot as adopted
local adopted_ms = ARGV[2]   -- adopted_ms as written

local a = redis.pcall('HMGET', witness_key, 'adopted', 'adopted_ms')
if type(a) ~= 'table' or a.err or a[1] ~= slot_s or a[2] ~= adopted_ms then
  return 0
end
redis.call('HDEL', witness_key, 'adopted', 'adopted_ms', 'adopted_by')
return 1
