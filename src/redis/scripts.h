#pragma once
/// The Lua scripts of the lease (SPEC.md invariants 3 and 4). Every ownership check
/// runs inside Redis, atomically with the write it guards: a holder never extends,
/// deletes or raises the fence of a lease that is not its own.
///
/// Numbers: Redis's Lua 5.1 has only doubles, and tostring() prints 14 significant
/// digits, so the ~1.7e15 of a microsecond timestamp would come out as "1.7953087939339e+15".
/// Tokens are therefore always formatted with string.format('%.0f', x), which is exact for
/// integers below 2^53 (9.0e15 µs is the year 2255). The acquire script refuses a counter
/// at or above 2^53 - 1 rather than hand out a token that could not increase.
///
/// The scripts are inline constexpr so each has one address: Connection caches its SHA.

#include "redis/connection.h"

namespace redisgo::redis {

/// Acquire. KEYS: lease key, fence counter. ARGV: holder, ttl in ms.
/// SET key holder NX PX ttl and, only if that succeeded, raise the fence counter to
/// max(counter + 1, server TIME in µs) and return {1, "<token>"}. The TIME floor keeps
/// tokens increasing when the server restarted without its data.
/// Not acquired: {0, "<current holder>" or "", pttl}, so a waiter learns how long the
/// current lease has left. There is no re-entrancy: a holder that acquires a key it
/// already holds gets 0 like anyone else (its lease is not silently extended, and no
/// token is issued that the resource could confuse with the running one).
inline constexpr Script kAcquire{R"lua(
local fence = redis.call('GET', KEYS[2])
if fence and (not string.match(fence, '^%d+$') or #fence > 16 or tonumber(fence) >= 9007199254740991) then
  return redis.error_reply('fence counter ' .. KEYS[2] .. ' is not an integer below 2^53-1')
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1])}
end
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local token = redis.call('INCR', KEYS[2])
if token < now_us then
  token = now_us
  redis.call('SET', KEYS[2], string.format('%.0f', token))
end
return {1, string.format('%.0f', token)}
)lua"};

/// Renew. KEYS: lease key. ARGV: holder, ttl in ms.
/// Compare-and-PEXPIRE: 1 if the key is ours and was extended, else 0 (nothing changed).
inline constexpr Script kRenew{R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
)lua"};

/// Release. KEYS: lease key, release channel. ARGV: holder.
/// Compare-and-DEL; on success PUBLISHes the holder id on the channel (wakes standbys,
/// SPEC invariant 5) and returns 1. Not ours: 0, nothing changed, nothing published.
inline constexpr Script kRelease{R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[2], ARGV[1])
  return 1
end
return 0
)lua"};

/// Raise the fence (Redlock, lock/fencing.h). KEYS: lease key, fence counter.
/// ARGV: holder, token (decimal). Only while the key is ours: counter = max(counter,
/// token), return 1. Not ours: 0, nothing changed. Both numbers are below 2^53, where
/// the double comparison is exact; the token is stored as given (no reformatting).
inline constexpr Script kRaiseFence{R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if current == nil then
  return redis.error_reply('fence counter ' .. KEYS[2] .. ' is not a number')
end
if current < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
return 1
)lua"};

/// Inspect. KEYS: lease key, fence counter. No ARGV. Read-only, one consistent snapshot:
/// {exists 0/1, holder or "", pttl (as PTTL: -2 none, -1 no expiry), fence or ""}.
inline constexpr Script kInspect{R"lua(
local holder = redis.call('GET', KEYS[1])
local exists = 1
if not holder then
  exists = 0
  holder = ''
end
return {exists, holder, redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]) or ''}
)lua"};

}  // namespace redisgo::redis
