-- The waiting line (docs/DESIGN.md "The waiting line", invariant 11), shared by the fair
-- scripts. The line is a sorted set beside the key ("<base>:line", LeaseKeys::line):
-- member = holder id, score = ticket. A ticket is the server's TIME in µs when the waiter
-- first joined (or one more than the line's tail, should that clock have stepped back), so a
-- score also says since when; the waiter writes back the largest ticket that any node gave it,
-- and a node raises a member's score to it, never lowers it: under Redlock every node orders
-- the same waiters the same way, ties broken by holder id as ZSET does. A waiter that is not
-- in a node's line (dropped, or it lost its turn) is given a new ticket there, at the tail.
--
-- A turn: the lease key holds "\1turn:<holder>" with a PX of the turn window. Nobody renews
-- it, so a head that does not come loses it when it expires; the head converts it into its
-- lease (acquire_fair.lua). A turn is only written where the restart guard lets the key be
-- given: by a release (the key was there: the server had not lost it) or by an acquire that
-- found the key free on a server past its guard. So taking a turn asks no guard: a wake from
-- an acquire that ignored the guard would let a standby take a restarted server's key from
-- under the holder that was about to set it again.
local TURN = '\1turn:'
-- line_call(...): a command on the line. A line key that is not a sorted set (set by hand)
-- or a refused command is a clear error, as for the fence counter (raised: callers that wrote
-- something first catch it with pcall and undo).
local function line_call(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    local line = select(2, ...)
    if string.find(r.err, 'NOPERM', 1, true) or string.find(r.err, 'permission', 1, true) or
       string.find(r.err, "can't run", 1, true) then
      local cmd = string.lower(select(1, ...))
      error('the ACL user may not run ' .. cmd .. ' on the waiting line ' .. line .. ' (' .. r.err .. '): grant +' .. cmd, 0)
    end
    error('waiting line ' .. line .. ' is not a sorted set (' .. r.err .. '): delete it', 0)
  end
  return r
end
local function wake_channel(line, holder)
  return string.sub(line, 1, -5) .. 'wake:' .. holder
end
-- wake(line, key, window, me): the first listener of the line, addressed on its own channel
-- ("<base>:wake:<holder>"), is given `key` as its turn. PUBLISH answers how many clients got
-- the message: 0 means nobody listens (the waiter died or lost its connection), so that entry
-- is dropped and the next one tried, up to 256 per call (one PUBLISH each; the dead are
-- removed in one ZREMRANGEBYRANK). The woken head is removed from the line (its turn is in the
-- key) and the next one told "next <window ms>", so that someone acts if the head never comes.
-- Returns 'empty' (nobody waits), 'self' (`me` heads the line: the caller takes the lease),
-- 'woke' and the holder (the key now holds its turn), 'refused' (PUBLISH refused: an ACL user
-- without the channel; the line is left as it was) or 'more' (only dead entries seen so far).
local function wake(line, key, window, me)
  local batch = line_call('ZRANGE', line, 0, 255)
  local dead = 0
  local kind, woken = 'more', nil
  for i, head in ipairs(batch) do
    if head == me then
      kind = 'self'
      break
    end
    local n = redis.pcall('PUBLISH', wake_channel(line, head), 'turn')
    if type(n) ~= 'number' then
      kind = 'refused'
      break
    end
    dead = i
    if n > 0 then
      redis.call('SET', key, TURN .. head, 'PX', window)
      if batch[i + 1] then
        redis.pcall('PUBLISH', wake_channel(line, batch[i + 1]), 'next ' .. window)
      end
      kind, woken = 'woke', head
      break
    end
  end
  if #batch == 0 then
    kind = 'empty'
  end
  -- The dead (and the woken head, whose turn is now in the key) leave the line at once.
  if dead > 0 then
    redis.call('ZREMRANGEBYRANK', line, 0, dead - 1)
  end
  if kind == 'more' and #batch < 256 then
    kind = 'empty'
  end
  return kind, woken
end
-- back_at_front(line, key, me, join_it, line_ttl): a woken head that finds the key paused when
-- it comes to take its turn. The turn goes (the resume wakes the line's head for every free
-- key) and the head goes back to the front of the line, ahead of the waiters that were behind
-- it: sent to the tail, it would lose the place it waited for. Its ticket, written back later
-- under Redlock, only raises it to where it was. {position, ticket, length} as in_line, or nil
-- when the line is empty.
local function back_at_front(line, key, me, join_it, line_ttl)
  redis.call('DEL', key)
  if join_it ~= '1' then
    return {0, '', 0}
  end
  local first = line_call('ZRANGE', line, 0, 0, 'WITHSCORES')
  if not first[2] then
    return nil
  end
  redis.call('ZADD', line, 'NX', string.format('%.0f', tonumber(first[2]) - 1), me)
  redis.call('PEXPIRE', line, line_ttl)
  return {1, '', redis.call('ZCARD', line)}
end
-- in_line(line, me, join_it, ticket, line_ttl): a waiter that missed, in line if it may:
-- {position (0: not in line), ticket or "", line length (0: not read; only a join reads it)}.
local function in_line(line, me, join_it, ticket, line_ttl)
  if join_it == '0' then
    -- fair = false: never in line, but told its length, so that it can say that it shares the
    -- key with a line (otherwise neither side says so while they are mixed).
    local n = redis.pcall('ZCARD', line)
    return {0, '', type(n) == 'number' and n or 0}
  end
  if join_it ~= '1' then
    return {0, '', 0}
  end
  -- In line already (the common case of a waiter's attempt): raise our score to the ticket,
  -- never lower it, and read our place. The caller sends the ticket only until this node has
  -- it, so a waiter's miss costs one command here.
  if ticket ~= '' then
    line_call('ZADD', line, 'XX', 'GT', ticket, me)
  end
  local rank = line_call('ZRANK', line, me)
  if rank then
    return {rank + 1, ticket, 0}
  end
  local t = redis.call('TIME')
  local score = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local tail = redis.call('ZRANGE', line, -1, -1, 'WITHSCORES')
  if tail[2] and tonumber(tail[2]) >= score then
    score = tonumber(tail[2]) + 1
  end
  redis.call('ZADD', line, string.format('%.0f', score), me)
  redis.call('PEXPIRE', line, line_ttl)
  local length = redis.call('ZCARD', line)
  return {length, string.format('%.0f', score), length}
end
