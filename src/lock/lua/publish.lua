--[[
  publish: a control message (`handover`).

  Reply (lock/replies_line.h PublishReply), an integer `receivers`: the number of subscribers
  that received it (PUBLISH's reply).
]]
local channel = ARGV[1]  -- the channel
local message = ARGV[2]  -- the message

return redis.call('PUBLISH', channel, message)
