--[[
  raise_fence: raises the fence counter to our token (Redlock, lock/fencing.h), only while
  the key is ours: counter = max(counter, token). Both numbers are below 2^53, where the
  double comparison is exact; the token is stored as given.

  A semaphore's slot where the counter is at the token already: this node issued us less, so
  it has since issued or been raised to the token for another holder of a slot, who may hold
  the very same token (two nodes that served two holders in opposite orders): the caller
  gives this acquisition up.

  Reply (lock/replies.h RaiseFenceReply), an integer, its `result`:
    1  kRaised: raised (or already above): ours
    0  kNotOurs: not ours: nothing changed
    2  kShared: a semaphore's slot, the counter at the token already: nothing changed
    or an error reply when the counter is not a number
]]
local lease_key = KEYS[1]  -- the lease (or slot) key
local fence_key = KEYS[2]  -- the fence counter
local lease = ARGV[1]      -- our lease id (lib/lease_id.lua)
local token = ARGV[2]      -- our token (decimal)
local fence_ttl = ARGV[3]  -- the fence counter's ttl in ms
local slot = ARGV[4]       -- "1": a semaphore's slot

if redis.call('GET', lease_key) ~= lease then
  return 0
end
local current = tonumber(redis.call('GET', fence_key) or '0')
if current == nil then
  return redis.error_reply('fence counter ' .. fence_key .. ' is not a number')
end
if current < tonumber(token) then
  redis.call('SET', fence_key, token, 'PX', fence_ttl)
elseif slot == '1' then
  return 2
end
return 1
