// The lease's own scripts: kRenew, kRelease, kUndo, kRaiseFence, kInspect (lock/scripts.h).
// kRelease's rows where the key is not ours are apart (release_not_ours) to be easy to change.

#include "lock/scripts.h"
#include "lua/tables.h"

namespace redisgo::luatable {
namespace tables_lease {

const std::vector<std::string> kLease{kKey, kFence};
const std::vector<std::string> kLeaseAndClaim{kKey, kFence, kClaim};

/// kRenew's ARGV: holder, ttl 10 s, token, fence ttl 60 s, claim ttl, claim start, only node.
std::vector<std::string> renew(std::string token = "", std::string only = "", std::string claim_ttl = "",
                               std::string start = "") {
  return {"A", "10000", token, "60000", claim_ttl, start, only};
}

Key claim_of(const std::string& holder) { return hash(kClaim, {{"holder", holder}, {"token", "5"}, {"start", "100"}}, 1000); }

std::vector<Row> renew_rows() {
  return {
      {.name = "ours: extended", .given = {str(kKey, "A", 3000)}, .keys = kLease, .argv = renew(),
       .reply = I(1), .after = {s(kKey, S("A"), ttl(10000))}},
      {.name = "another's: 0, nothing changed", .given = {str(kKey, "B", 3000)}, .keys = kLease, .argv = renew(),
       .reply = I(0)},
      {.name = "gone, no token: 0", .keys = kLease, .argv = renew(), .reply = I(0)},
      {.name = "gone, a token: set again, the counter raised to it", .keys = kLease, .argv = renew("500"),
       .reply = I(2), .after = {s(kKey, S("A"), ttl(10000)), s(kFence, S("500"), ttl(60000))}},
      {.name = "gone, the counter above the token (several nodes): set again, counter kept",
       .given = {str(kFence, "900")}, .keys = kLease, .argv = renew("500"), .reply = I(2),
       .after = {s(kKey, S("A"), ttl(10000))}},
      {.name = "gone on the only node, the counter above the token: lost, 0",
       .given = {str(kFence, "900")}, .keys = kLease, .argv = renew("500", "1"), .reply = I(0)},
      {.name = "gone on the only node, the counter at the token: set again",
       .given = {str(kFence, "500")}, .keys = kLease, .argv = renew("500", "1"), .reply = I(2),
       .after = {s(kKey, S("A"), ttl(10000))}},
      {.name = "our turn, a token: taken as the lease", .given = {str(kKey, turn("A"), 2000)}, .keys = kLease,
       .argv = renew("500"), .reply = I(2), .after = {s(kKey, S("A"), ttl(10000)), s(kFence, S("500"), ttl(60000))}},
      {.name = "our turn, no token: 0", .given = {str(kKey, turn("A"), 2000)}, .keys = kLease, .argv = renew(),
       .reply = I(0)},
      {.name = "another's turn: 0", .given = {str(kKey, turn("B"), 2000)}, .keys = kLease, .argv = renew("500"),
       .reply = I(0)},
      {.name = "lease key of another type: 3, nothing changed", .given = {hash(kKey, {{"f", "v"}})}, .keys = kLease,
       .argv = renew("500"), .reply = I(3)},
      {.name = "gone, the counter not a number: set again, the counter left alone",
       .given = {str(kFence, "abc")}, .keys = kLease, .argv = renew("500", "1"), .reply = I(2),
       .after = {s(kKey, S("A"), ttl(10000))}},
      {.name = "gone, the counter of another type: set again, the counter left alone",
       .given = {hash(kFence, {{"f", "v"}})}, .keys = kLease, .argv = renew("500", "1"), .reply = I(2),
       .after = {s(kKey, S("A"), ttl(10000))}},
      {.name = "ACL: GET refused (the first command): the refusal", .acl = {{"get"}}, .given = {str(kKey, "A", 3000)},
       .keys = kLease, .argv = renew(), .reply = Err(kRefused)},
      {.name = "ACL: PEXPIRE refused: the script ends with the refusal, the key as it was",
       .acl = {{"pexpire"}}, .given = {str(kKey, "A", 3000)}, .keys = kLease, .argv = renew(), .reply = Raised(kRefused)},
      {.name = "ours with our claim: the claim kept for its ttl", .given = {str(kKey, "A", 3000), claim_of("A")},
       .keys = kLeaseAndClaim, .argv = renew("", "", "120000"), .reply = I(1),
       .after = {s(kKey, S("A"), ttl(10000)), h(kClaim, {{"holder", S("A")}, {"token", S("5")}, {"start", S("100")}},
                                                ttl(120000))}},
      {.name = "ours, another's claim: left alone", .given = {str(kKey, "A", 3000), claim_of("B")},
       .keys = kLeaseAndClaim, .argv = renew("500", "", "120000", "1000"), .reply = I(1),
       .after = {s(kKey, S("A"), ttl(10000))}},
      {.name = "ours, the claim gone: written again for this run", .given = {str(kKey, "A", 3000)},
       .keys = kLeaseAndClaim, .argv = renew("500", "", "120000", "1000"), .reply = I(1),
       .after = {s(kKey, S("A"), ttl(10000)),
                 h(kClaim, {{"holder", S("A")}, {"token", S("500")}, {"start", S("1000")}}, ttl(120000))}},
      {.name = "ours, a claim key of another type: left alone", .given = {str(kKey, "A", 3000), str(kClaim, "x")},
       .keys = kLeaseAndClaim, .argv = renew("500", "", "120000", "1000"), .reply = I(1),
       .after = {s(kKey, S("A"), ttl(10000))}},
      {.name = "ours, no claim ttl: the claim key is not read", .given = {str(kKey, "A", 3000), claim_of("A")},
       .keys = kLeaseAndClaim, .argv = renew(), .reply = I(1), .after = {s(kKey, S("A"), ttl(10000))}},
      {.name = "not ours with our claim: 0, the claim not kept", .given = {str(kKey, "B", 3000), claim_of("A")},
       .keys = kLeaseAndClaim, .argv = renew("", "", "120000"), .reply = I(0)},
  };
}

const std::vector<std::string> kRelArgs{"A", kReleased};

std::vector<Row> release_ours() {
  return {
      {.name = "ours: deleted, the holder published", .given = {str(kKey, "A", 5000)}, .listeners = {kReleased},
       .keys = {kKey}, .argv = kRelArgs, .reply = I(1), .after = {gone(kKey)}, .heard = {{kReleased, {"A"}}}},
      {.name = "ours, nobody listens: 1 all the same", .given = {str(kKey, "A", 5000)}, .keys = {kKey},
       .argv = kRelArgs, .reply = I(1), .after = {gone(kKey)}},
      {.name = "ours, PUBLISH refused (no channel): released, 2", .acl = {{}, false},
       .given = {str(kKey, "A", 5000)}, .listeners = {kReleased}, .keys = {kKey}, .argv = kRelArgs, .reply = I(2),
       .after = {gone(kKey)}},
      {.name = "ACL: GET refused (the first command): the script's error", .acl = {{"get"}},
       .given = {str(kKey, "A", 5000)}, .keys = {kKey}, .argv = kRelArgs, .reply = Raised(kRefused)},
      {.name = "ACL: DEL refused: the script's error, the key stays", .acl = {{"del"}},
       .given = {str(kKey, "A", 5000)}, .listeners = {kReleased}, .keys = {kKey}, .argv = kRelArgs,
       .reply = Raised(kRefused)},
  };
}

std::vector<Row> release_not_ours() {
  return {
      {.name = "another's: 0, nothing published", .given = {str(kKey, "B", 5000)}, .listeners = {kReleased},
       .keys = {kKey}, .argv = kRelArgs, .reply = I(0)},
      {.name = "gone: 0", .keys = {kKey}, .argv = kRelArgs, .reply = I(0)},
      {.name = "another's turn: 0", .given = {str(kKey, turn("B"), 2000)}, .keys = {kKey}, .argv = kRelArgs,
       .reply = I(0)},
      {.name = "a key of another type: the script's WRONGTYPE", .given = {hash(kKey, {{"f", "v"}})}, .keys = {kKey},
       .argv = kRelArgs, .reply = Raised(kWrongType)},
  };
}

std::vector<Row> undo_rows() {
  return {
      {.name = "ours: deleted, nothing published", .given = {str(kKey, "A", 5000)}, .listeners = {kReleased},
       .keys = {kKey}, .argv = {"A"}, .reply = I(1), .after = {gone(kKey)}},
      {.name = "another's: 0", .given = {str(kKey, "B", 5000)}, .keys = {kKey}, .argv = {"A"}, .reply = I(0)},
      {.name = "gone: 0", .keys = {kKey}, .argv = {"A"}, .reply = I(0)},
      {.name = "a key of another type: the script's WRONGTYPE", .given = {list(kKey)}, .keys = {kKey},
       .argv = {"A"}, .reply = Raised(kWrongType)},
      {.name = "ACL: DEL refused: the script's error, the key stays", .acl = {{"del"}},
       .given = {str(kKey, "A", 5000)}, .keys = {kKey}, .argv = {"A"}, .reply = Raised(kRefused)},
  };
}

std::vector<std::string> raise(std::string token, std::string slot = "") { return {"A", token, "60000", slot}; }

std::vector<Row> raise_fence_rows() {
  return {
      {.name = "ours, no counter: set to the token", .given = {str(kKey, "A", 5000)}, .keys = kLease,
       .argv = raise("500"), .reply = I(1), .after = {s(kFence, S("500"), ttl(60000))}},
      {.name = "ours, a lower counter: raised", .given = {str(kKey, "A", 5000), str(kFence, "100")}, .keys = kLease,
       .argv = raise("500"), .reply = I(1), .after = {s(kFence, S("500"), ttl(60000))}},
      {.name = "ours, a higher counter: kept, 1", .given = {str(kKey, "A", 5000), str(kFence, "900")}, .keys = kLease,
       .argv = raise("500"), .reply = I(1)},
      {.name = "a slot of ours, the counter at the token: 2", .given = {str(kKey, "A", 5000), str(kFence, "500")},
       .keys = kLease, .argv = raise("500", "1"), .reply = I(2)},
      {.name = "a slot of ours, a higher counter: 2", .given = {str(kKey, "A", 5000), str(kFence, "900")},
       .keys = kLease, .argv = raise("500", "1"), .reply = I(2)},
      {.name = "a slot of ours, a lower counter: raised, 1", .given = {str(kKey, "A", 5000), str(kFence, "100")},
       .keys = kLease, .argv = raise("500", "1"), .reply = I(1), .after = {s(kFence, S("500"), ttl(60000))}},
      {.name = "not ours: 0", .given = {str(kKey, "B", 5000), str(kFence, "100")}, .keys = kLease,
       .argv = raise("500"), .reply = I(0)},
      {.name = "ours, the counter not a number: an error", .given = {str(kKey, "A", 5000), str(kFence, "abc")},
       .keys = kLease, .argv = raise("500"), .reply = Err("fence counter k:fence is not a number")},
      {.name = "ours, the counter of another type: the script's WRONGTYPE",
       .given = {str(kKey, "A", 5000), hash(kFence, {{"f", "v"}})}, .keys = kLease, .argv = raise("500"),
       .reply = Raised(kWrongType)},
      {.name = "the lease key of another type: the script's WRONGTYPE", .given = {hash(kKey, {{"f", "v"}})},
       .keys = kLease, .argv = raise("500"), .reply = Raised(kWrongType)},
      {.name = "ACL: SET refused: the script's error, the counter as it was", .acl = {{"set"}},
       .given = {str(kKey, "A", 5000), str(kFence, "100")}, .keys = kLease, .argv = raise("500"),
       .reply = Raised(kRefused)},
  };
}

std::vector<Row> inspect_rows() {
  return {
      {.name = "nothing there", .keys = kLease, .reply = A({I(0), S(""), I(-2), S(""), In(0, 1000000), S("")})},
      {.name = "held, with a counter",
       .given = {str(kKey, "A", 5000), str(kFence, "7")}, .keys = kLease,
       .reply = A({I(1), S("A"), In(3500, 5000), S("7"), In(0, 1000000), S("")})},
      {.name = "held without expiry", .given = {str(kKey, "A")}, .keys = kLease,
       .reply = A({I(1), S("A"), I(-1), S(""), In(0, 1000000), S("")})},
      {.name = "a turn", .given = {str(kKey, turn("B"), 2000)}, .keys = kLease,
       .reply = A({I(1), S(turn("B")), In(500, 2000), S(""), In(0, 1000000), S("")})},
      {.name = "young server: its uptime", .age = Age::kYoung, .keys = kLease,
       .reply = A({I(0), S(""), I(-2), S(""), In(0, 2), S("")})},
      {.name = "INFO refused: uptime -1", .acl = {{"info"}}, .keys = kLease,
       .reply = A({I(0), S(""), I(-2), S(""), I(-1), S("")})},
      {.name = "the counter of another type: reported, not an error", .given = {hash(kFence, {{"f", "v"}})},
       .keys = kLease, .reply = A({I(0), S(""), I(-2), S(""), In(0, 1000000), S("hash")})},
      {.name = "the lease key of another type: an error that names it", .given = {list(kKey)}, .keys = kLease,
       .reply = Err("lease key k holds a list, not a lease (something else wrote it): delete it or choose another key")},
      {.name = "ACL: GET refused: the refusal", .acl = {{"get"}}, .keys = kLease, .reply = Err(kRefused)},
  };
}

}  // namespace tables_lease

Table renew_table() { return {"kRenew", std::string(lock::kRenew.source), tables_lease::renew_rows()}; }

Table release_table() {
  Table t{"kRelease", std::string(lock::kRelease.source), tables_lease::release_ours()};
  for (auto& r : tables_lease::release_not_ours()) t.rows.push_back(r);
  return t;
}

Table undo_table() { return {"kUndo", std::string(lock::kUndo.source), tables_lease::undo_rows()}; }
Table raise_fence_table() { return {"kRaiseFence", std::string(lock::kRaiseFence.source), tables_lease::raise_fence_rows()}; }
Table inspect_table() { return {"kInspect", std::string(lock::kInspect.source), tables_lease::inspect_rows()}; }

}  // namespace redisgo::luatable
