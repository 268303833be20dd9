-- A lease key holds the lease id of the attempt that set it, "<holder id>#<attempt>" (the
-- attempt numbered by the holder's process, lock/lease.h LeaseOptions::lease_id): a release or
-- an undo that arrives late, after the same holder has taken the key again, compares its own
-- attempt's id and deletes nothing (docs/DESIGN.md, invariant 3). The waiting line, the turns,
-- the claims and the release messages name the holder id.
-- holder_of(lease): the holder id of a lease id (a value without "#<attempt>", an older
-- version's, is its own holder id).
local function holder_of(lease)
  return string.match(lease, '^(.*)#%d+$') or lease
end
-- attempt_of(lease): the holder id and the attempt number of a lease id, or nil.
local function attempt_of(lease)
  local h, n = string.match(lease, '^(.*)#(%d+)$')
  return h, tonumber(n)
end
