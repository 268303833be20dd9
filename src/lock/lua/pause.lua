--[[
  pause: records a pause (`pause`), replacing any pause there. A pause that now ends sooner
  than the one it replaced wakes the waiters, who slept until the old end, to read the new one
  (lib/wake_waiters.lua).

  Reply (lock/replies_line.h PauseReply), an array:
    [1] 1      integer  recorded
    [2] woken  integer  1 woken, or 0: the wake was needed but refused (ACL)
]]
local pause_key = KEYS[1]                  -- the pause
local line_key = KEYS[2]                   -- the waiting line
local lease_keys = {unpack(KEYS, 3)}       -- the lease key and a semaphore's other slot keys
local by = ARGV[1]                         -- who pauses
local reason = ARGV[2]                     -- why
local since = ARGV[3]                      -- since, ms since the epoch
local until_ms = ARGV[4]                   -- until, ms since the epoch
local pause_ttl = ARGV[5]                  -- the pause's ttl in ms
local window = ARGV[6]                     -- the turn window in ms
local channel = ARGV[7]                    -- the release channel
local guard_ms = ARGV[8]                   -- the restart guard in ms ("0": off)

-- @include lib/wake_waiters.lua

local old = redis.call('PTTL', pause_key)
redis.call('DEL', pause_key)
redis.call('HSET', pause_key, 'by', by, 'reason', reason, 'since', since, 'until', until_ms)
redis.call('PEXPIRE', pause_key, pause_ttl)
if old == -1 or old > tonumber(pause_ttl) then
  return {1, wake_waiters(line_key, lease_keys, window, channel, guard_ms)}
end
return {1, 1}
