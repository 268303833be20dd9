--[[
  acquire_fair: acquires the lease key, with the waiting line (whatever `fair` says: fair =
  false only never joins the line, lock/redlock_acquire.cpp).

  The lease is granted when the key is free and nobody waits, when the key holds our turn, or
  when we head the line. A grant SETs the key NX PX ttl and, only then, raises the fence
  counter (lib/fence.lua issue) and gives it the fence ttl. A fence counter that is not a
  number (or not even a string) undoes the SET in the same script, and so does a command
  refused halfway (undoing): a half-done acquisition must not hold the key for its TTL.
  There is no re-entrancy: a holder that acquires a key it already holds misses like anyone
  else (its lease is not silently extended, and no token is issued that the resource could
  confuse with the running one).
  Otherwise (held, another's turn, or free with others ahead, whose head is then woken) the
  caller joins the line if it may. Restart guard: a key that was absent on a server up for
  less than the guard is not granted (the SET is undone in the same script, so nobody ever
  sees it). A guard that could not be read (INFO refused) grants as before, and says so.
  Only a SET that succeeded asks INFO. `join`: "1" for a waiter that listens on its wake
  channel and waits in line.
  A miss of a waiter already in line costs four commands (EVALSHA, MGET, PTTL, ZRANK), as a
  miss did before the line (the ticket's ZADD XX GT only until the node holds it): the storm
  bounds count commands.

  Reply (lock/replies.h AcquireReply), an array, by its first element `kind`:
    granted: [1] 1
             [2] token        string   the fencing token (decimal)
             [3] slot_key     string   "" (present only with [4])
             [4] unguarded    string   "noinfo": the restart guard could not apply (INFO refused)
    busy:    [1] 0
             [2] holder       string   who holds it, "\1turn:<holder>" (a turn),
                                       "\1pause:<until ms>:<by>:<reason>" (paused), or "" (unknown)
             [3] pttl_ms      integer  its PTTL (-2: none)
             [4] position     integer  our place in the line (0: not in line)
             [5] ticket       string   our ticket, or ""
             [6] line_length  integer  the line's length (0: not read; only a join reads it)
    guarded: [1] 2
             [2] guard_ms     integer  how long (> 0) the server must still stay up to grant
             [3] position, [4] ticket, [5] line_length   as for busy
    or an error reply: the key or the line of another type, a bad fence counter, a refusal
]]
local lease_key = KEYS[1]  -- the lease key
local fence_key = KEYS[2]  -- the fence counter
local line_key = KEYS[3]   -- the waiting line
local pause_key = KEYS[4]  -- the pause
local lease = ARGV[1]      -- our lease id: the value we set (lib/lease_id.lua)
local ttl = ARGV[2]        -- the lease ttl in ms
local fence_ttl = ARGV[3]  -- the fence counter's ttl in ms
local guard_ms = ARGV[4]   -- the restart guard in ms ("0": off)
local ticket = ARGV[5]     -- our ticket ("" none)
local join = ARGV[6]       -- "1" wait in line; "" only look; "0" fair = false (look, told the length)
local line_ttl = ARGV[7]   -- the line's ttl in ms
local window = ARGV[8]     -- the turn window in ms
local proposal = ARGV[9]   -- the proposed token (several nodes; "" or nil: none)

-- @include lib/fence.lua
-- @include lib/line.lua
-- @include lib/guard_taken.lua
-- @include lib/lease_id.lua

local holder = holder_of(lease)  -- our holder id: our place in the line, our turn

-- The key and the fence counter in one MGET (they share the key's hash slot): a head taking
-- its turn reads nothing else, for the herd's budget. MGET answers nil for a key of another
-- type where GET fails: a nil lease is read again by lease_value when the SET NX finds the key
-- there, and a nil fence by GET where it is needed (an absent counter: the first acquisition).
-- A user refused MGET (an older ACL recipe) reads them one by one. Returns held, fence, or
-- nil, nil and the error reply for a key of another type.
local function read_key_and_fence()
  local got = redis.pcall('MGET', lease_key, fence_key)
  if type(got) ~= 'table' or got.err then
    local v, wrong = lease_value(lease_key)
    if wrong then
      return nil, nil, wrong
    end
    return v, false
  end
  return got[1], got[2]
end

-- A miss: told who holds the key and for how long, in line if we may.
local function missed(held, pttl)
  local l = in_line(line_key, holder, join, ticket, line_ttl)
  return {0, held, pttl, l[1], l[2], l[3]}
end

-- The key is free. SET first (a user refused SET learns it here, every time), then the guard:
-- a free key is given to nobody, not even as a turn, while the restart guard holds it (a turn
-- is taken without the guard). Then the pause, then the line. Returns the reply when the key
-- is not ours now, else nil, whether we headed the line, whether INFO was refused.
local function take_free()
  if not redis.call('SET', lease_key, lease, 'NX', 'PX', ttl) then
    -- MGET's nil was a key of another type: named, as GET's error would have been.
    local _, wrong = lease_value(lease_key)
    return wrong or redis.error_reply('lease key ' .. lease_key .. ' changed during the script')
  end
  local guarded, left = guard_taken(lease_key, guard_ms, line_key, holder, join, ticket, line_ttl)
  if guarded then
    return guarded
  end
  local marker, pause_ttl = paused(pause_key)
  if marker then
    redis.call('DEL', lease_key)
    return missed(marker, pause_ttl)
  end
  local ok, kind, woken = pcall(wake, line_key, lease_key, window, holder)
  if not ok then
    redis.call('DEL', lease_key)
    return redis.error_reply(kind)
  end
  if kind == 'woke' then
    return missed(TURN .. woken, tonumber(window))
  end
  if kind ~= 'empty' and kind ~= 'self' then
    redis.call('DEL', lease_key)
    return missed('', -2)
  end
  return nil, kind == 'self', left < 0
end

-- The key is ours to take (free, or our turn): set for us, the fence counter checked and
-- raised, the token answered.
local function grant(held, fence, headed, noinfo)
  if held ~= lease then
    redis.call('SET', lease_key, lease, 'PX', ttl)
  end
  if not fence then
    fence = redis.pcall('GET', fence_key)
  end
  if bad_fence(fence) then
    redis.call('DEL', lease_key)
    return fence_error(fence_key, fence)
  end
  if headed then
    redis.call('ZREM', line_key, holder)  -- a turn's waiter left the line when it was woken
  end
  if noinfo then
    return {1, issue(fence_key, fence, fence_ttl, proposal), '', 'noinfo'}
  end
  return {1, issue(fence_key, fence, fence_ttl, proposal)}
end

local function main()
  local held, fence, wrong = read_key_and_fence()
  if wrong then
    return wrong
  end
  local headed, noinfo = false, false
  if held == TURN .. holder then
    -- Our turn, but paused meanwhile: back at the front of the line (back_at_front).
    local marker, pause_ttl = paused(pause_key)
    if marker then
      local l = back_at_front(line_key, lease_key, holder, join, line_ttl) or
                in_line(line_key, holder, join, ticket, line_ttl)
      return {0, marker, pause_ttl, l[1], l[2], l[3]}
    end
  elseif held then
    return missed(held, redis.call('PTTL', lease_key))
  else
    local reply
    reply, headed, noinfo = take_free()
    if reply then
      return reply
    end
    held = lease
  end
  return grant(held, fence, headed, noinfo)
end

return undoing(main, {lease_key}, lease)
