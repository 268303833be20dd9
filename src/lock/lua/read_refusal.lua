--[[
  read_refusal: renewals refused: the note (RefusalNote) for `status`. KEYS holds only the
  lease key, to route the call; it is not read. The note key is an argument, read through
  pcall: a user who may not read it still gets the rest of `status`.

  Reply (lock/replies_admin.h ReadRefusalReply), an array:
    [1] note     string   the note, or ""
    [2] pttl_ms  integer  its PTTL (-2: none)
    [3] error    string   "", or the error when it may not be read
]]
local note_key = ARGV[1]  -- the note key

local note = redis.pcall('GET', note_key)
if type(note) == 'table' then
  return {'', -2, tostring(note.err)}
end
if not note then
  return {'', -2, ''}
end
local ttl = redis.pcall('PTTL', note_key)
return {note, type(ttl) == 'number' and ttl or -2, ''}
