// kAcquireFair: the lease key with the waiting line (lock/scripts.h).

#include "lock/scripts.h"
#include "lua/tables.h"

namespace redisgo::luatable {
namespace tables_acquire {

const std::vector<std::string> kKeys{kKey, kFence, kLine, kPause};

/// ARGV: holder, ttl 10 s, fence ttl 60 s, guard, ticket, join, line ttl 30 s, turn window 2 s, proposal.
std::vector<std::string> args(std::string guard = "0", std::string ticket = "", std::string join = "1",
                              std::string proposal = "", std::string holder = "A") {
  return {holder, "10000", "60000", guard, ticket, join, "30000", "2000", proposal};
}

const std::string kPaused = "\1pause:123:ops:deploy";
Key pause_key() { return hash(kPause, {{"by", "ops"}, {"reason", "deploy"}, {"since", "100"}, {"until", "123"}}, 60000); }

Want leased(const std::string& holder = "A") { return s(kKey, S(holder), ttl(10000)); }
Want fenced(Pat token = Token()) { return s(kFence, std::move(token), ttl(60000)); }
Want joined(std::vector<std::pair<std::string, Pat>> members) { return z(kLine, std::move(members), ttl(30000)); }

const std::string kLineBroken =
    "waiting line k:line is not a sorted set (WRONGTYPE Operation against a key holding the wrong kind of value): delete it";
const std::string kBadFence = "fence counter k:fence is not an integer below 2^53-1 (fix or delete it)";

std::vector<Row> grants() {
  return {
      {.name = "free key, nobody waits: granted, the token from TIME",
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token()}), .after = {leased(), fenced()}},
      {.name = "free key, the counter ahead of TIME: counter + 1",
       .given = {str(kFence, "{now+1000000}")},
       .keys = kKeys, .argv = args(), .reply = A({I(1), S("{now+1000001}")}),
       .after = {leased(), fenced(S("{now+1000001}"))}},
      {.name = "free key, a proposal within 25 ms of TIME is taken",
       .keys = kKeys, .argv = args("0", "", "1", "{now+24000}"), .reply = A({I(1), S("{now+24000}")}),
       .after = {leased(), fenced(S("{now+24000}"))}},
      {.name = "free key, a proposal too far ahead is ignored",
       .keys = kKeys, .argv = args("0", "", "1", "{now+60000000}"), .reply = A({I(1), Token()}),
       .after = {leased(), fenced()}},
      {.name = "free key, a proposal that is not a decimal is ignored",
       .keys = kKeys, .argv = args("0", "", "1", "12x"), .reply = A({I(1), Token()}), .after = {leased(), fenced()}},
      {.name = "the counter at 2^53-2: the token 2^53-1 is still issued",
       .given = {str(kFence, "9007199254740990")},
       .keys = kKeys, .argv = args(), .reply = A({I(1), S("9007199254740991")}),
       .after = {leased(), fenced(S("9007199254740991"))}},
      {.name = "our turn: converted into our lease",
       .given = {str(kKey, turn("A"), 2000)},
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token()}), .after = {leased(), fenced()}},
      {.name = "free key, we head the line: granted, we leave the line, nobody is woken",
       .given = {zset(kLine, {{"A", "100"}, {"B", "200"}}, 30000)}, .listeners = {wake("B")},
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token()}),
       .after = {leased(), fenced(), z(kLine, {{"B", S("200")}}, ttl(30000))}},
      {.name = "free key, dead waiters ahead of us: dropped (PUBLISH 0), then we head the line",
       .given = {zset(kLine, {{"C", "100"}, {"A", "200"}})},
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token()}), .after = {leased(), fenced(), gone(kLine)}},
      {.name = "free key, every waiter dead: the line is emptied and the key granted",
       .given = {zset(kLine, {{"C", "100"}, {"D", "200"}})},
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token()}), .after = {leased(), fenced(), gone(kLine)}},
  };
}

std::vector<Row> misses() {
  return {
      {.name = "held by another: told the holder and its pttl, and joins the line with a TIME ticket",
       .given = {str(kKey, "B", 5000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S("B"), In(3500, 5000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "held by another, already in line: its place, no ticket, no length",
       .given = {str(kKey, "B", 5000), zset(kLine, {{"C", "100"}, {"A", "200"}}, 30000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S("B"), In(3500, 5000), I(2), S(""), I(0)})},
      {.name = "held by another: the ticket written back raises our score (ZADD XX GT)",
       .given = {str(kKey, "B", 5000), zset(kLine, {{"A", "100"}, {"C", "200"}}, 30000)},
       .keys = kKeys, .argv = args("0", "300"), .reply = A({I(0), S("B"), In(3500, 5000), I(2), S("300"), I(0)}),
       .after = {z(kLine, {{"C", S("200")}, {"A", S("300")}}, ttl(30000))}},
      {.name = "held by another: a ticket below our score does not lower it",
       .given = {str(kKey, "B", 5000), zset(kLine, {{"A", "500"}}, 30000)},
       .keys = kKeys, .argv = args("0", "300"), .reply = A({I(0), S("B"), In(3500, 5000), I(1), S("300"), I(0)})},
      {.name = "held by another, a look only (join empty): not in line",
       .given = {str(kKey, "B", 5000)},
       .keys = kKeys, .argv = args("0", "", ""), .reply = A({I(0), S("B"), In(3500, 5000), I(0), S(""), I(0)})},
      {.name = "held by another, fair = false (join 0): told the line's length",
       .given = {str(kKey, "B", 5000), zset(kLine, {{"C", "100"}, {"D", "200"}})},
       .keys = kKeys, .argv = args("0", "", "0"), .reply = A({I(0), S("B"), In(3500, 5000), I(0), S(""), I(2)})},
      {.name = "held by us: no re-entrancy, a miss like anyone's (and we join the line)",
       .given = {str(kKey, "A", 5000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S("A"), In(3500, 5000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "another's turn: a miss that names the turn",
       .given = {str(kKey, turn("B"), 2000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(turn("B")), In(500, 2000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "held, the line's tail ahead of TIME: our ticket is one more than the tail",
       .given = {str(kKey, "B", 5000), zset(kLine, {{"C", "{now+5000000}"}})},
       .keys = kKeys, .argv = args(),
       .reply = A({I(0), S("B"), In(3500, 5000), I(2), S("{now+5000001}"), I(2)}),
       .after = {joined({{"C", S("{now+5000000}")}, {"A", S("{now+5000001}")}})}},
      {.name = "free key, a live waiter ahead: it is given the turn, we join behind",
       .given = {zset(kLine, {{"B", "100"}})}, .listeners = {wake("B")},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(turn("B")), I(2000), I(1), Token(), I(1)}),
       .after = {s(kKey, S(turn("B")), ttl(2000)), joined({{"A", Token()}})}, .heard = {{wake("B"), {"turn"}}}},
      {.name = "free key, a dead waiter then a live one: the dead is dropped, the live one woken",
       .given = {zset(kLine, {{"C", "100"}, {"B", "200"}})}, .listeners = {wake("B")},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(turn("B")), I(2000), I(1), Token(), I(1)}),
       .after = {s(kKey, S(turn("B")), ttl(2000)), joined({{"A", Token()}})}, .heard = {{wake("B"), {"turn"}}}},
      {.name = "free key, the woken head's next is told the window",
       .given = {zset(kLine, {{"B", "100"}, {"C", "200"}})}, .listeners = {wake("B"), wake("C")},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(turn("B")), I(2000), I(2), Token(), I(2)}),
       .after = {s(kKey, S(turn("B")), ttl(2000)), joined({{"C", S("200")}, {"A", Token()}})},
       .heard = {{wake("B"), {"turn"}}, {wake("C"), {"next 2000"}}}},
  };
}

std::vector<Row> pauses_and_guard() {
  return {
      {.name = "paused, free key: nothing granted, told the pause for its TTL, joins the line",
       .given = {pause_key()},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(kPaused), In(58500, 60000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "paused, our turn: the turn goes, back at the front of the line",
       .given = {pause_key(), str(kKey, turn("A"), 2000), zset(kLine, {{"B", "100"}}, 30000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(kPaused), In(58500, 60000), I(1), S(""), I(2)}),
       .after = {gone(kKey), joined({{"A", S("99")}, {"B", S("100")}})}},
      {.name = "paused, our turn, nobody else in line: the turn goes, we join at the tail",
       .given = {pause_key(), str(kKey, turn("A"), 2000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(kPaused), In(58500, 60000), I(1), Token(), I(1)}),
       .after = {gone(kKey), joined({{"A", Token()}})}},
      {.name = "a pause key of another type (a string): paused, with empty fields",
       .given = {str(kPause, "x", 60000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S("\1pause:::"), In(58500, 60000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "restart guard, young server: not granted, ms left, joins the line",
       .age = Age::kYoung,
       .keys = kKeys, .argv = args("60000"), .reply = A({I(2), kGuardLeft60s, I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "restart guard, young server, held key: a plain miss",
       .age = Age::kYoung, .given = {str(kKey, "B", 5000)},
       .keys = kKeys, .argv = args("60000"), .reply = A({I(0), S("B"), In(3500, 5000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "restart guard, young server, our turn: taken (a turn asks no guard)",
       .age = Age::kYoung, .given = {str(kKey, turn("A"), 2000)},
       .keys = kKeys, .argv = args("60000"), .reply = A({I(1), Token()}), .after = {leased(), fenced()}},
      {.name = "restart guard of 1 s, server up 2 s or more: granted",
       .age = Age::kOld,
       .keys = kKeys, .argv = args("1000"), .reply = A({I(1), Token()}), .after = {leased(), fenced()}},
      {.name = "restart guard, INFO refused: granted, and says noinfo",
       .age = Age::kYoung, .acl = {{"info"}},
       .keys = kKeys, .argv = args("60000"), .reply = A({I(1), Token(), S(""), S("noinfo")}),
       .after = {leased(), fenced()}},
  };
}

std::vector<Row> broken_keys() {
  return {
      {.name = "lease key of another type (hash): named, nothing written",
       .given = {hash(kKey, {{"f", "v"}})},
       .keys = kKeys, .argv = args(),
       .reply = Err("lease key k holds a hash, not a lease (something else wrote it): delete it or choose another key")},
      {.name = "lease key of another type (list): named",
       .given = {list(kKey)},
       .keys = kKeys, .argv = args(),
       .reply = Err("lease key k holds a list, not a lease (something else wrote it): delete it or choose another key")},
      {.name = "fence counter not a number: refused, the SET undone",
       .given = {str(kFence, "abc")}, .keys = kKeys, .argv = args(), .reply = Err(kBadFence)},
      {.name = "fence counter at 2^53-1: refused",
       .given = {str(kFence, "9007199254740991")}, .keys = kKeys, .argv = args(), .reply = Err(kBadFence)},
      {.name = "fence counter of 17 digits: refused",
       .given = {str(kFence, "12345678901234567")}, .keys = kKeys, .argv = args(), .reply = Err(kBadFence)},
      {.name = "fence counter negative: refused",
       .given = {str(kFence, "-5")}, .keys = kKeys, .argv = args(), .reply = Err(kBadFence)},
      {.name = "fence counter of another type (hash): refused, the SET undone",
       .given = {hash(kFence, {{"f", "v"}})}, .keys = kKeys, .argv = args(), .reply = Err(kBadFence)},
      {.name = "fence counter of another type, our turn: refused, the turn deleted",
       .given = {hash(kFence, {{"f", "v"}}), str(kKey, turn("A"), 2000)}, .keys = kKeys, .argv = args(),
       .reply = Err(kBadFence), .after = {gone(kKey)}},
      {.name = "line of another type, free key: refused, the SET undone",
       .given = {str(kLine, "x")}, .keys = kKeys, .argv = args(), .reply = Err(kLineBroken)},
      {.name = "line of another type, held key: refused",
       .given = {str(kLine, "x"), str(kKey, "B", 5000)}, .keys = kKeys, .argv = args(), .reply = Err(kLineBroken)},
      {.name = "line of another type, a look only: the line is never read",
       .given = {str(kLine, "x"), str(kKey, "B", 5000)}, .keys = kKeys, .argv = args("0", "", ""),
       .reply = A({I(0), S("B"), In(3500, 5000), I(0), S(""), I(0)})},
  };
}

std::vector<Row> refusals() {
  return {
      {.name = "ACL: SET refused (the first write): the refusal, nothing written",
       .acl = {{"set"}}, .keys = kKeys, .argv = args(), .reply = Err(kRefused)},
      {.name = "ACL: MGET refused: read one by one, granted",
       .acl = {{"mget"}}, .keys = kKeys, .argv = args(), .reply = A({I(1), Token()}), .after = {leased(), fenced()}},
      {.name = "ACL: GET and MGET refused: the refusal",
       .acl = {{"mget", "get"}}, .keys = kKeys, .argv = args(), .reply = Err(kRefused)},
      {.name = "ACL: PTTL refused after the SET (the pause check): undone",
       .acl = {{"pttl"}}, .keys = kKeys, .argv = args(), .reply = Err(kRefused)},
      {.name = "ACL: TIME refused at the token: undone, no counter",
       .acl = {{"time"}}, .keys = kKeys, .argv = args(), .reply = Err(kRefused)},
      {.name = "ACL: ZREM refused while heading the line: undone, still in line",
       .acl = {{"zrem"}}, .given = {zset(kLine, {{"A", "100"}})}, .keys = kKeys, .argv = args(),
       .reply = Err(kRefused)},
      {.name = "ACL: ZRANK refused while held: named with the right to grant",
       .acl = {{"zrank"}}, .given = {str(kKey, "B", 5000)}, .keys = kKeys, .argv = args(),
       .reply = Err("the ACL user may not run zrank on the waiting line k:line (" + kRefused + "): grant +zrank")},
      {.name = "ACL: ZADD refused while held (joining): the refusal",
       .acl = {{"zadd"}}, .given = {str(kKey, "B", 5000)}, .keys = kKeys, .argv = args(), .reply = Err(kRefused)},
      {.name = "ACL: PUBLISH refused at the wake: nobody woken, the SET undone, we join",
       .acl = {{"publish"}}, .given = {zset(kLine, {{"B", "100"}})}, .listeners = {wake("B")},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(""), I(-2), I(2), Token(), I(2)}),
       .after = {z(kLine, {{"B", S("100")}, {"A", Token()}}, ttl(30000))}},
      {.name = "ACL: no channels at the wake: as a refused PUBLISH",
       .acl = {{}, false}, .given = {zset(kLine, {{"B", "100"}})}, .listeners = {wake("B")},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(""), I(-2), I(2), Token(), I(2)}),
       .after = {z(kLine, {{"B", S("100")}, {"A", Token()}}, ttl(30000))}},
  };
}

}  // namespace tables_acquire

Table acquire_fair_table() {
  Table t{"kAcquireFair", std::string(lock::kAcquireFair.source), {}};
  for (auto part : {tables_acquire::grants(), tables_acquire::misses(), tables_acquire::pauses_and_guard(),
                    tables_acquire::broken_keys(), tables_acquire::refusals()}) {
    t.rows.insert(t.rows.end(), part.begin(), part.end());
  }
  return t;
}

}  // namespace redisgo::luatable
