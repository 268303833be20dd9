--[[
  undo: undoes a failed acquisition: compare-and-DEL of this attempt's lease id that publishes
  nothing. A partial acquisition was never a lease, and waking the standbys for it is how a
  waiter ended up waking itself in a loop (docs/DESIGN.md, invariant 7). With `earlier`, it
  deletes instead a key that an earlier attempt of ours left (its undo or release did not
  arrive), and only an earlier one's: sent late itself, it must not delete a later attempt's
  key (lib/lease_id.lua).

  Reply (lock/replies.h UndoReply), an integer `ours`:
    1  the key was ours and is deleted
    0  not ours: nothing changed
]]
local lease_key = KEYS[1]  -- the lease (or slot) key
local lease = ARGV[1]      -- our lease id (lib/lease_id.lua)
local earlier = ARGV[2]    -- "1": not this attempt's key but a leftover of an earlier one

-- @include lib/lease_id.lua

local held = redis.call('GET', lease_key)
if not held then
  return 0
end
if earlier == '1' then
  -- Only an attempt before ours: sent late, this must not delete a later attempt's key.
  local h, n = attempt_of(held)
  local mine, m = attempt_of(lease)
  if not h or h ~= mine or n >= m then
    return 0
  end
elseif held ~= lease then
  return 0
end
redis.call('DEL', lease_key)
return 1
