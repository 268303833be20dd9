-- refusal(r): r is an error reply that refused a command or key to this ACL user (as opposed
-- to a WRONGTYPE or any other error of the data).
local function refusal(r)
  return type(r) == 'table' and type(r.err) == 'string' and
         (string.find(r.err, "can't", 1, true) or string.find(r.err, 'NOPERM', 1, true) or
          string.find(r.err, 'ACL failure', 1, true)) ~= nil
end
-- lease_value(key): the lease key's value (false: absent), or nil and an error reply naming
-- the key and its type when it holds another type (written by something else: a hash, a
-- list), instead of the raw WRONGTYPE of a GET in the middle of a script.
local function lease_value(key)
  local v = redis.pcall('GET', key)
  if type(v) ~= 'table' then
    return v
  end
  if refusal(v) then
    return nil, redis.error_reply(v.err)
  end
  local t = redis.pcall('TYPE', key)
  local name = type(t) == 'table' and t.ok or 'other'
  return nil, redis.error_reply('lease key ' .. key .. ' holds a ' .. name .. ', not a lease (something else wrote it): delete it or choose another key')
end
