// once_per claims and the control message: kClaim, kFinishClaim, kReadClaims, kPublish
// (lock/scripts.h). kClaim's rows are on their own (claim_rows) to be easy to change.

#include "lock/scripts.h"
#include "lua/tables.h"

namespace redisgo::luatable {
namespace tables_claims {

const std::string kWitness = "k:once:witness";
const std::vector<std::string> kClaimKeys{kKey, kClaim, kWitness};

/// kClaim's ARGV: holder, token, start (ms), claim ttl, earliest start of a run ("" no guard),
/// the slot (s), the highest witness any node showed, the witness's ttl, "1" to ask replicas.
std::vector<std::string> claim(std::string earliest = "", std::string highest = "") {
  return {"A", "500", "1000", "120000", std::move(earliest), "100", std::move(highest), "86400000", "0"};
}

Key claimed_by(const std::string& holder, std::string status = "") {
  Key k = hash(kClaim, {{"holder", holder}, {"token", "5"}, {"start", "100"}}, 100000);
  if (!status.empty()) k.fields.emplace_back("status", status);
  return k;
}
Want our_claim() { return h(kClaim, {{"holder", S("A")}, {"token", S("500")}, {"start", S("1000")}}, ttl(120000)); }
/// The witness after a guarded claim on a server without AOF: the slot, not durable.
Want raised_witness() { return h(kWitness, {{"slot", S("100")}, {"durable", S("0")}}, ttl(86400000)); }
/// An `adopt` of slot 100 recorded after any start the server can have had.
Key adopted() { return hash(kWitness, {{"adopted", "100"}, {"adopted_ms", "99999999999999"}}, 86400000); }

/// The node's state (once_state) is compared by the C++ parser's tests; here only its place.
std::vector<Row> claim_rows() {
  const std::string guard_open = "{now_ms+100000}", guard_young = "{now_ms-60000}";
  return {
      {.name = "the lease not ours: {-1}", .given = {str(kKey, "B", 5000)}, .keys = kClaimKeys, .argv = claim(),
       .reply = A({I(-1)})},
      {.name = "the lease gone: {-1}", .keys = kClaimKeys, .argv = claim(), .reply = A({I(-1)})},
      {.name = "ours, unclaimed, no guard: claimed, counted as off, no witness", .given = {str(kKey, "A", 5000)},
       .keys = kClaimKeys, .argv = claim(), .reply = A({I(1), S("off"), I(0), Any()}),
       .after = {our_claim(), gone(kWitness)}},
      {.name = "ours, claimed by another: who and when", .given = {str(kKey, "A", 5000), claimed_by("B")},
       .keys = kClaimKeys, .argv = claim(), .reply = A({I(0), S("B"), S("5"), S("100"), S("")})},
      {.name = "ours, claimed and finished: with its status", .given = {str(kKey, "A", 5000), claimed_by("B", "0")},
       .keys = kClaimKeys, .argv = claim(), .reply = A({I(0), S("B"), S("5"), S("100"), S("0")})},
      {.name = "ours, a claim key of another type: counts as claimed", .given = {str(kKey, "A", 5000), str(kClaim, "x")},
       .keys = kClaimKeys, .argv = claim(), .reply = A({I(0), S("(not a claim: string)"), S(""), S(""), S("")})},
      {.name = "restart guard, young server: held back with its state, nothing written", .age = Age::kYoung,
       .given = {str(kKey, "A", 5000)}, .keys = kClaimKeys, .argv = claim(guard_young),
       .reply = A({I(2), Any()}), .after = {gone(kClaim), gone(kWitness)}},
      {.name = "restart guard, up since before the slot: claimed by uptime, the witness raised",
       .given = {str(kKey, "A", 5000)}, .keys = kClaimKeys, .argv = claim(guard_open),
       .reply = A({I(1), S("uptime"), I(0), Any()}), .after = {our_claim(), raised_witness()}},
      {.name = "restart guard, young server with an adopt of this slot: claimed by adopt", .age = Age::kYoung,
       .given = {str(kKey, "A", 5000), adopted()}, .keys = kClaimKeys, .argv = claim(guard_young),
       .reply = A({I(1), S("adopt"), I(0), Any()}),
       .after = {our_claim(), h(kWitness, {{"adopted", S("100")}, {"adopted_ms", S("99999999999999")}, {"slot", S("100")},
                                           {"durable", S("0")}}, ttl(86400000))}},
      {.name = "restart guard, young server, a witness as high as any but no AOF: held back", .age = Age::kYoung,
       .given = {str(kKey, "A", 5000), hash(kWitness, {{"slot", "100"}, {"durable", "1"}}, 86400000)},
       .keys = kClaimKeys, .argv = claim(guard_young, "100"), .reply = A({I(2), Any()}), .after = {gone(kClaim)}},
      {.name = "restart guard, a witness of another type: no evidence, left alone", .given = {str(kKey, "A", 5000),
       str(kWitness, "x")}, .keys = kClaimKeys, .argv = claim(guard_open), .reply = A({I(1), S("uptime"), I(0), Any()}),
       .after = {our_claim(), s(kWitness, S("x"))}},
      {.name = "restart guard, INFO refused: held back (no evidence it kept its claims), nothing written",
       .acl = {{"info"}}, .given = {str(kKey, "A", 5000)}, .keys = kClaimKeys, .argv = claim(guard_open),
       .reply = A({I(2), Any()}), .after = {gone(kClaim), gone(kWitness)}},
      {.name = "the lease key of another type: the script's WRONGTYPE", .given = {hash(kKey, {{"f", "v"}})},
       .keys = kClaimKeys, .argv = claim(), .reply = Raised(kWrongType)},
      {.name = "ACL: GET refused (the first command): the script's error", .acl = {{"get"}},
       .given = {str(kKey, "A", 5000)}, .keys = kClaimKeys, .argv = claim(), .reply = Raised(kRefused)},
      {.name = "ACL: HSET refused: the script's error, no claim", .acl = {{"hset"}}, .given = {str(kKey, "A", 5000)},
       .keys = kClaimKeys, .argv = claim(), .reply = Raised(kRefused), .after = {gone(kClaim)}},
      {.name = "ACL: PEXPIRE refused: the script's error before anything is written", .acl = {{"pexpire"}},
       .given = {str(kKey, "A", 5000)}, .keys = kClaimKeys, .argv = claim(), .reply = Raised(kRefused),
       .after = {gone(kClaim)}},
      {.name = "ACL: the witness cannot be written (PTTL refused): the claim taken away, the refusal returned",
       .acl = {{"pttl"}}, .given = {str(kKey, "A", 5000)}, .keys = kClaimKeys, .argv = claim(guard_open),
       .reply = ErrHas("can't run this command"), .after = {gone(kClaim), gone(kWitness)}},
  };
}

std::vector<Row> finish_rows() {
  const Want finished = h(kClaim, {{"holder", S("A")}, {"token", S("5")}, {"start", S("100")}, {"status", S("0")}},
                          ttl(100000));
  return {
      {.name = "ours: the exit status recorded", .given = {claimed_by("A")}, .keys = {kClaim}, .argv = {"A", "0"},
       .reply = I(1), .after = {finished}},
      {.name = "ours, no status: the claim dropped", .given = {claimed_by("A")}, .keys = {kClaim}, .argv = {"A", ""},
       .reply = I(1), .after = {gone(kClaim)}},
      {.name = "another's: 0", .given = {claimed_by("B")}, .keys = {kClaim}, .argv = {"A", "0"}, .reply = I(0)},
      {.name = "none: 0", .keys = {kClaim}, .argv = {"A", "0"}, .reply = I(0)},
      {.name = "a claim key of another type: the script's WRONGTYPE", .given = {str(kClaim, "x")}, .keys = {kClaim},
       .argv = {"A", "0"}, .reply = Raised(kWrongType)},
      {.name = "ACL: HSET refused: the script's error", .acl = {{"hset"}}, .given = {claimed_by("A")},
       .keys = {kClaim}, .argv = {"A", "0"}, .reply = Raised(kRefused)},
  };
}

std::vector<Row> read_claims_rows() {
  return {
      {.name = "one claim, one none", .given = {claimed_by("A", "3")}, .keys = {kClaim, "k:claim:2"},
       .reply = A({A({S("A"), S("5"), S("100"), S("3")}), A({S(""), S(""), S(""), S("")})})},
      {.name = "a claim key of another type: the script's WRONGTYPE", .given = {list(kClaim)}, .keys = {kClaim},
       .reply = Raised(kWrongType)},
  };
}

std::vector<Row> publish_rows() {
  return {
      {.name = "two subscribers: 2", .listeners = {"k:control", "k:control"}, .argv = {"k:control", "handover"},
       .reply = I(2), .heard = {{"k:control", {"handover"}}}},
      {.name = "nobody: 0", .argv = {"k:control", "handover"}, .reply = I(0)},
      {.name = "ACL: no channel: the script's error", .acl = {{}, false}, .listeners = {"k:control"},
       .argv = {"k:control", "handover"}, .reply = Raised(kChannelRefused)},
  };
}

}  // namespace tables_claims

Table claim_table() { return {"kClaim", std::string(lock::kClaim.source), tables_claims::claim_rows()}; }
Table finish_claim_table() { return {"kFinishClaim", std::string(lock::kFinishClaim.source), tables_claims::finish_rows()}; }
Table read_claims_table() { return {"kReadClaims", std::string(lock::kReadClaims.source), tables_claims::read_claims_rows()}; }
Table publish_table() { return {"kPublish", std::string(lock::kPublish.source), tables_claims::publish_rows()}; }

}  // namespace redisgo::luatable
