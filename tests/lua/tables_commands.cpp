// The commands the daemon and `check` send directly (not through a script), and the error texts
// they can meet: the simulated node must answer them as redis-server does.

#include "lua/tables.h"

namespace redisgo::luatable {
namespace tables_commands {

const std::string kNoPermZrem = "NOPERM this user has no permissions to run the 'zrem' command";

std::vector<Row> command_rows() {
  return {
      {.name = "SET NX PX on a free key", .argv = {"SET", "k", "A", "NX", "PX", "5000"}, .reply = St("OK"),
       .after = {s("k", S("A"), ttl(5000))}},
      {.name = "SET NX on a held key: nil", .given = {str("k", "B")}, .argv = {"SET", "k", "A", "NX", "PX", "5000"},
       .reply = Nil()},
      {.name = "SET XX on a free key: nil", .argv = {"SET", "k", "A", "XX"}, .reply = Nil()},
      {.name = "SET over a hash: replaced", .given = {hash("k", {{"f", "v"}})}, .argv = {"SET", "k", "A"},
       .reply = St("OK"), .after = {s("k", S("A"))}},
      {.name = "SET PX 0: an error", .argv = {"SET", "k", "A", "PX", "0"},
       .reply = Err("ERR invalid expire time in 'set' command")},
      {.name = "SET PX x: an error", .argv = {"SET", "k", "A", "PX", "x"},
       .reply = Err("ERR value is not an integer or out of range")},
      {.name = "SET NX XX: syntax", .argv = {"SET", "k", "A", "NX", "XX"}, .reply = Err("ERR syntax error")},
      {.name = "GET a hash: WRONGTYPE", .given = {hash("k", {{"f", "v"}})}, .argv = {"GET", "k"}, .reply = Err(kWrongType)},
      {.name = "MGET: nil for a key of another type", .given = {str("a", "1"), list("b")},
       .argv = {"MGET", "a", "b", "c"}, .reply = A({S("1"), Nil(), Nil()})},
      {.name = "DEL and EXISTS count keys", .given = {str("a", "1"), hash("b", {{"f", "v"}})},
       .argv = {"EXISTS", "a", "b", "c", "a"}, .reply = I(3)},
      {.name = "TYPE of each", .given = {zset("z", {{"m", "1"}})}, .argv = {"TYPE", "z"}, .reply = St("zset")},
      {.name = "PEXPIRE 0 deletes", .given = {str("k", "v")}, .argv = {"PEXPIRE", "k", "0"}, .reply = I(1),
       .after = {gone("k")}},
      {.name = "PEXPIRE on nothing: 0", .argv = {"PEXPIRE", "k", "1000"}, .reply = I(0)},
      {.name = "PTTL without expiry: -1", .given = {str("k", "v")}, .argv = {"PTTL", "k"}, .reply = I(-1)},
      {.name = "PTTL of nothing: -2", .argv = {"PTTL", "k"}, .reply = I(-2)},
      {.name = "TTL rounds", .given = {str("k", "v", 5000)}, .argv = {"TTL", "k"}, .reply = In(4, 5)},
      {.name = "HSET then HMGET with a missing field", .given = {hash("h", {{"a", "1"}})},
       .argv = {"HMGET", "h", "a", "b"}, .reply = A({S("1"), Nil()})},
      {.name = "HGET a string: WRONGTYPE", .given = {str("h", "x")}, .argv = {"HGET", "h", "a"}, .reply = Err(kWrongType)},
      {.name = "HSET odd arguments", .argv = {"HSET", "h", "a", "1", "b"},
       .reply = Err("ERR wrong number of arguments for 'hset' command")},
      {.name = "ZADD XX GT raises only", .given = {zset("l", {{"a", "100"}})},
       .argv = {"ZADD", "l", "XX", "GT", "50", "a"}, .reply = I(0)},
      {.name = "ZADD NX GT: incompatible", .argv = {"ZADD", "l", "NX", "GT", "1", "a"},
       .reply = Err("ERR GT, LT, and/or NX options at the same time are not compatible")},
      {.name = "ZADD a bad score", .argv = {"ZADD", "l", "x", "a"}, .reply = Err("ERR value is not a valid float")},
      {.name = "ZRANGE WITHSCORES: big integers stay exact", .given = {zset("l", {{"a", "1767225600250000"}, {"b", "1.5"}})},
       .argv = {"ZRANGE", "l", "0", "-1", "WITHSCORES"}, .reply = A({S("b"), S("1.5"), S("a"), S("1767225600250000")})},
      {.name = "ZRANK of a stranger: nil", .given = {zset("l", {{"a", "1"}})}, .argv = {"ZRANK", "l", "b"},
       .reply = Nil()},
      {.name = "ZREMRANGEBYRANK all: the key goes", .given = {zset("l", {{"a", "1"}, {"b", "2"}})},
       .argv = {"ZREMRANGEBYRANK", "l", "0", "-1"}, .reply = I(2), .after = {gone("l")}},
      {.name = "ZCARD a string: WRONGTYPE", .given = {str("l", "x")}, .argv = {"ZCARD", "l"}, .reply = Err(kWrongType)},
      {.name = "NOPERM, direct", .acl = {{"zrem"}}, .argv = {"ZREM", "l", "a"}, .reply = Err(kNoPermZrem)},
      {.name = "NOPERM for a subcommand", .acl = {{"pubsub|numsub"}}, .argv = {"PUBSUB", "NUMSUB", "c"},
       .reply = Err("NOPERM this user has no permissions to run the 'pubsub|numsub' command")},
      {.name = "NOPERM for a channel", .acl = {{}, false}, .argv = {"PUBLISH", "c", "m"},
       .reply = Err("NOPERM this user has no permissions to access one of the channels used as arguments")},
      {.name = "PUBLISH counts subscribers", .listeners = {"c", "c"}, .argv = {"PUBLISH", "c", "m"}, .reply = I(2),
       .heard = {{"c", {"m"}}}},
      {.name = "PUBSUB NUMSUB", .listeners = {"c"}, .argv = {"PUBSUB", "NUMSUB", "c", "d"},
       .reply = A({S("c"), I(1), S("d"), I(0)})},
      {.name = "EVALSHA of an unknown script: NOSCRIPT", .argv = {"EVALSHA", "0123456789abcdef0123456789abcdef01234567", "0"},
       .reply = Err("NOSCRIPT No matching script. Please use EVAL.")},
      {.name = "SCRIPT LOAD: the SHA-1", .argv = {"SCRIPT", "LOAD", "return 1"},
       .reply = S("e0e1f9fabfc9d4800c877a703b823ac0578ff8db")},
      {.name = "EVAL with too many keys", .argv = {"EVAL", "return 1", "2", "k"},
       .reply = Err("ERR Number of keys can't be greater than number of args")},
      {.name = "a script's compile error", .argv = {"EVAL", "return +", "0"},
       .reply = ErrStarts("ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'")},
      {.name = "TIME: seconds and microseconds", .argv = {"TIME"}, .reply = A({Any(), Any()})},
      {.name = "CONFIG GET maxmemory-policy", .argv = {"CONFIG", "GET", "maxmemory-policy"},
       .reply = A({S("maxmemory-policy"), S("noeviction")})},
      {.name = "ROLE: a master without replicas", .argv = {"ROLE"}, .reply = A({S("master"), I(0), A({})})},
      {.name = "WAIT with no replicas asked: 0", .argv = {"WAIT", "0", "0"}, .reply = I(0)},
      {.name = "an unknown command", .argv = {"NOPE", "a"},
       .reply = Err("ERR unknown command 'NOPE', with args beginning with: 'a' ")},
      {.name = "an unknown subcommand", .argv = {"CONFIG", "NOPE"},
       .reply = Err("ERR unknown subcommand 'NOPE'. Try CONFIG HELP.")},
      {.name = "wrong arity", .argv = {"GET"}, .reply = Err("ERR wrong number of arguments for 'get' command")},
      {.name = "AUTH as an unknown user", .argv = {"AUTH", "nobody", "pw"},
       .reply = Err("WRONGPASS invalid username-password pair or user is disabled.")},
      {.name = "SCAN with MATCH", .given = {str("k:a", "1"), str("x", "2")}, .argv = {"SCAN", "0", "MATCH", "k:*"},
       .reply = A({S("0"), A({S("k:a")})})},
  };
}

}  // namespace tables_commands

Table commands_table() { return {"commands", "", tables_commands::command_rows()}; }

}  // namespace redisgo::luatable
