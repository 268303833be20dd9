--[[
  finish_claim: records how a claimed slot's run ended, or drops a claim that did not run.

  Reply (lock/replies_once.h FinishClaimReply), an integer `ours`:
    1  the claim was ours: recorded (or dropped)
    0  not ours: nothing changed
]]
local claim_key = KEYS[1]  -- the claim key
local holder = ARGV[1]     -- our holder id
local status = ARGV[2]     -- the exit status ("" = drop the claim)

if redis.call('HGET', claim_key, 'holder') ~= holder then
  return 0
end
if status == '' then
  redis.call('DEL', claim_key)
else
  redis.call('HSET', claim_key, 'status', status)
end
return 1
