--[[
  claim: claims a once_per slot (redisgo_task(1), once_per) while holding the lease. Something
  else at the claim key (another type) counts as claimed too: at most once. Restart guard: no
  claim, and the node does not count as unclaimed (lib/once.lua counts: it may have lost a
  claim of the slot). Else HSET holder/token/start with PEXPIRE, and with the guard the witness
  raised to the slot. Nothing is left half-written by a refusal (ACL): PEXPIRE is run on the
  absent claim key before the HSET (a claim without its expiry would hold the slot forever,
  never run), and a witness that cannot be written takes the claim away again before the
  refusal is returned.

  Reply (lock/replies_once.h ClaimReply), an array, by its first element `kind`:
    claimed:  [1] 1
              [2] how     string   how the node counted ("uptime", "adopt", "witness", "off")
              [3] fsync   integer  1 when the claim must be fsynced (WAITAOF) before it counts
              [4] state   array    the node before the claim (lib/once.lua once_state)
    not ours: [1] -1               the lease is not ours
    taken:    [1] 0
              [2] holder, [3] token, [4] start_ms, [5] status   strings ("" when absent)
    guarded:  [1] 2
              [2] state   array    as for claimed
    or an error reply of a refusal
]]
local lease_key = KEYS[1]    -- the lease key
local claim_key = KEYS[2]    -- the claim key
local witness_key = KEYS[3]  -- the witness
local lease = ARGV[1]        -- our lease id (lib/lease_id.lua)
local token = ARGV[2]        -- our fencing token
local start = ARGV[3]        -- the run's start, ms since the epoch
local claim_ttl = ARGV[4]    -- the claim's ttl in ms
local guard_from = ARGV[5]   -- the earliest start of a run of this slot, ms ("" = no restart guard)
local slot_s = ARGV[6]       -- the slot, s since the epoch
local highest = ARGV[7]      -- the highest witness any node showed ("" = none)
local witness_ttl = ARGV[8]  -- the witness's ttl in ms
local replicas = ARGV[9]     -- "1": count the replicas (Sentinel, Cluster)

-- @include lib/once.lua
-- @include lib/lease_id.lua

local holder = holder_of(lease)  -- our holder id: what the claim records
if redis.call('GET', lease_key) ~= lease then
  return {-1}
end
local c = claim_of(claim_key)
if c then
  return {0, c[1], c[2], c[3], c[4]}
end
local s = once_state(witness_key, replicas == '1')
local slot = tonumber(slot_s)
local how = 'off'
if guard_from ~= '' then
  how = counts(s, tonumber(guard_from), slot, tonumber(highest) or 0)
  if not how then
    return {2, s}
  end
end
redis.call('PEXPIRE', claim_key, claim_ttl)
redis.call('HSET', claim_key, 'holder', holder, 'token', token, 'start', start)
redis.call('PEXPIRE', claim_key, claim_ttl)
local durable = 0
if guard_from ~= '' then
  if s[3] == 1 and waitaof(s[4]) then
    durable = 1
  end
  local ok, err = pcall(raise_witness, witness_key, slot, tostring(durable), witness_ttl)
  if not ok then
    redis.pcall('DEL', claim_key)
    if type(err) == 'table' then
      return err
    end
    return redis.error_reply(tostring(err))
  end
end
return {1, how, durable, s}
