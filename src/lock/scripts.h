#pragma once
/// The Lua scripts of the lease (docs/DESIGN.md: owned renewal and release, fencing, keys,
/// the restart guard). Every ownership check
/// runs inside Redis, atomically with the write it guards: a holder never extends,
/// deletes or raises the fence of a lease that is not its own.
///
/// Numbers: Redis's Lua 5.1 has only doubles, and tostring() prints 14 significant
/// digits, so the ~1.7e15 of a microsecond timestamp would come out as "1.7953087939339e+15".
/// Tokens are therefore always formatted with string.format('%.0f', x), which is exact for
/// integers below 2^53 (9.0e15 µs is the year 2255). The acquire script refuses a counter
/// at or above 2^53 - 1 rather than hand out a token that could not increase.
///
/// Each script runs as EVAL on its first use on a connection, by SHA after
/// (redis::AsyncConnection); kLeaseScripts lists them. A Script keeps a view of its
/// source, so a source built from shared Lua functions is a named string (kAcquireFairSource,
/// kInspectSource, ...) that lives as long as the Script. They are the lease's logic, so
/// they live in `lock`; the transport only sends them.

#include <string>
#include <vector>

#include "lock/once_scripts.h"
#include "redis/connection.h"

namespace redisgo::lock {

using redis::Script;

/// The acquire scripts (kAcquireFair, kAcquireSlotFair), whatever `fair` says (fair = false
/// only never joins the line: lock/redlock_acquire.cpp). A grant SETs the key NX PX ttl and,
/// only then, raises the fence counter (issue, below), gives it the fence TTL (docs/DESIGN.md
/// "Keys": a retired key leaves nothing behind; the TIME floor keeps tokens increasing after
/// it expires) and answers {1, "<token>"}; a miss tells the holder (or the turn) and its pttl,
/// so a waiter learns how long the current lease has left. A fence counter that is not a
/// number (or not even a string) undoes the SET in the same script, and so does a command
/// refused halfway (undoing): a half-done acquisition must not hold the key for its TTL.
/// Restart guard: a key that was absent on a server up for less than the guard is not
/// granted (the SET is undone in the same script, so nobody ever sees it): {2, ms left}.
/// A guard that could not be read (INFO refused) grants as before, and says so:
/// {1, "<token>", "", "noinfo"}. Only a SET that succeeded asks INFO.
/// There is no re-entrancy: a holder that acquires a key it already holds gets 0 like
/// anyone else (its lease is not silently extended, and no token is issued that the
/// resource could confuse with the running one).
/// The fence counter's rules, shared by the acquire scripts: a counter that is not a
/// decimal integer below 2^53 - 1 is refused (bad_fence, fence_error), and a token is
/// issued as max(counter + 1, server TIME in µs), or the holder's proposal where that is
/// higher and at most 25 ms ahead of this server's TIME (Redlock: lock/fencing.h), stored
/// with the fence TTL (issue).
///
/// The restart guard (docs/DESIGN.md "Restart guard"), shared by both too: guard_left(ms)
/// is how long this server must still stay up before it may grant a lease key that is
/// absent, from `INFO server`'s uptime_in_seconds. That count is whole seconds of the
/// server's cached clock, so a server up for 0.1 s can already say 1: the script counts one
/// second less than it says (lock/lease.h restart_guard_left does the same arithmetic).
/// 0: open (or guard_ms is 0, the guard off); -1: INFO was refused (an ACL user without
/// +info) or said no uptime, so the guard cannot apply here and the grant goes ahead as
/// it would without it (uptime_s, below).
/// The server's uptime in whole seconds from `INFO server` (through pcall: an ACL user
/// without +info must not fail the script as refused credentials), or nil when INFO was
/// refused or said none. Shared by the acquire scripts' guard, inspect and claim.
inline const std::string kUptimeFunction = R"lua(
local function uptime_s()
  local info = redis.pcall('INFO', 'server')
  return type(info) == 'string' and tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or nil
end
)lua";

/// The lease key's value (false: absent), or nil and an error reply naming the key and its
/// type when it holds another type (written by something else: a hash, a list), instead of
/// the raw WRONGTYPE of a GET in the middle of a script (attack round, issue 19). Shared by
/// the acquire scripts and inspect.
inline const std::string kNotALeaseFunction = R"lua(
local function refusal(r)
  return type(r) == 'table' and type(r.err) == 'string' and
         (string.find(r.err, "can't", 1, true) or string.find(r.err, 'NOPERM', 1, true) or
          string.find(r.err, 'ACL failure', 1, true)) ~= nil
end
local function lease_value(key)
  local v = redis.pcall('GET', key)
  if type(v) ~= 'table' then
    return v
  end
  if refusal(v) then
    return nil, redis.error_reply(v.err)
  end
  local t = redis.pcall('TYPE', key)
  local name = type(t) == 'table' and t.ok or 'other'
  return nil, redis.error_reply('lease key ' .. key .. ' holds a ' .. name .. ', not a lease (something else wrote it): delete it or choose another key')
end
)lua";

/// guard_left(guard_ms) (the restart guard's arithmetic, above): shared by the acquire
/// scripts and by every script that writes a turn for a free key (a turn is taken without
/// the guard, so it is only written where the guard lets the key be given).
inline const std::string kGuardFunctions = kUptimeFunction + R"lua(
local function guard_left(guard_ms)
  if guard_ms <= 0 then
    return 0
  end
  local up = uptime_s()
  if not up then
    return -1
  end
  local left = guard_ms - (up - 1) * 1000
  if left > 0 then
    return left
  end
  return 0
end
)lua";

inline const std::string kFenceFunctions = kGuardFunctions + kNotALeaseFunction + R"lua(
local function bad_fence(fence)
  return type(fence) == 'table' or (fence and (not string.match(fence, '^%d+$') or #fence > 16 or tonumber(fence) >= 9007199254740991))
end
local function fence_error(key, fence)
  if refusal(fence) then
    return redis.error_reply(fence.err)
  end
  return redis.error_reply('fence counter ' .. key .. ' is not an integer below 2^53-1 (fix or delete it)')
end
-- An acquire script's body, run so that a command refused halfway (an ACL user without one
-- of the rights it needs: Lua rolls nothing back) leaves no key set for us: each lease or slot
-- key from KEYS[first] to KEYS[last] that holds `me` is deleted, and the refusal is answered as
-- it came (attack round, issue 19: a user without +pttl kept a lease for its whole TTL).
local function undoing(main, first, last, me)
  local ok, res = pcall(main)
  if ok then
    return res
  end
  for i = first, last do
    if redis.pcall('GET', KEYS[i]) == me then
      redis.pcall('DEL', KEYS[i])
    end
  end
  return redis.error_reply(type(res) == 'table' and tostring(res.err) or tostring(res))
end
local function issue(key, fence, ttl, proposal)
  local t = redis.call('TIME')
  local token = (tonumber(fence) or 0) + 1
  local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if token < now_us then
    token = now_us
  end
  -- Redlock: the holder's proposal, taken when it is above both and at most 25 ms ahead of
  -- this server's clock, so that the quorum's nodes issue one token (lock/fencing.h).
  if proposal and #proposal <= 16 and string.match(proposal, '^%d+$') then
    local p = tonumber(proposal)
    if p > token and p <= now_us + 25000 then
      token = p
    end
  end
  redis.call('SET', key, string.format('%.0f', token), 'PX', ttl)
  return string.format('%.0f', token)
end
-- `pause` (redisgo_task(1), pause): while the pause key exists nothing is granted; the
-- waiter is answered as if the key were held by "\1pause:<until ms>:<by>:<reason>" for the
-- pause's TTL, so that it waits that long (or until `resume` wakes it). Asked only where a
-- grant would happen: a miss on a held key costs nothing more.
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
)lua";

/// Renew. KEYS: lease key, fence counter [, once_per claim]. ARGV: holder, ttl in ms,
/// token ("" = no repair), fence ttl in ms, claim ttl in ms ("" = no claim), claim start
/// (ms since the epoch, "" = none), "1" when this is the only node and the only slot ("" otherwise:
/// a semaphore's slots share one fence counter).
/// Compare-and-PEXPIRE: 1 if the key is ours and was extended; 0 if another holder's; 3 if a
/// key of another type (nothing changed: the lease is not ours there either, and a leader on
/// one node stops its child at once instead of at its deadline). A key that is gone from this node (deleted, evicted, the node
/// restarted empty, or never set: a waiter woken by a release can win a quorum while the
/// release has not yet reached this node), or that holds our own turn (a release there
/// handed it to us while the quorum's grant missed that node), is set again for this holder
/// with the ttl when a token is given, and the node's fence raised to at least that token: 2. With several
/// nodes that is an acquisition of this one node (SET NX) made while a quorum still holds
/// the lease, so it takes nothing from anyone; without it a leader left on a bare quorum
/// loses its lease to the next single node that fails. On the only node the restart
/// guard keeps newcomers off a restarted server until the holder has set its key again;
/// a fence counter there above our token proves that someone was granted the key after us
/// (a FLUSHALL or a DEL, not a restart: that loses the counter too): 0, lost, not set again.
/// With a claim that names this holder, the claim is kept for its ttl from now too: a run
/// longer than the claim's 2 x once_per must not let a host that waited for the lease
/// find the slot unclaimed (pcall: a claim key of another type is no claim of ours). A
/// claim that is gone (the node restarted empty) is written again for this run, as the
/// lease is: a host that fires later in the slot must find it.
inline const std::string kRenewSource = kFenceFunctions + R"lua(
local held = redis.pcall('GET', KEYS[1])
if type(held) == 'table' then
  if refusal(held) then
    return redis.error_reply(held.err)
  end
  return 3  -- a key of another type: something else wrote over our lease (not ours)
end
if held == '\1turn:' .. ARGV[1] then
  held = false  -- our own turn, on a node the quorum's grant missed: taken as the lease
end
local renewed
if held == ARGV[1] then
  renewed = redis.call('PEXPIRE', KEYS[1], ARGV[2])
elseif not held and ARGV[3] ~= '' then
  local fence = redis.pcall('GET', KEYS[2])
  local bad = bad_fence(fence)
  if ARGV[7] == '1' and not bad and (tonumber(fence) or 0) > tonumber(ARGV[3]) then
    return 0
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if not bad and (tonumber(fence) or 0) < tonumber(ARGV[3]) then
    redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  end
  renewed = 2
else
  return 0
end
if KEYS[3] and ARGV[5] ~= '' then
  if redis.pcall('HGET', KEYS[3], 'holder') == ARGV[1] then
    redis.call('PEXPIRE', KEYS[3], ARGV[5])
  elseif ARGV[3] ~= '' and ARGV[6] ~= '' and redis.call('EXISTS', KEYS[3]) == 0 then
    redis.call('HSET', KEYS[3], 'holder', ARGV[1], 'token', ARGV[3], 'start', ARGV[6])
    redis.call('PEXPIRE', KEYS[3], ARGV[5])
  end
end
return renewed
)lua";
inline const Script kRenew{kRenewSource};

/// Release without the line: only where a fair release was refused while a Cluster slot
/// migrates (lock/redlock_renew.cpp). KEYS: lease key. ARGV: holder, release channel. (A channel is not a key: listed
/// in KEYS it made Redis Cluster answer TRYAGAIN while the slot migrates, since the
/// "key" never exists on either side.)
/// Compare-and-DEL; on success PUBLISHes the holder id on the channel (wakes standbys,
/// docs/DESIGN.md, invariant 5; a waiter ignores its own id) and returns 1, or 2 when the PUBLISH was
/// refused (an ACL user without the channel: Redis 7's default for new users) — the lease
/// is released all the same, only nobody is woken. Not ours: 0, nothing changed, nothing
/// published.
inline const Script kRelease{R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  local published = redis.pcall('PUBLISH', ARGV[2], ARGV[1])
  if type(published) == 'table' and published.err then
    return 2
  end
  return 1
end
return 0
)lua"};

/// Undo a failed acquisition. KEYS: lease key. ARGV: holder.
/// Compare-and-DEL that publishes nothing: a partial acquisition was never a lease, and
/// waking the standbys for it is how a waiter ended up waking itself at 27,000 commands/s
/// (docs/DESIGN.md, invariant 7).
inline const Script kUndo{R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
)lua"};

/// Raise the fence (Redlock, lock/fencing.h). KEYS: lease (or slot) key, fence counter.
/// ARGV: holder, token (decimal), fence ttl in ms, "1" for a semaphore's slot.
/// Only while the key is ours: counter = max(counter, token), return 1. Not ours: 0,
/// nothing changed. A semaphore's slot where the counter is at the token already: 2,
/// nothing changed. This node issued us less, so it has since issued or been raised to the
/// token for another holder of a slot, who may hold the very same token (two nodes that
/// served two holders in opposite orders: attack round, issue 21): the caller gives this
/// acquisition up. Both numbers are below 2^53, where the double comparison is exact; the
/// token is stored as given.
inline const Script kRaiseFence{R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if current == nil then
  return redis.error_reply('fence counter ' .. KEYS[2] .. ' is not a number')
end
if current < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
elseif ARGV[4] == '1' then
  return 2
end
return 1
)lua"};

/// Inspect. KEYS: lease key, fence counter. No ARGV. Read-only, one consistent snapshot:
/// {exists 0/1, holder or "", pttl (as PTTL: -2 none, -1 no expiry), fence or "",
/// server uptime in s (-1: INFO refused), "" or the fence counter's type when it is not a
/// string}: with the key absent, the uptime tells whether the restart guard holds the node
/// closed. A fence counter of another type (a hash set by hand) is reported, not an error:
/// the node's lease is still read, and `status` can say what blocks acquisitions there.
inline const std::string kInspectSource = kUptimeFunction + kNotALeaseFunction + R"lua(
local holder, wrong = lease_value(KEYS[1])
if wrong then
  return wrong
end
local exists = 1
if not holder then
  exists = 0
  holder = ''
end
local up = uptime_s() or -1
local fence = redis.pcall('GET', KEYS[2])
local fence_type = ''
if type(fence) == 'table' then
  local t = redis.pcall('TYPE', KEYS[2])
  fence_type = type(t) == 'table' and t['ok'] or 'unknown'
  fence = ''
end
return {exists, holder, redis.call('PTTL', KEYS[1]), fence or '', up, fence_type}
)lua";
inline const Script kInspect{kInspectSource};

/// A control message (`handover`). No KEYS. ARGV: channel, message. Returns the number
/// of subscribers that received it (PUBLISH's reply).
inline const Script kPublish{R"lua(
return redis.call('PUBLISH', ARGV[1], ARGV[2])
)lua"};

/// The waiting line (docs/DESIGN.md "The waiting line", invariant 11), shared by the fair
/// scripts below. The line is a sorted set beside the key ("<base>:line", LeaseKeys::line):
/// member = holder id, score = ticket. A ticket is the server's TIME in µs when the waiter
/// first joined (or one more than the line's tail, should that clock have stepped back), so
/// a score also says since when; the waiter writes back the largest ticket that any node gave
/// it (ARGV ticket), and a node raises a member's score to it, never lowers it: under Redlock
/// every node orders the same waiters the same way, ties broken by holder id as ZSET does.
/// A waiter that is not in a node's line (dropped, or it lost its turn) is given a new ticket
/// there, at the tail.
/// A turn: the lease key holds "\1turn:<holder>" with a PX of the turn window. Nobody renews
/// it, so a head that does not come loses it when it expires; the head converts it into its
/// lease (kAcquireFair). A turn is only written where the restart guard lets the key be
/// given: by a release (the key was there: the server had not lost it) or by an acquire that
/// found the key free on a server past its guard. So taking a turn asks no guard. (A wake
/// from an acquire that ignored the guard let a standby take a restarted server's key from
/// under the holder that was about to set it again: caught by the restart guard's test.)
/// wake(): the first listener of the line, addressed on its own channel ("<base>:wake:<holder>").
/// PUBLISH answers how many clients got the message: 0 means nobody listens (the waiter died
/// or lost its connection), so that entry is dropped and the next one tried, up to 256 per
/// call (one PUBLISH each; the dead are removed in one ZREMRANGEBYRANK). The woken head is removed from the line (its turn is in the key) and the
/// next one told "next <window ms>", so that someone acts if the head never comes.
/// Returns 'empty' (nobody waits), 'self' (`me` heads the line: the caller takes the lease),
/// 'woke', holder (the key now holds its turn), 'refused' (PUBLISH refused: an ACL user
/// without the channel; the line is left as it was) or 'more' (only dead entries seen so far).
inline const std::string kLineFunctions = R"lua(
local TURN = '\1turn:'
-- A line key that is not a sorted set (set by hand): a clear error, as for the fence counter
-- (raised: callers that wrote something first catch it with pcall and undo).
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
-- A woken head that finds the key paused when it comes to take its turn: the turn goes (the
-- resume wakes the line's head for every free key) and the head goes back to the front of the
-- line, ahead of the waiters that were behind it (attack round, issue 19: it was sent to the
-- tail). Its ticket, written back later under Redlock, only raises it to where it was.
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
local function in_line(line, me, join_it, ticket, line_ttl)
  if join_it == '0' then
    -- fair = false: never in line, but told its length, so that it can say that it shares the
    -- key with a line (attack round, issue 19: neither side said so while they were mixed).
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
)lua";

/// Acquire with the waiting line (fair = true). KEYS: lease key, fence counter, line, pause.
/// ARGV: holder, ttl in ms, fence ttl in ms, restart guard in ms, ticket ("" none), join
/// ("1": this waiter listens on its wake channel and waits; "" it only looks; "0" fair = false:
/// it only looks, and is told the line's length), line ttl in
/// ms, turn window in ms, proposed token (several nodes; "" or absent: none).
/// The lease is granted (above) when the key is free and nobody waits, when
/// the key holds our turn, or when we head the line. Otherwise (held, another's turn, or
/// free with others ahead, whose head is then woken) the caller joins the line if it may:
/// {0, holder or "\1turn:<holder>", pttl, position (0: not in line), ticket or "", line
/// length (0: not read; only a join reads it)}. Guarded: {2, ms left, position, ticket,
/// length}. A miss of a waiter already in line costs four commands (EVALSHA, MGET, PTTL, ZRANK),
/// as a miss did before the line (the ticket's ZADD XX GT only until the node holds it): the storm
/// bounds count commands.
inline const std::string kAcquireFairSource = kFenceFunctions + kLineFunctions + R"lua(
local function main()
  local me = ARGV[1]
  -- The key and the fence counter in one MGET (they share the key's hash slot): a head taking its
  -- turn reads nothing else (issue 19's herd budget). MGET answers nil for a key of another type
  -- where GET fails: a nil lease is read again by lease_value when the SET NX below finds the key
  -- there, and a nil fence by GET where it is needed (an absent counter: the first acquisition).
  -- A user refused MGET (an older ACL recipe) reads them one by one.
  local got = redis.pcall('MGET', KEYS[1], KEYS[2])
  if type(got) ~= 'table' or got.err then
    got = {false, false}
    local v, wrong = lease_value(KEYS[1])
    if wrong then
      return wrong
    end
    got[1] = v
  end
  local held, fence = got[1], got[2]
  local noinfo, headed = false, false
  if held == TURN .. me then
    -- Our turn, but paused meanwhile: back at the front of the line (back_at_front).
    local marker, pause_ttl = paused(KEYS[4])
    if marker then
      local l = back_at_front(KEYS[3], KEYS[1], me, ARGV[6], ARGV[7]) or in_line(KEYS[3], me, ARGV[6], ARGV[5], ARGV[7])
      return {0, marker, pause_ttl, l[1], l[2], l[3]}
    end
  elseif held then
    local pttl = redis.call('PTTL', KEYS[1])
    local l = in_line(KEYS[3], me, ARGV[6], ARGV[5], ARGV[7])
    return {0, held, pttl, l[1], l[2], l[3]}
  else
    -- Free. SET first (a user refused SET learns it here, every time), then
    -- the guard: a free key is given to nobody, not even as a turn, while the restart guard
    -- holds it (a turn is taken without the guard). Then the line.
    if not redis.call('SET', KEYS[1], me, 'NX', 'PX', ARGV[2]) then
      -- MGET's nil was a key of another type: named, as GET's error would have been.
      local _, wrong = lease_value(KEYS[1])
      return wrong or redis.error_reply('lease key ' .. KEYS[1] .. ' changed during the script')
    end
    local left = guard_left(tonumber(ARGV[4]) or 0)
    if left > 0 then
      redis.call('DEL', KEYS[1])
      local l = in_line(KEYS[3], me, ARGV[6], ARGV[5], ARGV[7])
      return {2, left, l[1], l[2], l[3]}
    end
    noinfo = left < 0
    local marker, pause_ttl = paused(KEYS[4])
    if marker then
      redis.call('DEL', KEYS[1])
      local l = in_line(KEYS[3], me, ARGV[6], ARGV[5], ARGV[7])
      return {0, marker, pause_ttl, l[1], l[2], l[3]}
    end
    local ok, kind, woken = pcall(wake, KEYS[3], KEYS[1], ARGV[8], me)
    if not ok then
      redis.call('DEL', KEYS[1])
      return redis.error_reply(kind)
    end
    if kind ~= 'empty' and kind ~= 'self' then
      if kind ~= 'woke' then
        redis.call('DEL', KEYS[1])
      end
      local l = in_line(KEYS[3], me, ARGV[6], ARGV[5], ARGV[7])
      if kind == 'woke' then
        return {0, TURN .. woken, tonumber(ARGV[8]), l[1], l[2], l[3]}
      end
      return {0, '', -2, l[1], l[2], l[3]}
    end
    headed = kind == 'self'
    held = me
  end
  if held ~= me then
    redis.call('SET', KEYS[1], me, 'PX', ARGV[2])
  end
  if not fence then
    fence = redis.pcall('GET', KEYS[2])
  end
  if bad_fence(fence) then
    redis.call('DEL', KEYS[1])
    return fence_error(KEYS[2], fence)
  end
  if headed then
    redis.call('ZREM', KEYS[3], me)  -- a turn's waiter left the line when it was woken
  end
  if noinfo then
    return {1, issue(KEYS[2], fence, ARGV[3], ARGV[9]), '', 'noinfo'}
  end
  return {1, issue(KEYS[2], fence, ARGV[3], ARGV[9])}
end
return undoing(main, 1, 1, ARGV[1])
)lua";
inline const Script kAcquireFair{kAcquireFairSource};

/// A semaphore slot with the waiting line (limit > 1, fair = true). KEYS: fence counter,
/// line, then the slot keys in the order to try them, then the pause. ARGV as kAcquireFair. A slot that
/// holds our turn is taken first (no guard: see kLineFunctions); else a free slot when
/// nobody waits or we head the line; else as kAcquireFair: {0, holder of the slot that
/// frees first (or the woken head's turn), its pttl, position, ticket, length}. Costs: the slots
/// are read in one MGET, the fence only where a slot is to be granted, the slots' PTTLs only on
/// a miss (a taken turn reads none): issue 19's commands per job.
/// A slot key of another type (a hash written over it) is no lease: it is skipped, neither
/// granted nor fatal, so that the other slots keep serving (capacity limit - 1), and named:
/// a reply of this attempt then ends with one more element, {key, its type, ...} of the slots
/// found so (only those the attempt tried to take: a free slot's SET NX is what tells).
inline const std::string kAcquireSlotFairSource = kFenceFunctions + kLineFunctions + R"lua(
local bad = {}
local function main()
  local me = ARGV[1]
  local last = #KEYS - 1
  -- Every slot in one MGET (they share the key's hash slot); a user refused MGET (an older ACL
  -- recipe) reads them one by one. MGET answers nil for a key of another type, where GET
  -- fails: either way such a slot looks free, and the SET NX below tells it apart.
  local got = redis.pcall('MGET', unpack(KEYS, 3, last))
  if type(got) ~= 'table' or got.err then
    got = {}
    for i = 3, last do
      local v = redis.pcall('GET', KEYS[i])
      if type(v) == 'table' then
        if refusal(v) then
          return redis.error_reply(v.err)
        end
        v = false
      end
      got[i - 2] = v
    end
  end
  local mine = nil
  local values, frees = {}, {}
  for i = 3, last do
    local v = got[i - 2]
    values[i] = v
    if v == TURN .. me then
      mine = KEYS[i]
    elseif not v then
      frees[#frees + 1] = KEYS[i]
    end
  end
  local free, other = frees[1], frees[2]
  -- Nothing for us: in line, told of the held slot that frees first (its PTTL: only here, so
  -- that a turn taken or a slot granted reads none).
  local function miss()
    local first, best = 3, -1
    for i = 3, last do
      if values[i] then
        local ttl = redis.call('PTTL', KEYS[i])
        if ttl >= 0 and (best < 0 or ttl < best) then
          first, best = i, ttl
        end
      end
    end
    local l = in_line(KEYS[2], me, ARGV[6], ARGV[5], ARGV[7])
    return {0, values[first] or '', best, l[1], l[2], l[3]}
  end
  local slot = mine
  local left = 0
  local fence = nil
  if mine or free then
    -- Something to grant: the pause first, then the fence it would raise.
    local marker, pause_ttl = paused(KEYS[#KEYS])
    if marker then
      local l = mine and back_at_front(KEYS[2], mine, me, ARGV[6], ARGV[7]) or in_line(KEYS[2], me, ARGV[6], ARGV[5], ARGV[7])
      return {0, marker, pause_ttl, l[1], l[2], l[3]}
    end
    fence = redis.pcall('GET', KEYS[1])
    if bad_fence(fence) then
      return fence_error(KEYS[1], fence)
    end
  end
  if not slot and free then
    -- As kAcquireFair: SET first, then no turn either while the restart guard holds a free slot.
    -- A SET NX that fails found a key of another type (MGET's nil): named (bad), and the next
    -- free one is tried; with none left this is a miss, as if that slot were held.
    free = nil
    for j, k in ipairs(frees) do
      if redis.call('SET', k, me, 'NX', 'PX', ARGV[2]) then
        free, other = k, frees[j + 1]
        break
      end
      local t = redis.pcall('TYPE', k)
      bad[#bad + 1] = k
      bad[#bad + 1] = type(t) == 'table' and t.ok or 'unknown type'
    end
    if not free then
      return miss()
    end
    left = guard_left(tonumber(ARGV[4]) or 0)
    if left > 0 then
      redis.call('DEL', free)
      local l = in_line(KEYS[2], me, ARGV[6], ARGV[5], ARGV[7])
      return {2, left, l[1], l[2], l[3]}
    end
    local ok, kind, woken = pcall(wake, KEYS[2], free, ARGV[8], me)
    if not ok then
      redis.call('DEL', free)
      return redis.error_reply(kind)
    end
    if kind == 'self' then
      redis.call('ZREM', KEYS[2], me)  -- a turn's waiter left the line when it was woken
    end
    if kind == 'empty' or kind == 'self' then
      slot = free
    elseif kind == 'woke' then
      local l = in_line(KEYS[2], me, ARGV[6], ARGV[5], ARGV[7])
      return {0, TURN .. woken, tonumber(ARGV[8]), l[1], l[2], l[3]}
    else
      redis.call('DEL', free)
      local l = in_line(KEYS[2], me, ARGV[6], ARGV[5], ARGV[7])
      return {0, '', -1, l[1], l[2], l[3]}
    end
  end
  if not slot then
    return miss()
  end
  if mine then
    redis.call('SET', slot, me, 'PX', ARGV[2])
    other = other or free
  end
  -- Another slot is free (a turn that expired unused, a release that woke nobody): its turn goes
  -- to the line's head now, or it would stay out of service until the next release. Only where
  -- nothing is there (MGET's nil may be a key of another type; EXISTS through pcall, so that a
  -- user refused it does not fail the script after its SET) and where the restart guard lets a
  -- free key be given (the free path asked it already): after an empty restart that slot may be
  -- a holder's that has not renewed yet, whose child still runs.
  if other and redis.pcall('EXISTS', other) == 0 and (not mine or guard_left(tonumber(ARGV[4]) or 0) <= 0) then
    pcall(wake, KEYS[2], other, ARGV[8], me)
  end
  if left < 0 then
    return {1, issue(KEYS[1], fence, ARGV[3], ARGV[9]), slot, 'noinfo'}
  end
  return {1, issue(KEYS[1], fence, ARGV[3], ARGV[9]), slot}
end
local reply = undoing(main, 3, #KEYS - 1, ARGV[1])
if #bad > 0 and type(reply) == 'table' and not reply.err then
  reply[#reply + 1] = bad
end
return reply
)lua";
inline const Script kAcquireSlotFair{kAcquireSlotFairSource};

/// Release with the waiting line. KEYS: lease (or slot) key, line, fence counter. ARGV: holder,
/// turn window in ms, release channel. Compare-and-release: the freed key goes to the first
/// waiter that listens as its turn (kLineFunctions wake), else it is deleted and the release
/// channel published, for waiters that do not use the line (fair = false, or an older
/// version): {1 (2: a PUBLISH was refused, ACL; 3: the line is not a sorted set, so the key
/// was only deleted), how many such waiters heard it}. A key handed to the line's head as its
/// turn publishes nothing there: no waiter outside the line could take it, and the herd's
/// budget counts that PUBLISH (issue 19); they come at their own timers.
/// Not ours, nothing changed: 0 when the key is gone; {0, what it holds, the fence counter or
/// ""} when it holds another value (another holder's lease: ours was lost while held and
/// taken, so two children may have run at once; or a waiter's turn), read here, in the
/// same instant, so that the caller can name who; {0, "", "", type} when it holds a key of
/// another type (something else wrote over it).
inline const std::string kReleaseFairSource = kLineFunctions + R"lua(
local held = redis.pcall('GET', KEYS[1])
if type(held) == 'table' and held.err and string.find(held.err, 'WRONGTYPE', 1, true) then
  local t = redis.pcall('TYPE', KEYS[1])
  return {0, '', '', type(t) == 'table' and t.ok or 'other'}  -- left alone
end
if type(held) == 'table' and held.err then
  return held
end
if not held then
  return 0
end
if held ~= ARGV[1] then
  local fence = redis.pcall('GET', KEYS[3])
  return {0, held, type(fence) == 'string' and fence or ''}
end
-- A line that is not a sorted set (set by hand) must not keep the lease: released plainly.
local ok, kind = pcall(wake, KEYS[2], KEYS[1], ARGV[2], '')
if not ok then
  kind = 'broken'
end
local unfair, refused = 0, false
if kind ~= 'woke' then
  redis.call('DEL', KEYS[1])
  unfair = redis.pcall('PUBLISH', ARGV[3], ARGV[1])
  refused = type(unfair) ~= 'number'
  if refused then
    unfair = 0
  end
end
if kind == 'broken' then
  return {3, unfair}
end
if refused or kind == 'refused' then
  return {2, unfair}
end
return {1, unfair}
)lua";
inline const Script kReleaseFair{kReleaseFairSource};

/// Hands on a turn of ours that we will not take (a waiter that left the line: it gave up at
/// wait_timeout, or stopped), as kReleaseFair hands on a lease: to the next waiter that
/// listens, else the key is deleted and the release channel published. A plain DEL would
/// leave the key idle until the next waiter's "next" timer. KEYS: line, lease (or slot) key.
/// ARGV: holder, turn window in ms, release channel. Sent after we left the line (so wake()
/// cannot pick us) and only where the key showed our turn; it checks again here: 0 when the key
/// no longer holds it, 1 handed on, 2 deleted (nobody listens in line).
inline const std::string kPassTurnSource = kLineFunctions + R"lua(
if redis.pcall('GET', KEYS[2]) ~= TURN .. ARGV[1] then
  return 0
end
local ok, kind = pcall(wake, KEYS[1], KEYS[2], ARGV[2], '')
if ok and kind == 'woke' then
  return 1
end
redis.call('DEL', KEYS[2])
redis.pcall('PUBLISH', ARGV[3], ARGV[1])
return 2
)lua";
inline const Script kPassTurn{kPassTurnSource};

/// Read the line (for `status`, `handover`). KEYS: line. ARGV: how many entries at most, the
/// release channel. Read-only: {length, {holder, ticket, ...} from the head, subscribers of
/// the release channel (waiters outside the line: fair = false, or an older version), per
/// entry shown the subscribers of its wake channel (0: gone, killed without leaving; -1
/// unknown)}.
inline const Script kReadLine{R"lua(
local n = tonumber(ARGV[1]) or 100
local outside = redis.pcall('PUBSUB', 'NUMSUB', ARGV[2])
if type(outside) ~= 'table' or outside.err then
  outside = {'', -1}
end
local entries = redis.call('ZRANGE', KEYS[1], 0, n - 1, 'WITHSCORES')
local listening = {}
local prefix = string.sub(KEYS[1], 1, -5) .. 'wake:'
for i = 1, #entries, 2 do
  local subs = redis.pcall('PUBSUB', 'NUMSUB', prefix .. entries[i])
  listening[#listening + 1] = (type(subs) == 'table' and not subs.err) and subs[2] or -1
end
return {redis.call('ZCARD', KEYS[1]), entries, outside[2], listening}
)lua"};

/// Wakes the waiters a pause held back, as a release would: a "resume" message on the
/// release channel (waiters outside the line) and, for every free slot, the line's next
/// head, unless the restart guard (guard_ms, the daemons' expire; "0": off) still holds the
/// free keys back on this server (then the waiters come at their own timers). KEYS from 2:
/// line, then the lease key and a semaphore's other slot keys. Returns 1, or 0 when a
/// PUBLISH was refused (an ACL user without the channels: nobody was woken).
inline const std::string kWakeWaitersFunction = kGuardFunctions + kLineFunctions + R"lua(
local function wake_waiters(window, channel, guard_ms)
  local n = redis.pcall('PUBLISH', channel, 'resume')
  if type(n) ~= 'number' then
    return 0
  end
  if guard_left(tonumber(guard_ms) or 0) > 0 then
    return 1
  end
  for i = 3, #KEYS do
    if not redis.call('GET', KEYS[i]) then
      local ok, kind = pcall(wake, KEYS[2], KEYS[i], window, '')
      if ok and kind == 'refused' then
        return 0
      end
      if not ok or kind ~= 'woke' then
        break
      end
    end
  end
  return 1
end
)lua";

/// `pause`. KEYS: pause, line, the lease key and the other slot keys. ARGV: by, reason, since
/// (ms since the epoch), until (ms), ttl in ms, turn window in ms, release channel, restart
/// guard in ms. Replaces
/// any pause there; a pause that now ends sooner than the one it replaced wakes the waiters,
/// who slept until the old end, to read the new one. {1, woken 1/0 (0: not needed or refused)}.
inline const std::string kPauseSource = kWakeWaitersFunction + R"lua(
local old = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'by', ARGV[1], 'reason', ARGV[2], 'since', ARGV[3], 'until', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if old == -1 or old > tonumber(ARGV[5]) then
  return {1, wake_waiters(ARGV[6], ARGV[7], ARGV[8])}
end
return {1, 1}
)lua";
inline const Script kPause{kPauseSource};

/// `resume`. KEYS: pause, line, then the lease key and a semaphore's other slot keys. ARGV:
/// turn window in ms, release channel, restart guard in ms. Drops the pause and wakes the waiters it held back:
/// {1 if there was one else 0, 1 woken or 0 when the wake was refused (ACL)}.
inline const std::string kResumeSource = kWakeWaitersFunction + R"lua(
local was = redis.call('DEL', KEYS[1])
return {was, wake_waiters(ARGV[1], ARGV[2], ARGV[3])}
)lua";
inline const Script kResume{kResumeSource};

/// A pause's record (`status`). KEYS: pause. {pttl (-2: none), by, reason, since, until}.
inline const Script kReadPause{R"lua(
local p = redis.call('PTTL', KEYS[1])
if p == -2 then
  return {-2, '', '', '', ''}
end
local f = redis.pcall('HMGET', KEYS[1], 'by', 'reason', 'since', 'until')
if type(f) ~= 'table' or f.err then
  f = {}
end
return {p, f[1] or '', f[2] or '', f[3] or '', f[4] or ''}
)lua"};

/// Renewals refused (lock::LeaseBackend::probe_rights): which of the commands the renewals run
/// the ACL user may not, asked without the lease. KEYS: the lease key (only to route the call
/// to its slot, never touched: a user whose renewals were refused could acquire it). ARGV: the
/// probe key (of that slot, passed as an argument so that a user without it is still asked;
/// absent: every form below changes nothing), the note key, the note's head ("" = no note),
/// the note's ttl in ms, this holder, then the commands. Redis checks a command's right before
/// its keys', so a refused key still proves the command allowed. A refused command writes
/// the note (RefusalNote: the head, "+<command>", the error); none deletes a note of this
/// holder's. {command or "", error or ""}.
inline const Script kProbeRights{R"lua(
local probe = ARGV[1]
local forms = {
  GET = {'GET', probe},
  PEXPIRE = {'PEXPIRE', probe, '1'},
  SET = {'SET', probe, '', 'XX', 'PX', '1'},
  PTTL = {'PTTL', probe},
  EXISTS = {'EXISTS', probe},
}
local refused, why = '', ''
for i = 6, #ARGV do
  local form = forms[ARGV[i]]
  if form then
    local r = redis.pcall(unpack(form))
    if type(r) == 'table' and type(r.err) == 'string' and
       (string.find(r.err, "can't run", 1, true) or string.find(r.err, 'permissions to run', 1, true)) then
      refused, why = ARGV[i], r.err
      break
    end
  end
end
if refused ~= '' then
  if ARGV[3] ~= '' then
    redis.pcall('SET', ARGV[2], ARGV[3] .. '\n+' .. string.lower(refused) .. '\n' .. why, 'PX', ARGV[4])
  end
else
  local note = redis.pcall('GET', ARGV[2])
  if type(note) == 'string' and string.sub(note, 1, #ARGV[5] + 1) == ARGV[5] .. '\n' then
    redis.pcall('DEL', ARGV[2])
  end
end
return {refused, why}
)lua"};

/// Renewals refused: the note (RefusalNote) for `status`. KEYS: the lease key (routing only).
/// ARGV: the note key (an argument, read through pcall: a user who may not read it still gets
/// the rest of `status`). {note or "", its pttl, or an error text when it may not be read}.
inline const Script kReadRefusal{R"lua(
local note = redis.pcall('GET', ARGV[1])
if type(note) == 'table' then
  return {'', -2, tostring(note.err)}
end
if not note then
  return {'', -2, ''}
end
local ttl = redis.pcall('PTTL', ARGV[1])
return {note, type(ttl) == 'number' and ttl or -2, ''}
)lua"};

/// `check`: whether this user may run what the daemon's scripts run, on scratch keys of the
/// key's own namespace (nobody reads them; each lives at most 1 s and is deleted at once).
/// KEYS: scratch, scratch line. ARGV: "1" to try the line's commands (whatever `fair` says:
/// fair = false runs the line's scripts too), "1" to
/// try the hash commands of once_per's claims and witness. Every call through pcall: {"" , ""} when all ran, else {what was
/// refused, the error}.
inline const Script kCheckRights{R"lua(
local function try(what, ...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    error({what, r.err})
  end
  return r
end
local ok, refused = pcall(function()
  try('TIME', 'TIME')
  try('SET', 'SET', KEYS[1], 'check', 'NX', 'PX', '1000')
  try('GET', 'GET', KEYS[1])
  try('PEXPIRE', 'PEXPIRE', KEYS[1], '1000')
  try('PTTL', 'PTTL', KEYS[1])
  try('DEL', 'DEL', KEYS[1])
  if ARGV[2] == '1' then
    try('HSET', 'HSET', KEYS[1], 'holder', 'check')
    try('HGET', 'HGET', KEYS[1], 'holder')
    try('HMGET', 'HMGET', KEYS[1], 'holder', 'token')
    try('EXISTS', 'EXISTS', KEYS[1])
    try('DEL', 'DEL', KEYS[1])
  end
  if ARGV[3] and ARGV[3] ~= '' then
    try('PUBLISH', 'PUBLISH', ARGV[3], 'check')
  end
  if ARGV[1] == '1' then
    try('ZADD', 'ZADD', KEYS[2], '1', 'check')
    try('PEXPIRE', 'PEXPIRE', KEYS[2], '1000')
    try('ZRANK', 'ZRANK', KEYS[2], 'check')
    try('ZCARD', 'ZCARD', KEYS[2])
    try('ZRANGE', 'ZRANGE', KEYS[2], 0, 0)
    -- A head takes its place out of the line with ZREM (attack round, issue 19: a user without
    -- it joined, then could never take the lease, and check said ok).
    try('ZREM', 'ZREM', KEYS[2], 'check')
    try('ZADD', 'ZADD', KEYS[2], '1', 'check')
    try('ZREMRANGEBYRANK', 'ZREMRANGEBYRANK', KEYS[2], 0, 0)
    try('DEL', 'DEL', KEYS[2])
  end
end)
redis.pcall('DEL', KEYS[1], KEYS[2])
if ok then
  return {'', ''}
end
if type(refused) ~= 'table' then
  return {'the check script', tostring(refused)}
end
return refused
)lua"};

/// Slots held beyond a daemon's limit. KEYS: the slot keys limit..63. How many exist
/// (one EXISTS): above 0, a daemon of a larger `limit` holds the key too. -1 when the user
/// may not ask (an ACL without +exists or the slot keys): an optional look must not fail as
/// a refusal, which would hold the node back from the daemon's next attempt.
inline const Script kSlotsBeyond{R"lua(
local n = redis.pcall('EXISTS', unpack(KEYS))
if type(n) ~= 'number' then
  return -1
end
return n
)lua"};

/// One key's state for `list`. KEYS: lease key, fence counter, line, pause, then the slot
/// keys 1..63 (a semaphore's other slots). ARGV: the key's RefusalNote key (an argument, read
/// through pcall: a user who may not read it still lists the key). Read-only, one snapshot:
/// {holder or "", pttl, fence or "", line length (-1: not a sorted set), pause pttl (-2:
/// none), pause fields {by, reason, since ms, until ms}, {slot, holder, pttl, ...} of the
/// other slots that are held, the note or ""}.
inline const Script kListKey{R"lua(
local line = redis.pcall('ZCARD', KEYS[3])
if type(line) ~= 'number' then
  line = -1
end
local pause = redis.call('PTTL', KEYS[4])
local fields = {}
if pause ~= -2 then
  fields = redis.pcall('HMGET', KEYS[4], 'by', 'reason', 'since', 'until')
  if type(fields) ~= 'table' or fields.err then
    fields = {}
  end
end
local slots = {}
for i = 5, #KEYS do
  local h = redis.call('GET', KEYS[i])
  if h then
    slots[#slots + 1] = tostring(i - 4)
    slots[#slots + 1] = h
    slots[#slots + 1] = redis.call('PTTL', KEYS[i])
  end
end
local note = ARGV[1] and redis.pcall('GET', ARGV[1])
if type(note) ~= 'string' then
  note = ''
end
return {redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]) or '', line, pause,
        {fields[1] or '', fields[2] or '', fields[3] or '', fields[4] or ''}, slots, note}
)lua"};

/// Every script above.
inline const std::vector<const Script*> kLeaseScripts{&kRenew, &kRelease, &kUndo, &kRaiseFence, &kInspect,
                                                      &kClaim, &kFinishClaim, &kReadClaims, &kReadOnce,
                                                      &kAdopt, &kDropAdopt,
                                                      &kPublish, &kAcquireFair, &kAcquireSlotFair,
                                                      &kReleaseFair, &kPassTurn, &kReadLine, &kListKey, &kPause,
                                                      &kResume, &kReadPause, &kSlotsBeyond, &kCheckRights,
                                                      &kProbeRights, &kReadRefusal};

}  // namespace redisgo::lock
