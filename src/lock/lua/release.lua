--[[
  release: compare-and-DEL of our lease without the waiting line; on success PUBLISHes our
  holder id on the release channel (wakes the standbys, docs/DESIGN.md invariant 5; a waiter
  ignores its own id). Used only where a fair release was refused while a Cluster slot
  migrates (lock/redlock_renew.cpp). The channel is an argument, not a key: listed in KEYS it
  made Redis Cluster answer TRYAGAIN while the slot migrates, since the "key" never exists on
  either side.

  Reply (lock/replies.h ReleaseReply), an integer:
    1  `released`, and `published`
    2  `released`, but not `published`: the PUBLISH was refused (an ACL user without the
       channel: Redis 7's default for new users): nobody was woken
    0  not ours: nothing changed, nothing published
]]
local lease_key = KEYS[1]  -- the lease key
local lease = ARGV[1]      -- our lease id (lib/lease_id.lua)
local channel = ARGV[2]    -- the release channel

-- @include lib/lease_id.lua

if redis.call('GET', lease_key) == lease then
  redis.call('DEL', lease_key)
  local published = redis.pcall('PUBLISH', channel, holder_of(lease))
  if type(published) == 'table' and published.err then
    return 2
  end
  return 1
end
return 0
