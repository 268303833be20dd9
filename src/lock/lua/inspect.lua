--[[
  inspect: one node's lease, read-only, one consistent snapshot (`status`, `check`). With the
  key absent, the uptime tells whether the restart guard holds the node closed. A fence
  counter of another type (a hash set by hand) is reported, not an error: the node's lease
  is still read, and `status` can say what blocks acquisitions there.

  Reply (lock/replies.h InspectReply), an array:
    [1] held        integer  1 the key exists, 0 it does not
    [2] holder      string   the key's value, "" when absent
    [3] pttl_ms     integer  its PTTL (-2 none, -1 no expiry)
    [4] token       string   the fence counter, "" when absent or of another type (one that
                             is no token is read as bad_fence)
    [5] uptime_s    integer  the server's uptime in s, -1 when INFO was refused
    [6] bad_fence   string   "" or the fence counter's type when it is not a string
    or an error reply naming the lease key's type when it holds another type
]]
local lease_key = KEYS[1]  -- the lease key
local fence_key = KEYS[2]  -- the fence counter

-- @include lib/uptime.lua
-- @include lib/lease_value.lua

local holder, wrong = lease_value(lease_key)
if wrong then
  return wrong
end
local exists = 1
if not holder then
  exists = 0
  holder = ''
end
local up = uptime_s() or -1
local fence = redis.pcall('GET', fence_key)
local fence_type = ''
if type(fence) == 'table' then
  local t = redis.pcall('TYPE', fence_key)
  fence_type = type(t) == 'table' and t['ok'] or 'unknown'
  fence = ''
end
return {exists, holder, redis.call('PTTL', lease_key), fence or '', up, fence_type}
