--[[
  undo: undoes a failed acquisition: compare-and-DEL that publishes nothing. A partial
  acquisition was never a lease, and waking the standbys for it is how a waiter ended up
  waking itself in a loop (docs/DESIGN.md, invariant 7).

  Reply (lock/replies.h UndoReply), an integer `ours`:
    1  the key was ours and is deleted
    0  not ours: nothing changed
]]
local lease_key = KEYS[1]  -- the lease (or slot) key
local holder = ARGV[1]     -- our holder id

if redis.call('GET', lease_key) == holder then
  redis.call('DEL', lease_key)
  return 1
end
return 0
