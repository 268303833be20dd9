--[[
  read_once: a node's side of once_per's rule and its claims, read-only (the daemon before its
  claim, `check`, `adopt`, `status`). Another type at a claim key reads as a claim, as the
  claim script takes it.

  Reply (lock/replies_once.h ReadOnceReply), an array:
    [1] state   array  the node's state (lib/once.lua once_state)
    [i] claims  array  per claim key from [2]: {holder, token, start_ms, status} (holder "" =
                       none)
]]
local witness_key = KEYS[1]            -- the witness
local claim_keys = {unpack(KEYS, 2)}   -- the claim keys
local replicas = ARGV[1]               -- "1": count the replicas

-- @include lib/once.lua

local out = {once_state(witness_key, replicas == '1')}
for _, key in ipairs(claim_keys) do
  out[#out + 1] = claim_of(key) or {'', '', '', ''}
end
return out
