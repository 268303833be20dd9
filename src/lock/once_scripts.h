#pragma once
/// The once_per scripts (redisgo_task(1), once_per; docs/DESIGN.md "Restart guard", once_per
/// claims): the claim of a slot, its end, and what `status`, `check`, `adopt` and the daemon
/// read of it. lock/once.h holds the rule they apply, in C++, for the messages.
///
/// Besides the claims ("<base>:once:<slot start in s>", hashes of holder, token, start and
/// status), one hash per key, the witness ("<base>:once:witness", lock::LeaseKeys::witness):
///   slot        the highest slot a claim or an `adopt` recorded here (never lowered)
///   durable     "1" when its last write came from a server with AOF on and WAITAOF
///               (Redis >= 7.2), whose claims are fsynced before they count; else "0"
///   adopted, adopted_ms, adopted_by, adopts
///               the last `adopt`: the slot it declared unclaimed, this server's TIME then,
///               who ran it, and how many times `adopt` was run here
/// It lives the longer of 7 days and 4 x once_per, refreshed by every write, never shortened.

#include <string>

#include "redis/connection.h"

namespace redisgo::lock {

using redis::Script;

/// once_state(witness key, ask replicas): one node's side of the rule, as an array
///   {uptime s (-1: INFO refused), TIME in ms, aof_enabled (-1: unknown), redis_version,
///    witness slot, durable, adopted, adopted_ms, adopted_by, adopts (each "" when none),
///    connected_slaves (-1: not asked or unknown)}
/// (lock/once.h parse_once_state). INFO through pcall: a user without +info is refused
/// nothing here. A witness of another type (set by hand) reads as none: no evidence.
/// waitaof(version): the server has WAITAOF (7.2 and later).
/// counts(state, guard_from ms, slot, highest witness): how a node without a claim of the
/// slot counts as unclaimed ("uptime", "adopt", "witness"), or nil when it may have lost one
/// (a server that refuses INFO cannot say when it started: it does not count) (lock/once.h once_verdict says the same in words).
/// raise_witness(key, slot, durable, ttl): witness = max(witness, slot), the durable flag
/// of this write, the TTL at least ttl. A key of another type is left alone (no evidence).
inline const std::string kOnceFunctions = R"lua(
local function once_state(witness, replicas)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local up, version, aof, slaves = -1, '', -1, -1
  local server = redis.pcall('INFO', 'server')
  if type(server) == 'string' then
    up = tonumber(string.match(server, 'uptime_in_seconds:(%d+)')) or -1
    version = string.match(server, 'redis_version:([%w%.%-]+)') or ''
  end
  local persistence = redis.pcall('INFO', 'persistence')
  if type(persistence) == 'string' then
    aof = tonumber(string.match(persistence, 'aof_enabled:(%d+)')) or -1
  end
  if replicas then
    local replication = redis.pcall('INFO', 'replication')
    if type(replication) == 'string' then
      slaves = tonumber(string.match(replication, 'connected_slaves:(%d+)')) or -1
    end
  end
  local w = redis.pcall('HMGET', witness, 'slot', 'durable', 'adopted', 'adopted_ms', 'adopted_by', 'adopts')
  if type(w) ~= 'table' or w.err then
    w = {}
  end
  return {up, now, aof, version, w[1] or '', w[2] or '', w[3] or '', w[4] or '', w[5] or '', w[6] or '', slaves}
end
local function waitaof(version)
  local major, minor = string.match(version, '^(%d+)%.(%d+)')
  major, minor = tonumber(major), tonumber(minor)
  return major ~= nil and minor ~= nil and (major > 7 or (major == 7 and minor >= 2))
end
local function counts(s, guard_from, slot, highest)
  if s[1] < 0 then
    return nil
  end
  local started = s[2] - (s[1] - 1) * 1000
  if started <= guard_from then
    return 'uptime'
  end
  if tonumber(s[7]) == slot and (tonumber(s[8]) or 0) >= started then
    return 'adopt'
  end
  local witness = tonumber(s[5])
  if s[3] == 1 and waitaof(s[4]) and witness and witness > 0 and s[6] == '1' and witness >= highest then
    return 'witness'
  end
  return nil
end
local function raise_witness(key, slot, durable, ttl)
  local old = redis.pcall('HGET', key, 'slot')
  if type(old) == 'table' then
    return false
  end
  local left = redis.call('PTTL', key)
  if not tonumber(old) or tonumber(old) < slot then
    redis.call('HSET', key, 'slot', string.format('%.0f', slot))
  end
  redis.call('HSET', key, 'durable', durable)
  if left < tonumber(ttl) then
    redis.call('PEXPIRE', key, ttl)
  end
  return true
end
local function claim_of(key)
  if redis.call('EXISTS', key) == 0 then
    return nil
  end
  local c = redis.pcall('HMGET', key, 'holder', 'token', 'start', 'status')
  if type(c) ~= 'table' or c.err then
    return {'(not a claim: ' .. redis.call('TYPE', key).ok .. ')', '', '', ''}
  end
  return {c[1] or '(no holder)', c[2] or '', c[3] or '', c[4] or ''}
end
)lua";

/// Claim a once_per slot (redisgo_task(1), once_per), while holding the lease. KEYS: lease key,
/// claim key, witness. ARGV: holder, token, start (ms since the epoch), claim ttl in ms, the
/// earliest time a run of this slot can have started (ms since the epoch; "" = no restart
/// guard), the slot (s), the highest witness any node showed ("" = none), the witness's TTL
/// in ms, "1" to count the replicas (Sentinel, Cluster).
/// The lease not ours: {-1}. Already claimed: {0, holder, token, start, status or ""};
/// something else at the claim key (another type) counts as claimed too: at most once.
/// Restart guard: no claim, and the node does not count as unclaimed (counts(): it may have
/// lost a claim of the slot): {2, state}, not claimed. Else HSET holder/token/start with
/// PEXPIRE, and with the guard the witness raised to the slot. Nothing is left half-written
/// by a refusal (ACL): PEXPIRE is run on the absent claim key before the HSET (a claim
/// without its expiry would hold the slot forever, never run), and a witness that cannot be
/// written takes the claim away again before the refusal is returned. Claimed: {1, how it counted, 1 when
/// the claim must be fsynced (WAITAOF) before it counts else 0, state} (state: once_state,
/// as before the claim).
inline const std::string kClaimSource = kOnceFunctions + R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {-1}
end
local c = claim_of(KEYS[2])
if c then
  return {0, c[1], c[2], c[3], c[4]}
end
local s = once_state(KEYS[3], ARGV[9] == '1')
local slot = tonumber(ARGV[6])
local how = 'off'
if ARGV[5] ~= '' then
  how = counts(s, tonumber(ARGV[5]), slot, tonumber(ARGV[7]) or 0)
  if not how then
    return {2, s}
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('HSET', KEYS[2], 'holder', ARGV[1], 'token', ARGV[2], 'start', ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
local durable = 0
if ARGV[5] ~= '' then
  if s[3] == 1 and waitaof(s[4]) then
    durable = 1
  end
  local ok, err = pcall(raise_witness, KEYS[3], slot, tostring(durable), ARGV[8])
  if not ok then
    redis.pcall('DEL', KEYS[2])
    if type(err) == 'table' then
      return err
    end
    return redis.error_reply(tostring(err))
  end
end
return {1, how, durable, s}
)lua";
inline const Script kClaim{kClaimSource};

/// Record how a claimed slot's run ended, or drop a claim that did not run. KEYS: claim
/// key. ARGV: holder, exit status ("" = drop the claim). Only a claim of ours: 1, else 0.
inline const Script kFinishClaim{R"lua(
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then
  return 0
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'status', ARGV[2])
end
return 1
)lua"};

/// Read once_per claims (for `status`). KEYS: claim keys. No ARGV. Read-only:
/// per key {holder, token, start, status} (each "" when absent; holder "" = no claim).
inline const Script kReadClaims{R"lua(
local out = {}
for i = 1, #KEYS do
  local c = redis.call('HMGET', KEYS[i], 'holder', 'token', 'start', 'status')
  out[i] = {c[1] or '', c[2] or '', c[3] or '', c[4] or ''}
end
return out
)lua"};

/// A node's side of the rule and its claims, read-only (the daemon before its claim,
/// `check`, `adopt`, `status`). KEYS: witness, then claim keys. ARGV: "1" to count the
/// replicas. {state, then per claim key {holder, token, start, status}} (holder "" = none;
/// another type at a claim key reads as a claim, as the claim script takes it).
inline const std::string kReadOnceSource = kOnceFunctions + R"lua(
local out = {once_state(KEYS[1], ARGV[1] == '1')}
for i = 2, #KEYS do
  out[i] = claim_of(KEYS[i]) or {'', '', '', ''}
end
return out
)lua";
inline const Script kReadOnce{kReadOnceSource};

/// `adopt`: the operator declares a slot unclaimed (a first deployment: servers that never
/// saw the key look exactly like servers that restarted empty). KEYS: claim key, witness.
/// ARGV: slot (s), who, witness ttl in ms. A claim there: {0, holder, token, start, status},
/// nothing written. Else the witness raised to the slot and the record written (adopted =
/// slot, adopted_ms = TIME, adopted_by, adopts + 1): {1, TIME in ms}. A witness of another
/// type: an error naming it and its type, nothing written.
inline const std::string kAdoptSource = kOnceFunctions + R"lua(
local c = claim_of(KEYS[1])
if c then
  return {0, c[1], c[2], c[3], c[4]}
end
local s = once_state(KEYS[2], false)
local durable = '0'
if s[3] == 1 and waitaof(s[4]) then
  durable = '1'
end
if not raise_witness(KEYS[2], tonumber(ARGV[1]), durable, ARGV[3]) then
  return redis.error_reply('once_per witness ' .. KEYS[2] .. ' holds a ' .. redis.call('TYPE', KEYS[2]).ok ..
                           ', not a witness (something else wrote it): delete it (redis-cli DEL ' .. KEYS[2] .. ')')
end
local adopts = tonumber(redis.call('HGET', KEYS[2], 'adopts')) or 0
redis.call('HSET', KEYS[2], 'adopted', ARGV[1], 'adopted_ms', string.format('%.0f', s[2]), 'adopted_by', ARGV[2],
           'adopts', tostring(adopts + 1))
return {1, s[2]}
)lua";
inline const Script kAdopt{kAdoptSource};

/// `adopt` that did not reach a quorum: its record dropped where it was written. KEYS:
/// witness. ARGV: slot, adopted_ms as written. 1 dropped, 0 not ours (another adopt since).
inline const Script kDropAdopt{R"lua(
local a = redis.pcall('HMGET', KEYS[1], 'adopted', 'adopted_ms')
if type(a) ~= 'table' or a.err or a[1] ~= ARGV[1] or a[2] ~= ARGV[2] then
  return 0
end
redis.call('HDEL', KEYS[1], 'adopted', 'adopted_ms', 'adopted_by')
return 1
)lua"};

}  // namespace redisgo::lock
