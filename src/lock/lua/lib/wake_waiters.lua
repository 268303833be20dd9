-- @include lib/guard.lua
-- @include lib/line.lua
-- wake_waiters(line, keys, window, channel, guard_ms): wakes the waiters a pause held back, as
-- a release would: a "resume" message on the release channel (waiters outside the line) and,
-- for every free one of `keys` (the lease key and a semaphore's other slot keys), the line's
-- next head, unless the restart guard (guard_ms, the daemons' expire; "0": off) still holds
-- the free keys back on this server (then the waiters come at their own timers). Returns 1, or
-- 0 when a PUBLISH was refused (an ACL user without the channels: nobody was woken).
local function wake_waiters(line, keys, window, channel, guard_ms)
  local n = redis.pcall('PUBLISH', channel, 'resume')
  if type(n) ~= 'number' then
    return 0
  end
  if guard_left(tonumber(guard_ms) or 0) > 0 then
    return 1
  end
  for _, key in ipairs(keys) do
    if not redis.call('GET', key) then
      local ok, kind = pcall(wake, line, key, window, '')
      if ok and kind == 'refused' then
        return 0
      end
      if not ok or kind ~= 'woke' then
        break
      end
    end
  end
  return 1
end
