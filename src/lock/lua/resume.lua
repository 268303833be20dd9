--[[
  resume: drops the pause (`resume`) and wakes the waiters it held back (lib/wake_waiters.lua).

  Reply (lock/replies_line.h ResumeReply), an array:
    [1] was_paused  integer  1 there was a pause, 0 there was none
    [2] woken       integer  1 woken, or 0 when the wake was refused (ACL)
]]
local pause_key = KEYS[1]             -- the pause
local line_key = KEYS[2]              -- the waiting line
local lease_keys = {unpack(KEYS, 3)}  -- the lease key and a semaphore's other slot keys
local window = ARGV[1]                -- the turn window in ms
local channel = ARGV[2]               -- the release channel
local guard_ms = ARGV[3]              -- the restart guard in ms ("0": off)

-- @include lib/wake_waiters.lua

local was = redis.call('DEL', pause_key)
return {was, wake_waiters(line_key, lease_keys, window, channel, guard_ms)}
