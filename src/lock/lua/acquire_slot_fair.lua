--[[
  acquire_slot_fair: acquires one slot of a semaphore (limit > 1), with the waiting line, as
  acquire_fair.lua acquires a lease key. A slot that holds our turn is taken first (no guard:
  see lib/line.lua); else a free slot when nobody waits or we head the line; else we join the
  line, told of the slot that frees first (or the woken head's turn).
  Costs: the slots are read in one MGET, the fence only where a slot is to be granted, the
  slots' PTTLs only on a miss (a taken turn reads none): the commands per job stay those of a
  lease key.
  A slot key of another type (a hash written over it) is no lease: it is skipped, neither
  granted nor fatal, so that the other slots keep serving (capacity limit - 1), and named.

  Reply (lock/replies.h AcquireSlotReply), an array: as acquire_fair.lua's, where
    granted: [3] slot_key  string  the slot key taken (never "")
    busy:    [2] holder, [3] pttl_ms  of the slot that frees first, or of the woken head's turn
  and, after any of them, one more element when this attempt found slots of another type
  (only those it tried to take: a free slot's SET NX is what tells):
    [n] other_type_slots  array  {slot key, its type, ...}
  or an error reply: the line of another type, a bad fence counter, a refusal
]]
local fence_key = KEYS[1]                        -- the fence counter
local line_key = KEYS[2]                         -- the waiting line
local slot_keys = {unpack(KEYS, 3, #KEYS - 1)}   -- the slot keys, in the order to try them
local pause_key = KEYS[#KEYS]                    -- the pause
local lease = ARGV[1]                            -- our lease id: the value we set (lib/lease_id.lua)
local ttl = ARGV[2]                              -- the lease ttl in ms
local fence_ttl = ARGV[3]                        -- the fence counter's ttl in ms
local guard_ms = ARGV[4]                         -- the restart guard in ms ("0": off)
local ticket = ARGV[5]                           -- our ticket ("" none)
local join = ARGV[6]                             -- as acquire_fair.lua's join
local line_ttl = ARGV[7]                         -- the line's ttl in ms
local window = ARGV[8]                           -- the turn window in ms
local proposal = ARGV[9]                         -- the proposed token (several nodes; "" or nil: none)

-- @include lib/fence.lua
-- @include lib/line.lua
-- @include lib/guard_taken.lua
-- @include lib/lease_id.lua

local holder = holder_of(lease)  -- our holder id: our place in the line, our turn

local bad = {}  -- slot keys of another type this attempt found: {key, type, ...}

-- Every slot's value in one MGET (they share the key's hash slot); a user refused MGET (an
-- older ACL recipe) reads them one by one. MGET answers nil for a key of another type, where
-- GET fails: either way such a slot looks free, and the SET NX in take_free tells it apart.
-- Returns the values by slot (false: free), or nil and the error reply of a refusal.
local function read_slots()
  local got = redis.pcall('MGET', unpack(slot_keys))
  if type(got) ~= 'table' or got.err then
    got = {}
    for j, key in ipairs(slot_keys) do
      local v = redis.pcall('GET', key)
      if type(v) == 'table' then
        if refusal(v) then
          return nil, redis.error_reply(v.err)
        end
        v = false
      end
      got[j] = v
    end
  end
  return got
end

-- The slot that holds our turn (nil: none), and the free slots in order.
local function sort_slots(values)
  local mine, frees = nil, {}
  for j, key in ipairs(slot_keys) do
    local v = values[j]
    if v == TURN .. holder then
      mine = key
    elseif not v then
      frees[#frees + 1] = key
    end
  end
  return mine, frees
end

-- Nothing for us: in line, told of the held slot that frees first (its PTTL: only here, so
-- that a turn taken or a slot granted reads none).
local function miss(values)
  local first, best = 1, -1
  for j, key in ipairs(slot_keys) do
    if values[j] then
      local pttl = redis.call('PTTL', key)
      if pttl >= 0 and (best < 0 or pttl < best) then
        first, best = j, pttl
      end
    end
  end
  local l = in_line(line_key, holder, join, ticket, line_ttl)
  return {0, values[first] or '', best, l[1], l[2], l[3]}
end

-- A free slot for us, as acquire_fair.lua takes a free key: SET first, then no turn either
-- while the restart guard holds a free slot. A SET NX that fails found a key of another type
-- (MGET's nil): named (bad), and the next free one is tried; with none left this is a miss,
-- as if that slot were held. Returns the reply when no slot is ours, else nil, the slot,
-- the next free slot (or nil) and guard_left's answer (< 0: INFO refused).
local function take_free(values, frees)
  local free, other = nil, nil
  for j, key in ipairs(frees) do
    if redis.call('SET', key, lease, 'NX', 'PX', ttl) then
      free, other = key, frees[j + 1]
      break
    end
    local t = redis.pcall('TYPE', key)
    bad[#bad + 1] = key
    bad[#bad + 1] = type(t) == 'table' and t.ok or 'unknown type'
  end
  if not free then
    return miss(values)
  end
  local guarded, left = guard_taken(free, guard_ms, line_key, holder, join, ticket, line_ttl)
  if guarded then
    return guarded
  end
  local ok, kind, woken = pcall(wake, line_key, free, window, holder)
  if not ok then
    redis.call('DEL', free)
    return redis.error_reply(kind)
  end
  if kind == 'self' then
    redis.call('ZREM', line_key, holder)  -- a turn's waiter left the line when it was woken
  end
  if kind == 'empty' or kind == 'self' then
    return nil, free, other, left
  end
  if kind ~= 'woke' then
    redis.call('DEL', free)
  end
  local l = in_line(line_key, holder, join, ticket, line_ttl)
  if kind == 'woke' then
    return {0, TURN .. woken, tonumber(window), l[1], l[2], l[3]}
  end
  return {0, '', -1, l[1], l[2], l[3]}
end

-- Another slot is free (a turn that expired unused, a release that woke nobody): its turn goes
-- to the line's head now, or it would stay out of service until the next release. Only where
-- nothing is there (MGET's nil may be a key of another type; EXISTS through pcall, so that a
-- user refused it does not fail the script after its SET) and where the restart guard lets a
-- free key be given (take_free asked it already): after an empty restart that slot may be a
-- holder's that has not renewed yet, whose child still runs.
local function wake_other(other, mine)
  if other and redis.pcall('EXISTS', other) == 0 and (not mine or guard_left(tonumber(guard_ms) or 0) <= 0) then
    pcall(wake, line_key, other, window, holder)
  end
end

local function main()
  local values, refused = read_slots()
  if not values then
    return refused
  end
  local mine, frees = sort_slots(values)
  if not mine and #frees == 0 then
    return miss(values)
  end
  -- Something to grant: the pause first, then the fence it would raise.
  local marker, pause_ttl = paused(pause_key)
  if marker then
    local l = mine and back_at_front(line_key, mine, holder, join, line_ttl) or
              in_line(line_key, holder, join, ticket, line_ttl)
    return {0, marker, pause_ttl, l[1], l[2], l[3]}
  end
  local fence = redis.pcall('GET', fence_key)
  if bad_fence(fence) then
    return fence_error(fence_key, fence)
  end
  local slot, other, left = mine, frees[2], 0
  if mine then
    redis.call('SET', mine, lease, 'PX', ttl)
    other = other or frees[1]
  else
    local reply
    reply, slot, other, left = take_free(values, frees)
    if reply then
      return reply
    end
  end
  wake_other(other, mine)
  if left < 0 then
    return {1, issue(fence_key, fence, fence_ttl, proposal), slot, 'noinfo'}
  end
  return {1, issue(fence_key, fence, fence_ttl, proposal), slot}
end

local reply = undoing(main, slot_keys, lease)
if #bad > 0 and type(reply) == 'table' and not reply.err then
  reply[#reply + 1] = bad
end
return reply
