--[[
  pass_turn: hands on a turn of ours that we will not take (a waiter that left the line: it
  gave up at wait_timeout, or stopped), as release_fair.lua hands on a lease: to the next
  waiter that listens, else the key is deleted and the release channel published. A plain DEL
  would leave the key idle until the next waiter's "next" timer. Sent after we left the line
  (so wake() cannot pick us) and only where the key showed our turn; it checks again here.

  Reply (lock/replies_line.h PassTurnReply), an integer, its `result`:
    0  kNotOurs: the key no longer holds our turn: nothing changed
    1  kHandedOn: handed on to the next waiter
    2  kPublished: deleted, the release channel published (nobody listens in line)
]]
local line_key = KEYS[1]   -- the waiting line
local lease_key = KEYS[2]  -- the lease (or slot) key
local holder = ARGV[1]     -- our holder id
local window = ARGV[2]     -- the turn window in ms
local channel = ARGV[3]    -- the release channel

-- @include lib/line.lua

if redis.pcall('GET', lease_key) ~= TURN .. holder then
  return 0
end
local ok, kind = pcall(wake, line_key, lease_key, window, '')
if ok and kind == 'woke' then
  return 1
end
redis.call('DEL', lease_key)
redis.pcall('PUBLISH', channel, holder)
return 2
