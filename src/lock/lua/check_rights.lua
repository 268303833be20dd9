--[[
  check_rights: `check`: whether this user may run what the daemon's scripts run, on scratch
  keys of the key's own namespace (nobody reads them; each lives at most 1 s and is deleted at
  once). Every call through pcall.

  Reply (lock/replies_admin.h CheckRightsReply), an array:
    [1] command  string  what was refused, or "" when all ran ("the check script" when the
                         script itself failed)
    [2] error    string  the error, or ""
]]
local scratch = KEYS[1]       -- a scratch key
local scratch_line = KEYS[2]  -- a scratch line
local line = ARGV[1]          -- "1": try the line's commands (fair = false runs them too)
local hashes = ARGV[2]        -- "1": try the hash commands of once_per's claims and witness
local channel = ARGV[3]       -- a channel to try PUBLISH on ("" or nil: none)

local function try(what, ...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    error({what, r.err})
  end
  return r
end
local ok, refused = pcall(function()
  try('TIME', 'TIME')
  try('SET', 'SET', scratch, 'check', 'NX', 'PX', '1000')
  try('GET', 'GET', scratch)
  try('PEXPIRE', 'PEXPIRE', scratch, '1000')
  try('PTTL', 'PTTL', scratch)
  try('DEL', 'DEL', scratch)
  if hashes == '1' then
    try('HSET', 'HSET', scratch, 'holder', 'check')
    try('HGET', 'HGET', scratch, 'holder')
    try('HMGET', 'HMGET', scratch, 'holder', 'token')
    try('EXISTS', 'EXISTS', scratch)
    try('DEL', 'DEL', scratch)
  end
  if channel and channel ~= '' then
    try('PUBLISH', 'PUBLISH', channel, 'check')
  end
  if line == '1' then
    try('ZADD', 'ZADD', scratch_line, '1', 'check')
    try('PEXPIRE', 'PEXPIRE', scratch_line, '1000')
    try('ZRANK', 'ZRANK', scratch_line, 'check')
    try('ZCARD', 'ZCARD', scratch_line)
    try('ZRANGE', 'ZRANGE', scratch_line, 0, 0)
    -- A head takes its place out of the line with ZREM: a user without it would join, then
    -- never take the lease.
    try('ZREM', 'ZREM', scratch_line, 'check')
    try('ZADD', 'ZADD', scratch_line, '1', 'check')
    try('ZREMRANGEBYRANK', 'ZREMRANGEBYRANK', scratch_line, 0, 0)
    try('DEL', 'DEL', scratch_line)
  end
end)
redis.pcall('DEL', scratch, scratch_line)
if ok then
  return {'', ''}
end
if type(refused) ~= 'table' then
  return {'the check script', tostring(refused)}
end
return refused
