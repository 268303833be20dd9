// The scripts of `adopt`, `check`'s once_per look and the refused renewals' note: kReadOnce,
// kAdopt, kDropAdopt, kProbeRights, kReadRefusal (lock/scripts.h).

#include "lock/scripts.h"
#include "lua/tables.h"

namespace redisgo::luatable {
namespace tables_once_rights {

const std::string kWitness = "k:once:witness", kOnce = "k:once:100", kNote = "k:refused", kProbe = "k:probe";

/// once_state with the witness's fields as given (uptime, TIME, AOF and version as the server
/// has them; no replicas asked: -1).
Pat state(std::vector<std::string> witness = {"", "", "", "", "", ""}, Pat replicas = I(-1)) {
  return A({Any(), Any(), Any(), Any(), S(witness[0]), S(witness[1]), S(witness[2]), S(witness[3]), S(witness[4]),
            S(witness[5]), std::move(replicas)});
}
Key witness_of(std::string slot, std::int64_t ttl = 86400000) {
  return hash(kWitness, {{"slot", std::move(slot)}, {"durable", "0"}, {"adopted", "100"}, {"adopted_ms", "5"},
                         {"adopted_by", "ops"}, {"adopts", "2"}}, ttl);
}
Key claim_of(const std::string& holder) {
  return hash(kOnce, {{"holder", holder}, {"token", "5"}, {"start", "100"}, {"status", "0"}}, 100000);
}
const Pat kNoClaim = A({S(""), S(""), S(""), S("")});

std::vector<Row> read_once_rows() {
  const std::vector<std::string> keys{kWitness, kOnce};
  return {
      {.name = "nothing there: no witness, no claim", .keys = keys, .argv = {""}, .reply = A({state(), kNoClaim})},
      {.name = "a witness and a claim", .given = {witness_of("100"), claim_of("A")}, .keys = keys, .argv = {""},
       .reply = A({state({"100", "0", "100", "5", "ops", "2"}), A({S("A"), S("5"), S("100"), S("0")})})},
      {.name = "replicas asked: connected_slaves 0", .keys = keys, .argv = {"1"},
       .reply = A({state({"", "", "", "", "", ""}, I(0)), kNoClaim})},
      {.name = "a claim without a holder: (no holder)", .given = {hash(kOnce, {{"token", "5"}}, 100000)}, .keys = keys,
       .argv = {""}, .reply = A({state(), A({S("(no holder)"), S("5"), S(""), S("")})})},
      {.name = "a claim key of another type: read as a claim", .given = {list(kOnce)}, .keys = keys, .argv = {""},
       .reply = A({state(), A({S("(not a claim: list)"), S(""), S(""), S("")})})},
      {.name = "a witness of another type: no evidence", .given = {list(kWitness)}, .keys = keys, .argv = {""},
       .reply = A({state(), kNoClaim})},
      {.name = "ACL: INFO refused: uptime, AOF and version unknown", .acl = {{"info"}}, .keys = keys, .argv = {"1"},
       .reply = A({A({I(-1), Any(), I(-1), S(""), S(""), S(""), S(""), S(""), S(""), S(""), I(-1)}), kNoClaim})},
      {.name = "ACL: HMGET refused: the witness reads as none, a claim as not a claim",
       .acl = {{"hmget"}}, .given = {witness_of("100"), claim_of("A")}, .keys = keys, .argv = {""},
       .reply = A({state(), A({S("(not a claim: hash)"), S(""), S(""), S("")})})},
      {.name = "ACL: TIME refused (the first command): the script's error", .acl = {{"time"}}, .keys = keys,
       .argv = {""}, .reply = Raised(kRefused)},
  };
}

/// kAdopt's ARGV: slot 100, by "ops", witness ttl 7 days.
const std::vector<std::string> kAdoptArgs{"100", "ops", "604800000"};

std::vector<Row> adopt_rows() {
  const std::vector<std::string> keys{kOnce, kWitness};
  return {
      {.name = "no claim, no witness: the witness raised to the slot, the adopt recorded", .keys = keys,
       .argv = kAdoptArgs, .reply = A({I(1), Any()}),
       .after = {h(kWitness, {{"slot", S("100")}, {"durable", S("0")}, {"adopted", S("100")},
                              {"adopted_ms", SIn("{now_ms}", "{t1_ms}")}, {"adopted_by", S("ops")}, {"adopts", S("1")}},
                   ttl(604800000))}},
      {.name = "a higher witness, a longer TTL: both kept, adopts counted",
       .given = {witness_of("200", 900000000)}, .keys = keys, .argv = kAdoptArgs, .reply = A({I(1), Any()}),
       .after = {h(kWitness, {{"slot", S("200")}, {"durable", S("0")}, {"adopted", S("100")},
                              {"adopted_ms", SIn("{now_ms}", "{t1_ms}")}, {"adopted_by", S("ops")}, {"adopts", S("3")}},
                   ttl(900000000))}},
      {.name = "a claim there: who and when, nothing written", .given = {claim_of("A")}, .keys = keys,
       .argv = kAdoptArgs, .reply = A({I(0), S("A"), S("5"), S("100"), S("0")})},
      {.name = "a claim key of another type: taken, nothing written", .given = {list(kOnce)}, .keys = keys,
       .argv = kAdoptArgs, .reply = A({I(0), S("(not a claim: list)"), S(""), S(""), S("")})},
      {.name = "a witness of another type: an error that names it, nothing written", .given = {list(kWitness)},
       .keys = keys, .argv = kAdoptArgs,
       .reply = Err("once_per witness k:once:witness holds a list, not a witness (something else wrote it): delete it "
                    "(redis-cli DEL k:once:witness)")},
      {.name = "ACL: HSET refused: the script's error, nothing written", .acl = {{"hset"}}, .keys = keys,
       .argv = kAdoptArgs, .reply = Raised(kRefused)},
      {.name = "ACL: EXISTS refused (the first command): the script's error", .acl = {{"exists"}}, .keys = keys,
       .argv = kAdoptArgs, .reply = Raised(kRefused)},
  };
}

std::vector<Row> drop_adopt_rows() {
  const std::vector<std::string> keys{kWitness};
  return {
      {.name = "ours: the adopt's record dropped, the witness kept", .given = {witness_of("100")}, .keys = keys,
       .argv = {"100", "5"}, .reply = I(1),
       .after = {h(kWitness, {{"slot", S("100")}, {"durable", S("0")}, {"adopts", S("2")}}, ttl(86400000))}},
      {.name = "another adopt since: 0, nothing changed", .given = {witness_of("100")}, .keys = keys,
       .argv = {"100", "4"}, .reply = I(0)},
      {.name = "no witness: 0", .keys = keys, .argv = {"100", "5"}, .reply = I(0)},
      {.name = "a witness of another type: 0, left alone", .given = {list(kWitness)}, .keys = keys,
       .argv = {"100", "5"}, .reply = I(0)},
      {.name = "ACL: HDEL refused: the script's error, the record stays", .acl = {{"hdel"}},
       .given = {witness_of("100")}, .keys = keys, .argv = {"100", "5"}, .reply = Raised(kRefused)},
  };
}

/// kProbeRights' ARGV: the probe key, the note key, the note's head, its ttl, the holder, then
/// the commands the renewals run.
std::vector<std::string> probe(std::string head = "A\n123", std::vector<std::string> commands = {"GET", "PEXPIRE", "SET"}) {
  std::vector<std::string> out{kProbe, kNote, std::move(head), "60000", "A"};
  out.insert(out.end(), commands.begin(), commands.end());
  return out;
}

std::vector<Row> probe_rights_rows() {
  const std::vector<std::string> keys{kKey};
  return {
      {.name = "every right: nothing refused, nothing written", .keys = keys, .argv = probe(),
       .reply = A({S(""), S("")})},
      {.name = "every right, held by another: the lease key untouched", .given = {str(kKey, "B", 5000)},
       .keys = keys, .argv = probe(), .reply = A({S(""), S("")})},
      {.name = "every right: our old note deleted", .given = {str(kNote, "A\n1\n+pexpire\nerr", 60000)},
       .keys = keys, .argv = probe(), .reply = A({S(""), S("")}), .after = {gone(kNote)}},
      {.name = "every right: another holder's note kept", .given = {str(kNote, "B\n1\n+pexpire\nerr", 60000)},
       .keys = keys, .argv = probe(), .reply = A({S(""), S("")})},
      {.name = "a command it does not know: not asked", .keys = keys, .argv = probe("A\n123", {"FLUSHALL"}),
       .reply = A({S(""), S("")})},
      {.name = "ACL: PEXPIRE refused: named, the note written", .acl = {{"pexpire"}}, .keys = keys, .argv = probe(),
       .reply = A({S("PEXPIRE"), S(kRefused)}),
       .after = {s(kNote, S("A\n123\n+pexpire\n" + kRefused), ttl(60000))}},
      {.name = "ACL: GET and SET refused: the first named", .acl = {{"get", "set"}}, .keys = keys, .argv = probe(),
       .reply = A({S("GET"), S(kRefused)})},
      {.name = "ACL: PEXPIRE refused, no head: named, no note", .acl = {{"pexpire"}}, .keys = keys,
       .argv = probe(""), .reply = A({S("PEXPIRE"), S(kRefused)})},
  };
}

std::vector<Row> read_refusal_rows() {
  const std::vector<std::string> keys{kKey};
  return {
      {.name = "no note", .keys = keys, .argv = {kNote}, .reply = A({S(""), I(-2), S("")})},
      {.name = "a note, the lease held: the note and its pttl",
       .given = {str(kNote, "A\n1\n+pexpire\nerr", 60000), str(kKey, "A", 5000)}, .keys = keys, .argv = {kNote},
       .reply = A({S("A\n1\n+pexpire\nerr"), In(58500, 60000), S("")})},
      {.name = "a note without expiry: -1", .given = {str(kNote, "x")}, .keys = keys, .argv = {kNote},
       .reply = A({S("x"), I(-1), S("")})},
      {.name = "a note key of another type: its error", .given = {hash(kNote, {{"f", "v"}})}, .keys = keys,
       .argv = {kNote}, .reply = A({S(""), I(-2), S(kWrongType)})},
      {.name = "ACL: GET refused: the refusal as text", .acl = {{"get"}}, .given = {str(kNote, "x", 60000)},
       .keys = keys, .argv = {kNote}, .reply = A({S(""), I(-2), S(kRefused)})},
      {.name = "ACL: PTTL refused: the note, -2", .acl = {{"pttl"}}, .given = {str(kNote, "x", 60000)},
       .keys = keys, .argv = {kNote}, .reply = A({S("x"), I(-2), S("")})},
  };
}

}  // namespace tables_once_rights

Table read_once_table() { return {"kReadOnce", std::string(lock::kReadOnce.source), tables_once_rights::read_once_rows()}; }
Table adopt_table() { return {"kAdopt", std::string(lock::kAdopt.source), tables_once_rights::adopt_rows()}; }
Table drop_adopt_table() { return {"kDropAdopt", std::string(lock::kDropAdopt.source), tables_once_rights::drop_adopt_rows()}; }
Table probe_rights_table() { return {"kProbeRights", std::string(lock::kProbeRights.source), tables_once_rights::probe_rights_rows()}; }
Table read_refusal_table() { return {"kReadRefusal", std::string(lock::kReadRefusal.source), tables_once_rights::read_refusal_rows()}; }

}  // namespace redisgo::luatable
