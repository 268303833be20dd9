// kAcquireSlotFair: a semaphore's slots (limit 2 here) with the waiting line (lock/scripts.h).
// The rows for a slot key of another type are kept apart (slot_of_another_type) so that they are
// easy to change with the script.

#include "lock/scripts.h"
#include "lua/tables.h"

namespace redisgo::luatable {
namespace tables_slot {

const std::vector<std::string> kKeys{kFence, kLine, kSlot1, kSlot2, kPause};

std::vector<std::string> args(std::string guard = "0", std::string ticket = "", std::string join = "1") {
  return {"A", "10000", "60000", guard, ticket, join, "30000", "2000", ""};
}

const std::string kPaused = "\1pause:123:ops:deploy";
Key pause_key() { return hash(kPause, {{"by", "ops"}, {"reason", "deploy"}, {"since", "100"}, {"until", "123"}}, 60000); }
Want holds(const std::string& slot, const std::string& holder = "A") { return s(slot, S(holder), ttl(10000)); }
Want fenced(Pat token = Token()) { return s(kFence, std::move(token), ttl(60000)); }
Want joined(std::vector<std::pair<std::string, Pat>> members) { return z(kLine, std::move(members), ttl(30000)); }
const std::string kBadFence = "fence counter k:fence is not an integer below 2^53-1 (fix or delete it)";

std::vector<Row> slot_rows() {
  return {
      {.name = "both slots free, nobody waits: the first slot",
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token(), S(kSlot1)}), .after = {holds(kSlot1), fenced()}},
      {.name = "first slot held: the second",
       .given = {str(kSlot1, "B", 5000)},
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token(), S(kSlot2)}), .after = {holds(kSlot2), fenced()}},
      {.name = "both held: told the slot that frees first, joins the line",
       .given = {str(kSlot1, "B", 5000), str(kSlot2, "C", 3000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S("C"), In(1500, 3000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "both held, one without expiry: the other one's pttl",
       .given = {str(kSlot1, "B"), str(kSlot2, "C", 3000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S("C"), In(1500, 3000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "our turn in the second slot: taken first, the free one's turn to the (empty) line",
       .given = {str(kSlot2, turn("A"), 2000)},
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token(), S(kSlot2)}), .after = {holds(kSlot2), fenced()}},
      {.name = "another's turn and a held slot: a miss that names the turn",
       .given = {str(kSlot1, turn("B"), 2000), str(kSlot2, "C", 5000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(turn("B")), In(500, 2000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "a free slot, a live waiter ahead: it gets the turn there",
       .given = {str(kSlot1, "C", 5000), zset(kLine, {{"B", "100"}})}, .listeners = {wake("B")},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(turn("B")), I(2000), I(1), Token(), I(1)}),
       .after = {s(kSlot2, S(turn("B")), ttl(2000)), joined({{"A", Token()}})}, .heard = {{wake("B"), {"turn"}}}},
      {.name = "both free, we head the line: a slot for us, the other slot's turn to the next waiter",
       .given = {zset(kLine, {{"A", "100"}, {"B", "200"}})}, .listeners = {wake("B")},
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token(), S(kSlot1)}),
       .after = {holds(kSlot1), fenced(), s(kSlot2, S(turn("B")), ttl(2000)), gone(kLine)},
       .heard = {{wake("B"), {"turn"}}}},
      {.name = "both free, all waiters dead: the line emptied, the first slot granted",
       .given = {zset(kLine, {{"C", "100"}, {"D", "200"}})},
       .keys = kKeys, .argv = args(), .reply = A({I(1), Token(), S(kSlot1)}),
       .after = {holds(kSlot1), fenced(), gone(kLine)}},
      {.name = "the counter ahead of TIME: counter + 1",
       .given = {str(kFence, "{now+1000000}")},
       .keys = kKeys, .argv = args(), .reply = A({I(1), S("{now+1000001}"), S(kSlot1)}),
       .after = {holds(kSlot1), fenced(S("{now+1000001}"))}},
      {.name = "paused, a free slot: nothing granted, told the pause",
       .given = {pause_key()},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(kPaused), In(58500, 60000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "paused, our turn: the turn goes, back at the front",
       .given = {pause_key(), str(kSlot1, turn("A"), 2000), zset(kLine, {{"B", "100"}}, 30000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S(kPaused), In(58500, 60000), I(1), S(""), I(2)}),
       .after = {gone(kSlot1), joined({{"A", S("99")}, {"B", S("100")}})}},
      {.name = "paused, both held: a plain miss (the pause is not read)",
       .given = {pause_key(), str(kSlot1, "B", 5000), str(kSlot2, "C", 3000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S("C"), In(1500, 3000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "restart guard, young server: no slot, ms left",
       .age = Age::kYoung,
       .keys = kKeys, .argv = args("60000"), .reply = A({I(2), kGuardLeft60s, I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "restart guard, young server, our turn: taken, the free slot's turn not given",
       .age = Age::kYoung, .given = {str(kSlot1, turn("A"), 2000), zset(kLine, {{"B", "100"}}, 30000)},
       .listeners = {wake("B")},
       .keys = kKeys, .argv = args("60000"), .reply = A({I(1), Token(), S(kSlot1)}), .after = {holds(kSlot1), fenced()}},
      {.name = "restart guard of 1 s, server up 2 s: granted",
       .age = Age::kOld, .keys = kKeys, .argv = args("1000"), .reply = A({I(1), Token(), S(kSlot1)}),
       .after = {holds(kSlot1), fenced()}},
      {.name = "restart guard, INFO refused: granted with noinfo",
       .age = Age::kYoung, .acl = {{"info"}},
       .keys = kKeys, .argv = args("60000"), .reply = A({I(1), Token(), S(kSlot1), S("noinfo")}),
       .after = {holds(kSlot1), fenced()}},
      {.name = "fence counter not a number: refused before any SET",
       .given = {str(kFence, "abc")}, .keys = kKeys, .argv = args(), .reply = Err(kBadFence)},
      {.name = "fence counter of another type: refused",
       .given = {hash(kFence, {{"f", "v"}})}, .keys = kKeys, .argv = args(), .reply = Err(kBadFence)},
      {.name = "a pause key of another type (a string): paused, with empty fields",
       .given = {str(kPause, "x", 60000)},
       .keys = kKeys, .argv = args(), .reply = A({I(0), S("\1pause:::"), In(58500, 60000), I(1), Token(), I(1)}),
       .after = {joined({{"A", Token()}})}},
      {.name = "line of another type: refused, the SET undone",
       .given = {str(kLine, "x")}, .keys = kKeys, .argv = args(),
       .reply = Err("waiting line k:line is not a sorted set (" + kWrongType + "): delete it")},
      {.name = "ACL: GET and MGET refused (the first command): the refusal",
       .acl = {{"mget", "get"}}, .keys = kKeys, .argv = args(), .reply = Err(kRefused)},
      {.name = "ACL: MGET refused: read one by one",
       .acl = {{"mget"}}, .given = {str(kSlot1, "B", 5000)}, .keys = kKeys, .argv = args(),
       .reply = A({I(1), Token(), S(kSlot2)}), .after = {holds(kSlot2), fenced()}},
      {.name = "ACL: TIME refused at the token (after the SET): undone",
       .acl = {{"time"}}, .keys = kKeys, .argv = args(), .reply = Err(kRefused)},
      {.name = "ACL: ZREM refused while heading the line: undone",
       .acl = {{"zrem"}}, .given = {zset(kLine, {{"A", "100"}})}, .keys = kKeys, .argv = args(), .reply = Err(kRefused)},
      {.name = "ACL: PTTL refused on a miss: the refusal, nothing of ours to undo",
       .acl = {{"pttl"}}, .given = {str(kSlot1, "B", 5000), str(kSlot2, "C", 3000)}, .keys = kKeys, .argv = args(),
       .reply = Err(kRefused)},
  };
}

/// A slot key that another writer made a hash or a list.
std::vector<Row> slot_of_another_type() {
  return {
      {.name = "first slot of another type: skipped, the second granted, the bad key named after the reply",
       .given = {hash(kSlot1, {{"f", "v"}})}, .keys = kKeys, .argv = args(),
       .reply = A({I(1), Token(), S(kSlot2), A({S(kSlot1), S("hash")})}), .after = {holds(kSlot2), fenced()}},
      {.name = "every slot of another type: a miss with no holder's TTL, joins the line, every bad key named",
       .given = {hash(kSlot1, {{"f", "v"}}), list(kSlot2)}, .keys = kKeys, .argv = args(),
       .reply = A({I(0), S(""), I(-1), I(1), Token(), I(1), A({S(kSlot1), S("hash"), S(kSlot2), S("list")})}),
       .after = {joined({{"A", Token()}})}},
  };
}

}  // namespace tables_slot

Table acquire_slot_fair_table() {
  Table t{"kAcquireSlotFair", std::string(lock::kAcquireSlotFair.source), tables_slot::slot_rows()};
  for (auto& r : tables_slot::slot_of_another_type()) t.rows.push_back(r);
  return t;
}

}  // namespace redisgo::luatable
