-- once_per's rule, one node's side (redisgo_task(1), once_per; docs/DESIGN.md "Restart
-- guard"; lock/once.h holds the same rule in C++, for the messages).
--
-- Besides the claims ("<base>:once:<slot start in s>", hashes of holder, token, start and
-- status), one hash per key, the witness ("<base>:once:witness", lock::LeaseKeys::witness):
--   slot        the highest slot a claim or an `adopt` recorded here (never lowered)
--   durable     "1" when its last write came from a server with AOF on and WAITAOF
--               (Redis >= 7.2), whose claims are fsynced before they count; else "0"
--   adopted, adopted_ms, adopted_by, adopts
--               the last `adopt`: the slot it declared unclaimed, this server's TIME then,
--               who ran it, and how many times `adopt` was run here
-- It lives the longer of 7 days and 4 x once_per, refreshed by every write, never shortened.

-- once_state(witness key, ask replicas): the node's state, as an array
--   {uptime s (-1: INFO refused), TIME in ms, aof_enabled (-1: unknown), redis_version,
--    witness slot, durable, adopted, adopted_ms, adopted_by, adopts (each "" when none),
--    connected_slaves (-1: not asked or unknown)}
-- (lock/replies_once.h parse_once_state). INFO through pcall: a user without +info is refused
-- nothing here. A witness of another type (set by hand) reads as none: no evidence.
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
-- waitaof(version): the server has WAITAOF (7.2 and later).
local function waitaof(version)
  local major, minor = string.match(version, '^(%d+)%.(%d+)')
  major, minor = tonumber(major), tonumber(minor)
  return major ~= nil and minor ~= nil and (major > 7 or (major == 7 and minor >= 2))
end
-- counts(state, guard_from ms, slot, highest witness): how a node without a claim of the slot
-- counts as unclaimed ("uptime", "adopt", "witness"), or nil when it may have lost one (a
-- server that refuses INFO cannot say when it started: it does not count). lock/once.h
-- once_verdict says the same in words.
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
-- raise_witness(key, slot, durable, ttl): witness = max(witness, slot), the durable flag of
-- this write, the TTL at least ttl. A key of another type is left alone (no evidence): false.
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
-- claim_of(key): {holder, token, start, status} of the claim there, nil when there is none;
-- another type at the key reads as a claim ("(not a claim: <type>)"): at most once.
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
