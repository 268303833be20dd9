--[[
  read_claims: once_per claims, read-only (`status`, `list`).

  Reply (lock/replies_once.h ReadClaimsReply), an array, per claim key:
    [i] claims  array  {holder, token, start_ms, status} (each "" when absent; holder "" = no
                       claim)
]]
local claim_keys = KEYS  -- the claim keys

local out = {}
for i, key in ipairs(claim_keys) do
  local c = redis.call('HMGET', key, 'holder', 'token', 'start', 'status')
  out[i] = {c[1] or '', c[2] or '', c[3] or '', c[4] or ''}
end
return out
