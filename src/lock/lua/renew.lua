--[[
  renew: extends our lease (compare-and-PEXPIRE), and repairs it on a node that lost it.

  A key that is gone from this node (deleted, evicted, the node restarted empty, or never
  set: a waiter woken by a release can win a quorum while the release has not yet reached
  this node), or that holds our own turn (a release there handed it to us while the quorum's
  grant missed that node), is set again for this holder with the ttl when a token is given,
  and the node's fence raised to at least that token. With several nodes that is an
  acquisition of this one node (SET NX) made while a quorum still holds the lease, so it
  takes nothing from anyone; without it a leader left on a bare quorum loses its lease to the
  next single node that fails. On the only node the restart guard keeps newcomers off a
  restarted server until the holder has set its key again; a fence counter there above our
  token proves that someone was granted the key after us (a FLUSHALL or a DEL, not a restart:
  that loses the counter too): lost, not set again.

  With a claim that names this holder, the claim is kept for its ttl from now too: a run
  longer than the claim's 2 x once_per must not let a host that waited for the lease find
  the slot unclaimed (pcall: a claim key of another type is no claim of ours). A claim that
  is gone (the node restarted empty) is written again for this run, as the lease is: a host
  that fires later in the slot must find it.

  Reply (lock/replies.h RenewReply), an integer, its `result`:
    1  kRenewed: the key is ours and was extended
    2  kRepaired: the key was gone (or held our turn) and is set again for us
    0  kNotOurs: another holder's, another's turn, gone without a token, or lost on the only
       node; nothing changed
    3  kOtherType: the key holds another type (something else wrote over our lease): not
       ours, nothing changed; a leader on one node stops its child at once instead of at its
       deadline
    or the error reply of a refused command
]]
local lease_key = KEYS[1]    -- the lease key
local fence_key = KEYS[2]    -- the fence counter
local claim_key = KEYS[3]    -- the once_per claim of the running slot, or nil
local lease = ARGV[1]        -- our lease id (lib/lease_id.lua)
local ttl = ARGV[2]          -- the lease ttl in ms
local token = ARGV[3]        -- our fencing token ("" = no repair)
local fence_ttl = ARGV[4]    -- the fence counter's ttl in ms
local claim_ttl = ARGV[5]    -- the claim's ttl in ms ("" or nil = no claim)
local claim_start = ARGV[6]  -- the claim's start, ms since the epoch ("" or nil = none)
local only = ARGV[7]         -- "1": the only node and the only slot (a semaphore's slots share one counter)

-- @include lib/fence.lua
-- @include lib/lease_id.lua

local holder = holder_of(lease)  -- our holder id: our turn, our claim

local held = redis.pcall('GET', lease_key)
if type(held) == 'table' then
  if refusal(held) then
    return redis.error_reply(held.err)
  end
  return 3  -- a key of another type: something else wrote over our lease (not ours)
end
if held == '\1turn:' .. holder then
  held = false  -- our own turn, on a node the quorum's grant missed: taken as the lease
end
local renewed
if held == lease then
  renewed = redis.call('PEXPIRE', lease_key, ttl)
elseif not held and token ~= '' then
  local fence = redis.pcall('GET', fence_key)
  local bad = bad_fence(fence)
  if only == '1' and not bad and (tonumber(fence) or 0) > tonumber(token) then
    return 0
  end
  redis.call('SET', lease_key, lease, 'PX', ttl)
  if not bad and (tonumber(fence) or 0) < tonumber(token) then
    redis.call('SET', fence_key, token, 'PX', fence_ttl)
  end
  renewed = 2
else
  return 0
end
if claim_key and claim_ttl ~= '' then
  if redis.pcall('HGET', claim_key, 'holder') == holder then
    redis.call('PEXPIRE', claim_key, claim_ttl)
  elseif token ~= '' and claim_start ~= '' and redis.call('EXISTS', claim_key) == 0 then
    redis.call('HSET', claim_key, 'holder', holder, 'token', token, 'start', claim_start)
    redis.call('PEXPIRE', claim_key, claim_ttl)
  end
end
return renewed
