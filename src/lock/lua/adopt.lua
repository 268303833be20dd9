--[[
  adopt: `adopt`: the operator declares a slot unclaimed (a first deployment: servers that
  never saw the key look exactly like servers that restarted empty). With no claim there, the
  witness is raised to the slot and the record written (adopted = slot, adopted_ms = TIME,
  adopted_by, adopts + 1).

  Reply (lock/replies_once.h AdoptReply), an array, by its first element `kind`:
    taken:   [1] 0
             [2] holder, [3] token, [4] start_ms, [5] status   strings: a claim is there; nothing
                                                                written
    adopted: [1] 1
             [2] adopted_ms  integer  this server's TIME in ms
    or an error reply naming the witness and its type when it holds another type (nothing
    written)
]]
local claim_key = KEYS[1]    -- the claim key
local witness_key = KEYS[2]  -- the witness
local slot_s = ARGV[1]       -- the slot, s since the epoch
local by = ARGV[2]           -- who adopts
local witness_ttl = ARGV[3]  -- the witness's ttl in ms

-- @include lib/once.lua

local c = claim_of(claim_key)
if c then
  return {0, c[1], c[2], c[3], c[4]}
end
local s = once_state(witness_key, false)
local durable = '0'
if s[3] == 1 and waitaof(s[4]) then
  durable = '1'
end
if not raise_witness(witness_key, tonumber(slot_s), durable, witness_ttl) then
  return redis.error_reply('once_per witness ' .. witness_key .. ' holds a ' .. redis.call('TYPE', witness_key).ok ..
                           ', not a witness (something else wrote it): delete it (redis-cli DEL ' .. witness_key .. ')')
end
local adopts = tonumber(redis.call('HGET', witness_key, 'adopts')) or 0
redis.call('HSET', witness_key, 'adopted', slot_s, 'adopted_ms', string.format('%.0f', s[2]), 'adopted_by', by,
           'adopts', tostring(adopts + 1))
return {1, s[2]}
