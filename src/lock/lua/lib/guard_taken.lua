-- @include lib/guard.lua
-- @include lib/line.lua
-- guard_taken(key, guard_ms, line, me, join_it, ticket, line_ttl): the restart guard on a free
-- key that the acquire scripts have just SET for `me` (SET first, so that a user refused SET
-- learns it every time). While the guard holds the server closed the key is given to nobody:
-- the SET is undone, and the guarded reply {2, ms left, position, ticket, line length} (in
-- line if we may, as in_line) is returned, with what is left. Otherwise nil, and guard_left's
-- answer: 0 open, -1 INFO refused (the grant goes ahead and says so).
local function guard_taken(key, guard_ms, line, me, join_it, ticket, line_ttl)
  local left = guard_left(tonumber(guard_ms) or 0)
  if left > 0 then
    redis.call('DEL', key)
    local l = in_line(line, me, join_it, ticket, line_ttl)
    return {2, left, l[1], l[2], l[3]}, left
  end
  return nil, left
end
