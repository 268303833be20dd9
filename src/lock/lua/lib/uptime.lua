-- The server's uptime in whole seconds from `INFO server`, or nil when INFO was refused or
-- said none. Through pcall: an ACL user without +info must not fail the script as refused
-- credentials.
local function uptime_s()
  local info = redis.pcall('INFO', 'server')
  return type(info) == 'string' and tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or nil
end
