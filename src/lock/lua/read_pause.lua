--[[
  read_pause: a pause's record, read-only (`status`).

  Reply (lock/replies_line.h ReadPauseReply), an array:
    [1] pttl_ms   integer  the pause's PTTL (-2: none; then every field is "")
    [2] by        string   who paused
    [3] reason    string   why
    [4] since_ms  string   since, ms since the epoch
    [5] until_ms  string   until, ms since the epoch
]]
local pause_key = KEYS[1]  -- the pause

local p = redis.call('PTTL', pause_key)
if p == -2 then
  return {-2, '', '', '', ''}
end
local f = redis.pcall('HMGET', pause_key, 'by', 'reason', 'since', 'until')
if type(f) ~= 'table' or f.err then
  f = {}
end
return {p, f[1] or '', f[2] or '', f[3] or '', f[4] or ''}
