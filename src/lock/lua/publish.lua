--[[
  publish: a control message (`handover`).

  Reply (read by lock/redlock_claims.cpp), an integer: the number of subscribers that
  received it (PUBLISH's reply).
]]
local channel = ARGV[1]  -- the channel
local message = ARGV[2]  -- the message

return redis.call('PUBLISH', channel, message)
