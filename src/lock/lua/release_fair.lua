--[[
  release_fair: releases our lease (or slot) with the waiting line: compare-and-release. The
  freed key goes to the first waiter that listens, as its turn (lib/line.lua wake), else it is
  deleted and the release channel published, for waiters that do not use the line (fair =
  false, or an older version). A key handed to the line's head as its turn publishes nothing
  there: no waiter outside the line could take it, and the herd's budget counts that PUBLISH;
  they come at their own timers.

  Reply (lock/replies.h ReleaseFairReply):
    released, an array:
      [1] released          integer  1 released; 2 released but not `published` (a PUBLISH
                                     refused: ACL); 3 `line_broken`: the line is not a sorted
                                     set, so the key was only deleted
      [2] unfair_listeners  integer  how many waiters outside the line heard the release
    not ours, nothing changed:
      0, an integer: the key is gone
      an array when the key holds another value (another holder's lease: ours was lost while
      held and taken, so two children may have run at once; or a waiter's turn), read here,
      in the same instant, so that the caller can name who:
        [1] 0
        [2] holder      string  what the key holds
        [3] fence       string  the fence counter, or ""
      an array when the key holds another type (something else wrote over it; left alone):
        [1] 0, [2] "", [3] ""
        [4] other_type  string  its type
    or an error reply of a refused command
]]
local lease_key = KEYS[1]  -- the lease (or slot) key
local line_key = KEYS[2]   -- the waiting line
local fence_key = KEYS[3]  -- the fence counter
local lease = ARGV[1]      -- our lease id (lib/lease_id.lua)
local window = ARGV[2]     -- the turn window in ms
local channel = ARGV[3]    -- the release channel

-- @include lib/line.lua
-- @include lib/lease_id.lua

local held = redis.pcall('GET', lease_key)
if type(held) == 'table' and held.err and string.find(held.err, 'WRONGTYPE', 1, true) then
  local t = redis.pcall('TYPE', lease_key)
  return {0, '', '', type(t) == 'table' and t.ok or 'other'}  -- left alone
end
if type(held) == 'table' and held.err then
  return held
end
if not held then
  return 0
end
if held ~= lease then
  local fence = redis.pcall('GET', fence_key)
  return {0, held, type(fence) == 'string' and fence or ''}
end
-- A line that is not a sorted set (set by hand) must not keep the lease: released plainly.
local ok, kind = pcall(wake, line_key, lease_key, window, '')
if not ok then
  kind = 'broken'
end
local unfair, refused = 0, false
if kind ~= 'woke' then
  redis.call('DEL', lease_key)
  unfair = redis.pcall('PUBLISH', channel, holder_of(lease))
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
