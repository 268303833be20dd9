// The waiting line and the pause: kReleaseFair, kPassTurn, kReadLine, kPause, kResume, kReadPause,
// kListKey, kSlotsBeyond, kCheckRights (lock/scripts.h).

#include "lock/scripts.h"
#include "lua/tables.h"

namespace redisgo::luatable {
namespace tables_line {

const std::vector<std::string> kRelFair{kKey, kLine, kFence};
const std::vector<std::string> kRelFairArgs{"A", "2000", kReleased};

Key pause_key(std::int64_t ttl_ms = 60000) {
  return hash(kPause, {{"by", "ops"}, {"reason", "deploy"}, {"since", "100"}, {"until", "123"}}, ttl_ms);
}
const std::string kLineBroken =
    "waiting line k:line is not a sorted set (WRONGTYPE Operation against a key holding the wrong kind of value): delete it";

std::vector<Row> release_fair_rows() {
  return {
      {.name = "ours, nobody in line: deleted, published to waiters outside the line",
       .given = {str(kKey, "A", 5000)}, .listeners = {kReleased}, .keys = kRelFair, .argv = kRelFairArgs,
       .reply = A({I(1), I(1)}), .after = {gone(kKey)}, .heard = {{kReleased, {"A"}}}},
      {.name = "ours, a live head: the key becomes its turn, nothing published",
       .given = {str(kKey, "A", 5000), zset(kLine, {{"B", "100"}})}, .listeners = {kReleased, wake("B")},
       .keys = kRelFair, .argv = kRelFairArgs, .reply = A({I(1), I(0)}),
       .after = {s(kKey, S(turn("B")), ttl(2000)), gone(kLine)}, .heard = {{wake("B"), {"turn"}}}},
      {.name = "ours, a dead head skipped, the next woken and the one after told the window",
       .given = {str(kKey, "A", 5000), zset(kLine, {{"C", "100"}, {"B", "200"}, {"D", "300"}})},
       .listeners = {wake("B"), wake("D")}, .keys = kRelFair, .argv = kRelFairArgs, .reply = A({I(1), I(0)}),
       .after = {s(kKey, S(turn("B")), ttl(2000)), z(kLine, {{"D", S("300")}})},
       .heard = {{wake("B"), {"turn"}}, {wake("D"), {"next 2000"}}}},
      {.name = "ours, every waiter dead: the line emptied, the key deleted and published",
       .given = {str(kKey, "A", 5000), zset(kLine, {{"C", "100"}, {"D", "200"}})}, .listeners = {kReleased},
       .keys = kRelFair, .argv = kRelFairArgs, .reply = A({I(1), I(1)}), .after = {gone(kKey), gone(kLine)},
       .heard = {{kReleased, {"A"}}}},
      {.name = "ours, the line of another type: deleted plainly, 3", .given = {str(kKey, "A", 5000), str(kLine, "x")},
       .listeners = {kReleased}, .keys = kRelFair, .argv = kRelFairArgs, .reply = A({I(3), I(1)}),
       .after = {gone(kKey)}, .heard = {{kReleased, {"A"}}}},
      {.name = "ours, no channel at all: deleted, 2, the line as it was", .acl = {{}, false},
       .given = {str(kKey, "A", 5000), zset(kLine, {{"B", "100"}})}, .listeners = {wake("B"), kReleased},
       .keys = kRelFair, .argv = kRelFairArgs, .reply = A({I(2), I(0)}), .after = {gone(kKey)}},
      {.name = "ours, the release channel only: the wake refused, published outside, 2",
       .acl = {{}, false, {kReleased}}, .given = {str(kKey, "A", 5000), zset(kLine, {{"B", "100"}})},
       .listeners = {wake("B"), kReleased}, .keys = kRelFair, .argv = kRelFairArgs, .reply = A({I(2), I(1)}),
       .after = {gone(kKey)}, .heard = {{kReleased, {"A"}}}},
      {.name = "ACL: ZRANGE refused: taken as a broken line, released plainly, 3", .acl = {{"zrange"}},
       .given = {str(kKey, "A", 5000), zset(kLine, {{"B", "100"}})}, .listeners = {wake("B")}, .keys = kRelFair,
       .argv = kRelFairArgs, .reply = A({I(3), I(0)}), .after = {gone(kKey)}},
      {.name = "ACL: GET refused (the first command): the refusal", .acl = {{"get"}}, .given = {str(kKey, "A", 5000)},
       .keys = kRelFair, .argv = kRelFairArgs, .reply = Err(kRefused)},
      {.name = "ACL: DEL refused after the wake found nobody: the script's error, the key stays", .acl = {{"del"}},
       .given = {str(kKey, "A", 5000)}, .keys = kRelFair, .argv = kRelFairArgs, .reply = Raised(kRefused)},
      {.name = "another's: 0 with its holder and the fence, the line untouched",
       .given = {str(kKey, "B", 5000), str(kFence, "7"), zset(kLine, {{"C", "100"}})},
       .listeners = {wake("C"), kReleased}, .keys = kRelFair, .argv = kRelFairArgs, .reply = A({I(0), S("B"), S("7")})},
      {.name = "gone: 0", .keys = kRelFair, .argv = kRelFairArgs, .reply = I(0)},
      {.name = "a key of another type: 0 and its type, left alone", .given = {hash(kKey, {{"f", "v"}})},
       .keys = kRelFair, .argv = kRelFairArgs, .reply = A({I(0), S(""), S(""), S("hash")})},
  };
}

std::vector<Row> read_line_rows() {
  return {
      {.name = "no line", .keys = {kLine}, .argv = {"100", kReleased}, .reply = A({I(0), A({}), I(0), A({})})},
      {.name = "a live and a dead waiter, one waiter outside the line",
       .given = {zset(kLine, {{"B", "100"}, {"C", "200"}})}, .listeners = {wake("B"), kReleased}, .keys = {kLine},
       .argv = {"100", kReleased}, .reply = A({I(2), A({S("B"), S("100"), S("C"), S("200")}), I(1), A({I(1), I(0)})})},
      {.name = "at most one entry", .given = {zset(kLine, {{"B", "100"}, {"C", "200"}})}, .keys = {kLine},
       .argv = {"1", kReleased}, .reply = A({I(2), A({S("B"), S("100")}), I(0), A({I(0)})})},
      {.name = "ACL: PUBSUB NUMSUB refused: -1 for each", .acl = {{"pubsub|numsub"}},
       .given = {zset(kLine, {{"B", "100"}})}, .keys = {kLine}, .argv = {"100", kReleased},
       .reply = A({I(1), A({S("B"), S("100")}), I(-1), A({I(-1)})})},
      {.name = "a line of another type: the script's WRONGTYPE", .given = {str(kLine, "x")}, .keys = {kLine},
       .argv = {"100", kReleased}, .reply = Raised(kWrongType)},
  };
}

const std::vector<std::string> kPauseKeys{kPause, kLine, kKey};
/// kPause's ARGV: by, reason, since, until, ttl 60 s, turn window, release channel, guard.
std::vector<std::string> pause(std::string guard = "0") {
  return {"ops", "deploy", "1000", "61000", "60000", "2000", kReleased, guard};
}
Want new_pause() {
  return h(kPause, {{"by", S("ops")}, {"reason", S("deploy")}, {"since", S("1000")}, {"until", S("61000")}}, ttl(60000));
}

std::vector<Row> pause_rows() {
  return {
      {.name = "no pause before: written, nobody woken", .given = {zset(kLine, {{"B", "100"}})},
       .listeners = {kReleased, wake("B")}, .keys = kPauseKeys, .argv = pause(), .reply = A({I(1), I(1)}),
       .after = {new_pause()}},
      {.name = "a longer pause replaced: the waiters woken to read it (resume, the head's turn)",
       .given = {pause_key(120000), zset(kLine, {{"B", "100"}})}, .listeners = {kReleased, wake("B")},
       .keys = kPauseKeys, .argv = pause(), .reply = A({I(1), I(1)}),
       .after = {new_pause(), s(kKey, S(turn("B")), ttl(2000)), gone(kLine)},
       .heard = {{kReleased, {"resume"}}, {wake("B"), {"turn"}}}},
      {.name = "a pause without expiry replaced: woken", .given = {pause_key(-1)}, .listeners = {kReleased},
       .keys = kPauseKeys, .argv = pause(), .reply = A({I(1), I(1)}), .after = {new_pause()},
       .heard = {{kReleased, {"resume"}}}},
      {.name = "a shorter pause replaced: nobody woken", .given = {pause_key(30000)}, .listeners = {kReleased},
       .keys = kPauseKeys, .argv = pause(), .reply = A({I(1), I(1)}), .after = {new_pause()}},
      {.name = "a longer pause replaced, the key held: resume published, no turn",
       .given = {pause_key(120000), str(kKey, "C", 5000), zset(kLine, {{"B", "100"}})},
       .listeners = {kReleased, wake("B")}, .keys = kPauseKeys, .argv = pause(), .reply = A({I(1), I(1)}),
       .after = {new_pause()}, .heard = {{kReleased, {"resume"}}}},
      {.name = "a longer pause replaced, young server under the guard: resume only",
       .age = Age::kYoung, .given = {pause_key(120000), zset(kLine, {{"B", "100"}})},
       .listeners = {kReleased, wake("B")}, .keys = kPauseKeys, .argv = pause("60000"), .reply = A({I(1), I(1)}),
       .after = {new_pause()}, .heard = {{kReleased, {"resume"}}}},
      {.name = "a longer pause replaced, no channel: 0 (nobody woken)", .acl = {{}, false},
       .given = {pause_key(120000)}, .keys = kPauseKeys, .argv = pause(), .reply = A({I(1), I(0)}),
       .after = {new_pause()}},
      {.name = "a pause key of another type: replaced (its PTTL -1 wakes the waiters)", .given = {str(kPause, "x")},
       .listeners = {kReleased}, .keys = kPauseKeys, .argv = pause(), .reply = A({I(1), I(1)}),
       .after = {new_pause()}, .heard = {{kReleased, {"resume"}}}},
      {.name = "a longer pause replaced, a line of another type: the wake stops there, 1",
       .given = {pause_key(120000), str(kLine, "x")}, .listeners = {kReleased}, .keys = kPauseKeys, .argv = pause(),
       .reply = A({I(1), I(1)}), .after = {new_pause()}, .heard = {{kReleased, {"resume"}}}},
      {.name = "a longer pause replaced, the lease key of another type: the script's WRONGTYPE after the pause",
       .given = {pause_key(120000), hash(kKey, {{"f", "v"}})}, .listeners = {kReleased}, .keys = kPauseKeys,
       .argv = pause(), .reply = Raised(kWrongType), .after = {new_pause()}, .heard = {{kReleased, {"resume"}}}},
      {.name = "ACL: HSET refused after the DEL: the script's error, the old pause is gone",
       .acl = {{"hset"}}, .given = {pause_key(120000)}, .keys = kPauseKeys, .argv = pause(),
       .reply = Raised(kRefused), .after = {gone(kPause)}},
      {.name = "ACL: PTTL refused (the first command): the script's error", .acl = {{"pttl"}},
       .given = {pause_key(120000)}, .keys = kPauseKeys, .argv = pause(), .reply = Raised(kRefused)},
  };
}

const std::vector<std::string> kResumeArgs{"2000", kReleased, "0"};

std::vector<Row> resume_rows() {
  return {
      {.name = "paused, a waiter: dropped, resume published, the head's turn",
       .given = {pause_key(), zset(kLine, {{"B", "100"}})}, .listeners = {kReleased, wake("B")},
       .keys = kPauseKeys, .argv = kResumeArgs, .reply = A({I(1), I(1)}),
       .after = {gone(kPause), s(kKey, S(turn("B")), ttl(2000)), gone(kLine)},
       .heard = {{kReleased, {"resume"}}, {wake("B"), {"turn"}}}},
      {.name = "no pause: {0, 1}, resume published all the same", .listeners = {kReleased}, .keys = kPauseKeys,
       .argv = kResumeArgs, .reply = A({I(0), I(1)}), .heard = {{kReleased, {"resume"}}}},
      {.name = "the key held: no turn", .given = {pause_key(), str(kKey, "C", 5000), zset(kLine, {{"B", "100"}})},
       .listeners = {wake("B")}, .keys = kPauseKeys, .argv = kResumeArgs, .reply = A({I(1), I(1)}),
       .after = {gone(kPause)}},
      {.name = "two free slots, two waiters: a turn each (the second told next, then its turn)",
       .given = {pause_key(), zset(kLine, {{"B", "100"}, {"C", "200"}})}, .listeners = {wake("B"), wake("C")},
       .keys = {kPause, kLine, kSlot1, kSlot2}, .argv = kResumeArgs, .reply = A({I(1), I(1)}),
       .after = {gone(kPause), s(kSlot1, S(turn("B")), ttl(2000)), s(kSlot2, S(turn("C")), ttl(2000)), gone(kLine)},
       .heard = {{wake("B"), {"turn"}}, {wake("C"), {"next 2000", "turn"}}}},
      {.name = "young server under the guard: resume only", .age = Age::kYoung,
       .given = {pause_key(), zset(kLine, {{"B", "100"}})}, .listeners = {wake("B")}, .keys = kPauseKeys,
       .argv = {"2000", kReleased, "60000"}, .reply = A({I(1), I(1)}), .after = {gone(kPause)}},
      {.name = "no channel: the pause dropped, 0", .acl = {{}, false}, .given = {pause_key()}, .keys = kPauseKeys,
       .argv = kResumeArgs, .reply = A({I(1), I(0)}), .after = {gone(kPause)}},
      {.name = "the release channel only: the wake refused, 0", .acl = {{}, false, {kReleased}},
       .given = {pause_key(), zset(kLine, {{"B", "100"}})}, .listeners = {kReleased, wake("B")}, .keys = kPauseKeys,
       .argv = kResumeArgs, .reply = A({I(1), I(0)}), .after = {gone(kPause)}, .heard = {{kReleased, {"resume"}}}},
      {.name = "a line of another type: the pause dropped, 1", .given = {pause_key(), str(kLine, "x")},
       .keys = kPauseKeys, .argv = kResumeArgs, .reply = A({I(1), I(1)}), .after = {gone(kPause)}},
      {.name = "a pause key of another type: dropped as a pause", .given = {str(kPause, "x")}, .keys = kPauseKeys,
       .argv = kResumeArgs, .reply = A({I(1), I(1)}), .after = {gone(kPause)}},
      {.name = "the lease key of another type: the script's WRONGTYPE, the pause already dropped",
       .given = {pause_key(), list(kKey)}, .listeners = {kReleased}, .keys = kPauseKeys, .argv = kResumeArgs,
       .reply = Raised(kWrongType), .after = {gone(kPause)}, .heard = {{kReleased, {"resume"}}}},
      {.name = "ACL: DEL refused (the first command): the script's error", .acl = {{"del"}}, .given = {pause_key()},
       .keys = kPauseKeys, .argv = kResumeArgs, .reply = Raised(kRefused)},
  };
}

std::vector<Row> read_pause_rows() {
  return {
      {.name = "none", .keys = {kPause}, .reply = A({I(-2), S(""), S(""), S(""), S("")})},
      {.name = "paused", .given = {pause_key()}, .keys = {kPause},
       .reply = A({In(58500, 60000), S("ops"), S("deploy"), S("100"), S("123")})},
      {.name = "paused without expiry", .given = {pause_key(-1)}, .keys = {kPause},
       .reply = A({I(-1), S("ops"), S("deploy"), S("100"), S("123")})},
      {.name = "a pause key of another type: empty fields", .given = {str(kPause, "x", 60000)}, .keys = {kPause},
       .reply = A({In(58500, 60000), S(""), S(""), S(""), S("")})},
  };
}

const std::vector<std::string> kListKeys{kKey, kFence, kLine, kPause, kSlot2};

std::vector<Row> list_key_rows() {
  return {
      {.name = "nothing there", .keys = kListKeys,
       .reply = A({S(""), I(-2), S(""), I(0), I(-2), A({S(""), S(""), S(""), S("")}), A({}), S(""), A({})})},
      {.name = "held, fenced, two waiting, paused, another slot held",
       .given = {str(kKey, "A", 5000), str(kFence, "7"), zset(kLine, {{"B", "100"}, {"C", "200"}}), pause_key(),
                 str(kSlot2, "D", 3000)},
       .keys = kListKeys,
       .reply = A({S("A"), In(3500, 5000), S("7"), I(2), In(58500, 60000), A({S("ops"), S("deploy"), S("100"), S("123")}),
                   A({S("1"), S("D"), In(1500, 3000)}), S(""), A({})})},
      {.name = "a daemon's note of refused renewals: read by its name in ARGV",
       .given = {str("k:refused", "the note", 60000)}, .keys = kListKeys, .argv = {"k:refused"},
       .reply = A({S(""), I(-2), S(""), I(0), I(-2), A({S(""), S(""), S(""), S("")}), A({}), S("the note"), A({})})},
      {.name = "a line and a pause of other types: -1 and empty fields",
       .given = {str(kLine, "x"), str(kPause, "x", 60000)}, .keys = kListKeys,
       .reply = A({S(""), I(-2), S(""), I(-1), In(58500, 60000), A({S(""), S(""), S(""), S("")}), A({}), S(""), A({})})},
      {.name = "the lease key of another type: the script's WRONGTYPE", .given = {hash(kKey, {{"f", "v"}})},
       .keys = kListKeys, .reply = Raised(kWrongType)},
      {.name = "the fence counter of another type: the script's WRONGTYPE", .given = {hash(kFence, {{"f", "v"}})},
       .keys = kListKeys, .reply = Raised(kWrongType)},
      {.name = "another slot key of another type: named with its type, the rest read",
       .given = {str(kKey, "A", 5000), list(kSlot2)}, .keys = kListKeys,
       .reply = A({S("A"), In(3500, 5000), S(""), I(0), I(-2), A({S(""), S(""), S(""), S("")}), A({}), S(""),
                   A({S("1"), S("list")})})},
      {.name = "ACL: GET refused: the refusal (the key unreadable, as before)", .acl = {{"get"}}, .keys = kListKeys,
       .reply = Err(kRefused)},
  };
}

std::vector<Row> slots_beyond_rows() {
  return {
      {.name = "none", .keys = {"k:3", "k:4"}, .reply = I(0)},
      {.name = "two held", .given = {str("k:3", "A"), str("k:4", "B")}, .keys = {"k:3", "k:4"}, .reply = I(2)},
      {.name = "keys of any type count", .given = {hash("k:3", {{"f", "v"}})}, .keys = {"k:3", "k:4"}, .reply = I(1)},
      {.name = "ACL: EXISTS refused: -1", .acl = {{"exists"}}, .keys = {"k:3", "k:4"}, .reply = I(-1)},
  };
}

const std::vector<std::string> kScratch{"k:check", "k:check:line"};

std::vector<Row> check_rights_rows() {
  return {
      {.name = "every right: empty", .keys = kScratch, .argv = {"1", "1", kReleased}, .reply = A({S(""), S("")})},
      {.name = "no ZREM: named", .acl = {{"zrem"}}, .keys = kScratch, .argv = {"1", "1", kReleased},
       .reply = A({S("ZREM"), S(kRefused)})},
      {.name = "no HSET, once_per asked: named", .acl = {{"hset"}}, .keys = kScratch, .argv = {"0", "1", ""},
       .reply = A({S("HSET"), S(kRefused)})},
      {.name = "no HSET, once_per not asked: empty", .acl = {{"hset"}}, .keys = kScratch, .argv = {"0", "", ""},
       .reply = A({S(""), S("")})},
      {.name = "no channel: PUBLISH named", .acl = {{}, false}, .keys = kScratch, .argv = {"1", "1", kReleased},
       .reply = A({S("PUBLISH"), S(kChannelRefused)})},
      {.name = "no TIME: named first", .acl = {{"time", "set"}}, .keys = kScratch, .argv = {"1", "1", kReleased},
       .reply = A({S("TIME"), S(kRefused)})},
      {.name = "a scratch key of another type: reported as GET's failure, the scratch keys deleted",
       .given = {hash("k:check", {{"f", "v"}})}, .keys = kScratch, .argv = {"1", "1", kReleased},
       .reply = A({S("GET"), S(kWrongType)}), .after = {gone("k:check")}},
      {.name = "no ZREMRANGEBYRANK: named, the scratch line deleted", .acl = {{"zremrangebyrank"}}, .keys = kScratch,
       .argv = {"1", "", ""}, .reply = A({S("ZREMRANGEBYRANK"), S(kRefused)})},
  };
}

const std::vector<std::string> kPass{kLine, kKey};
const std::vector<std::string> kPassArgs{"A", "2000", kReleased};

std::vector<Row> pass_turn_rows() {
  return {
      {.name = "our turn, a live head: the key becomes its turn, the one after told the window",
       .given = {str(kKey, turn("A"), 800), zset(kLine, {{"B", "100"}, {"C", "200"}})},
       .listeners = {wake("B"), wake("C"), kReleased}, .keys = kPass, .argv = kPassArgs, .reply = I(1),
       .after = {s(kKey, S(turn("B")), ttl(2000)), z(kLine, {{"C", S("200")}})},
       .heard = {{wake("B"), {"turn"}}, {wake("C"), {"next 2000"}}}},
      {.name = "our turn, a dead head skipped: the next live one woken",
       .given = {str(kKey, turn("A"), 800), zset(kLine, {{"D", "50"}, {"B", "100"}})},
       .listeners = {wake("B")}, .keys = kPass, .argv = kPassArgs, .reply = I(1),
       .after = {s(kKey, S(turn("B")), ttl(2000)), gone(kLine)}, .heard = {{wake("B"), {"turn"}}}},
      {.name = "our turn, nobody in line: deleted, published to waiters outside the line",
       .given = {str(kKey, turn("A"), 800)}, .listeners = {kReleased}, .keys = kPass, .argv = kPassArgs,
       .reply = I(2), .after = {gone(kKey)}, .heard = {{kReleased, {"A"}}}},
      {.name = "our turn, the line of another type: deleted plainly, 2",
       .given = {str(kKey, turn("A"), 800), str(kLine, "x")}, .listeners = {kReleased}, .keys = kPass,
       .argv = kPassArgs, .reply = I(2), .after = {gone(kKey)}, .heard = {{kReleased, {"A"}}}},
      {.name = "another's turn: 0, nothing changed",
       .given = {str(kKey, turn("B"), 800), zset(kLine, {{"C", "100"}})}, .listeners = {wake("C")},
       .keys = kPass, .argv = kPassArgs, .reply = I(0)},
      {.name = "a lease, ours or not: 0, nothing changed", .given = {str(kKey, "A", 5000)}, .keys = kPass,
       .argv = kPassArgs, .reply = I(0)},
      {.name = "gone: 0", .keys = kPass, .argv = kPassArgs, .reply = I(0)},
      {.name = "a key of another type: 0, left alone", .given = {hash(kKey, {{"f", "v"}})}, .keys = kPass,
       .argv = kPassArgs, .reply = I(0)},
  };
}

}  // namespace tables_line

Table pass_turn_table() { return {"kPassTurn", std::string(lock::kPassTurn.source), tables_line::pass_turn_rows()}; }
Table release_fair_table() { return {"kReleaseFair", std::string(lock::kReleaseFair.source), tables_line::release_fair_rows()}; }
Table read_line_table() { return {"kReadLine", std::string(lock::kReadLine.source), tables_line::read_line_rows()}; }
Table pause_table() { return {"kPause", std::string(lock::kPause.source), tables_line::pause_rows()}; }
Table resume_table() { return {"kResume", std::string(lock::kResume.source), tables_line::resume_rows()}; }
Table read_pause_table() { return {"kReadPause", std::string(lock::kReadPause.source), tables_line::read_pause_rows()}; }
Table list_key_table() { return {"kListKey", std::string(lock::kListKey.source), tables_line::list_key_rows()}; }
Table slots_beyond_table() { return {"kSlotsBeyond", std::string(lock::kSlotsBeyond.source), tables_line::slots_beyond_rows()}; }
Table check_rights_table() { return {"kCheckRights", std::string(lock::kCheckRights.source), tables_line::check_rights_rows()}; }

}  // namespace redisgo::luatable
