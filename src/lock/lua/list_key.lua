--[[
  list_key: one key's state for `list`, read-only, one snapshot. The note key is an argument,
  read through pcall: a user who may not read it still lists the key.

  Reply (lock/replies_admin.h ListKeyReply), an array:
    [1] holder         string   the lease key's value, or ""
    [2] pttl_ms        integer  its PTTL
    [3] fence          string   the fence counter, or ""
    [4] line_length    integer  the line's length (-1: not a sorted set)
    [5] pause_pttl_ms  integer  the pause's PTTL (-2: none)
    [6] pause          array    {by, reason, since_ms, until_ms} ("" each when none)
    [7] slots          array    {slot, holder, pttl_ms, ...} of the other slots that are held
    [8] note           string   the RefusalNote, or ""
    [9] other_type     array    {slot, type, ...} of the other slots whose key is not a string
                                (something else wrote it: the daemons skip that slot)
  A lease key or a fence counter of another type fails the script (WRONGTYPE): no slot of
  the key can be judged without them.
]]
local lease_key = KEYS[1]             -- the lease key
local fence_key = KEYS[2]             -- the fence counter
local line_key = KEYS[3]              -- the waiting line
local pause_key = KEYS[4]             -- the pause
local slot_keys = {unpack(KEYS, 5)}   -- the slot keys 1..63 (a semaphore's other slots)
local note_key = ARGV[1]              -- the key's RefusalNote key (nil: none)

local line = redis.pcall('ZCARD', line_key)
if type(line) ~= 'number' then
  line = -1
end
local pause = redis.call('PTTL', pause_key)
local fields = {}
if pause ~= -2 then
  fields = redis.pcall('HMGET', pause_key, 'by', 'reason', 'since', 'until')
  if type(fields) ~= 'table' or fields.err then
    fields = {}
  end
end
local slots, others = {}, {}
for j, key in ipairs(slot_keys) do
  local h = redis.pcall('GET', key)
  if type(h) == 'table' and h.err and string.find(h.err, 'WRONGTYPE', 1, true) then
    others[#others + 1] = tostring(j)
    others[#others + 1] = redis.call('TYPE', key).ok
  elseif type(h) == 'table' and h.err then
    return redis.error_reply(h.err)  -- a refusal: as the plain call would have failed
  elseif h then
    slots[#slots + 1] = tostring(j)
    slots[#slots + 1] = h
    slots[#slots + 1] = redis.call('PTTL', key)
  end
end
local note = note_key and redis.pcall('GET', note_key)
if type(note) ~= 'string' then
  note = ''
end
return {redis.call('GET', lease_key) or '', redis.call('PTTL', lease_key), redis.call('GET', fence_key) or '', line, pause,
        {fields[1] or '', fields[2] or '', fields[3] or '', fields[4] or ''}, slots, note, others}
