-- @include lib/uptime.lua
-- guard_left(guard_ms): the restart guard (docs/DESIGN.md "Restart guard"): how long this
-- server must still stay up before it may grant a lease key that is absent. uptime_in_seconds
-- counts whole seconds of the server's cached clock, so a server up for 0.1 s can already say
-- 1: one second less than it says is counted (lock/lease.h restart_guard_left does the same
-- arithmetic). 0: open (or guard_ms is 0, the guard off); -1: INFO was refused or said no
-- uptime, so the guard cannot apply here and the grant goes ahead as it would without it.
-- A turn is taken without the guard, so a turn is only written for a free key where the
-- guard lets the key be given.
local function guard_left(guard_ms)
  if guard_ms <= 0 then
    return 0
  end
  local up = uptime_s()
  if not up then
    return -1
  end
  local left = guard_ms - (up - 1) * 1000
  if left > 0 then
    return left
  end
  return 0
end
