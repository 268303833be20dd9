-- @include lib/guard.lua
-- @include lib/lease_value.lua
-- The fence counter's rules, shared by the acquire scripts (lock/fencing.h).
--
-- Numbers: Redis's Lua 5.1 has only doubles, and tostring() prints 14 significant digits, so
-- the ~1.7e15 of a microsecond timestamp would come out as "1.7953087939339e+15". Tokens are
-- therefore always formatted with string.format('%.0f', x), exact for integers below 2^53
-- (9.0e15 µs is the year 2255). A counter at or above 2^53 - 1 is refused rather than hand
-- out a token that could not increase.

-- bad_fence(fence): the counter is not a decimal integer below 2^53 - 1 (or not a string).
local function bad_fence(fence)
  return type(fence) == 'table' or (fence and (not string.match(fence, '^%d+$') or #fence > 16 or tonumber(fence) >= 9007199254740991))
end
local function fence_error(key, fence)
  if refusal(fence) then
    return redis.error_reply(fence.err)
  end
  return redis.error_reply('fence counter ' .. key .. ' is not an integer below 2^53-1 (fix or delete it)')
end
-- undoing(main, keys, me): an acquire script's body, run so that a command refused halfway
-- (an ACL user without one of the rights it needs: Lua rolls nothing back) leaves no key set
-- for us: each of `keys` that holds `me` is deleted, and the refusal is answered as it came.
-- Without it a user without +pttl kept a lease for its whole TTL.
local function undoing(main, keys, me)
  local ok, res = pcall(main)
  if ok then
    return res
  end
  for _, key in ipairs(keys) do
    if redis.pcall('GET', key) == me then
      redis.pcall('DEL', key)
    end
  end
  return redis.error_reply(type(res) == 'table' and tostring(res.err) or tostring(res))
end
-- issue(key, fence, ttl, proposal): the token, max(counter + 1, server TIME in µs), or the
-- holder's proposal where that is higher and at most 25 ms ahead of this server's TIME
-- (Redlock: the quorum's nodes then issue one token, lock/fencing.h); stored in the counter
-- with the fence TTL (docs/DESIGN.md "Keys": a retired key leaves nothing behind; the TIME
-- floor keeps tokens increasing after it expires).
local function issue(key, fence, ttl, proposal)
  local t = redis.call('TIME')
  local token = (tonumber(fence) or 0) + 1
  local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if token < now_us then
    token = now_us
  end
  if proposal and #proposal <= 16 and string.match(proposal, '^%d+$') then
    local p = tonumber(proposal)
    if p > token and p <= now_us + 25000 then
      token = p
    end
  end
  redis.call('SET', key, string.format('%.0f', token), 'PX', ttl)
  return string.format('%.0f', token)
end
-- paused(pause): `pause` (redisgo_task(1), pause): while the pause key exists nothing is
-- granted; the waiter is answered as if the key were held by
-- "\1pause:<until ms>:<by>:<reason>" for the pause's TTL, so that it waits that long (or until
-- `resume` wakes it). Asked only where a grant would happen: a miss on a held key costs
-- nothing more. nil when there is no pause.
local function paused(pause)
  local p = redis.call('PTTL', pause)
  if p == -2 then
    return nil
  end
  local f = redis.pcall('HMGET', pause, 'until', 'by', 'reason')
  if type(f) ~= 'table' or f.err then
    f = {}
  end
  return '\1pause:' .. (f[1] or '') .. ':' .. (f[2] or '') .. ':' .. (f[3] or ''), p
end
