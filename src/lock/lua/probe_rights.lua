--[[
  probe_rights: which of the commands the renewals run the ACL user may not, asked without
  the lease (lock::LeaseBackend::probe_rights: renewals were refused). KEYS holds only the
  lease key, to route the call to its slot; it is never touched (a user whose renewals were
  refused could acquire it). The probe key, of that slot, is an argument so that a user
  without it is still asked, and absent: every form below changes nothing. Redis checks a
  command's right before its keys', so a refused key still proves the command allowed. A
  refused command writes the note (RefusalNote: the head, "+<command>", the error); none
  deletes a note of this holder's.

  Reply (lock/replies_admin.h ProbeRightsReply), an array:
    [1] command  string  the first command refused, or ""
    [2] error    string  its error, or ""
]]
local probe = ARGV[1]               -- the probe key, of the lease key's slot (absent: see forms)
local note_key = ARGV[2]            -- the note key
local head = ARGV[3]                -- the note's head ("" = no note)
local note_ttl = ARGV[4]            -- the note's ttl in ms
local holder = ARGV[5]              -- our holder id
local commands = {unpack(ARGV, 6)}  -- the commands to try, upper case

local forms = {
  GET = {'GET', probe},
  PEXPIRE = {'PEXPIRE', probe, '1'},
  SET = {'SET', probe, '', 'XX', 'PX', '1'},
  PTTL = {'PTTL', probe},
  EXISTS = {'EXISTS', probe},
}
local refused, why = '', ''
for _, command in ipairs(commands) do
  local form = forms[command]
  if form then
    local r = redis.pcall(unpack(form))
    if type(r) == 'table' and type(r.err) == 'string' and
       (string.find(r.err, "can't run", 1, true) or string.find(r.err, 'permissions to run', 1, true)) then
      refused, why = command, r.err
      break
    end
  end
end
if refused ~= '' then
  if head ~= '' then
    redis.pcall('SET', note_key, head .. '\n+' .. string.lower(refused) .. '\n' .. why, 'PX', note_ttl)
  end
else
  local note = redis.pcall('GET', note_key)
  if type(note) == 'string' and string.sub(note, 1, #holder + 1) == holder .. '\n' then
    redis.pcall('DEL', note_key)
  end
end
return {refused, why}
