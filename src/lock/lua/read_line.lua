--[[
  read_line: the waiting line, read-only (`status`, `handover`, `check`).

  Reply (lock/replies_line.h ReadLineReply), an array:
    [1] length     integer  the line's length
    [2] entries    array    {holder, ticket, ...} from the head, at most `limit` entries (the
                            ticket is the member's score)
    [3] outside    integer  subscribers of the release channel (waiters outside the line:
                            fair = false, or an older version); -1 unknown
    [4] listeners  array    per entry shown, the subscribers of its wake channel (0: gone,
                            killed without leaving; -1 unknown)
]]
local line_key = KEYS[1]  -- the waiting line
local limit = ARGV[1]     -- how many entries at most
local channel = ARGV[2]   -- the release channel

local n = tonumber(limit) or 100
local outside = redis.pcall('PUBSUB', 'NUMSUB', channel)
if type(outside) ~= 'table' or outside.err then
  outside = {'', -1}
end
local entries = redis.call('ZRANGE', line_key, 0, n - 1, 'WITHSCORES')
local listening = {}
local prefix = string.sub(line_key, 1, -5) .. 'wake:'
for i = 1, #entries, 2 do
  local subs = redis.pcall('PUBSUB', 'NUMSUB', prefix .. entries[i])
  listening[#listening + 1] = (type(subs) == 'table' and not subs.err) and subs[2] or -1
end
return {redis.call('ZCARD', line_key), entries, outside[2], listening}
