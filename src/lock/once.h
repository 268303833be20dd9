#pragma once
/// once_per's rule for a node that shows no claim of a slot (docs/DESIGN.md "Restart
/// guard", once_per claims; redisgo_task(1), once_per): whether it may be believed, that
/// is, whether it "counts as unclaimed". The claim script (lock/once_scripts.h) decides
/// atomically on the server; the functions here do the same arithmetic on what a node
/// reported, so that the daemon, `check` and `adopt` can say why a node does not count.
///
/// A node counts when it shows no claim of slot S and one of:
///  - uptime: it has been up since before S could begin (S - P/2), counted as late as its
///    whole-second uptime allows: it cannot have lost a claim of S in a restart;
///  - adopt: an operator's `adopt` record for S is there and the node has been up since
///    before it was written: it cannot have lost a claim made after the declaration;
///  - witness: AOF is on, the server has WAITAOF (Redis >= 7.2), and its witness (the
///    highest slot a claim or an adopt recorded there, written by a node that could fsync
///    it) is at least as high as any node's: every claim it acknowledged was fsynced
///    before its child started, and a wiped or older copy of its data would show less.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.h"

namespace redisgo::lock {

using Millis = std::chrono::milliseconds;

/// A claim's record: who ran the slot, with which token, since when, how it ended.
struct ClaimRecord {
  std::string holder;
  std::string token;
  std::string start_ms;   ///< when the run started, ms since the epoch
  std::string status;     ///< exit status once the run ended; "" while it runs (or if its host died)
};

/// A claim as a log line shows it: "holder h (token 7, started ..., exit status 0)".
std::string describe_claim(const ClaimRecord& c);

/// What a node says about itself for the rule (lock/lua/lib/once.lua
/// once_state: one snapshot, taken in a script).
struct OnceNode {
  std::string node;                   ///< the configured node's name
  bool reachable = false;             ///< it answered
  redis::Fault fault = redis::Fault::kNone;
  std::string error;                  ///< why it did not answer
  std::optional<ClaimRecord> claim;   ///< its claim of the slot asked about
  std::int64_t uptime_s = -1;         ///< INFO server uptime_in_seconds; -1: INFO refused
  std::int64_t now_ms = 0;            ///< its TIME, ms since the epoch
  int aof = -1;                       ///< INFO persistence aof_enabled (0/1); -1 unknown
  std::string version;                ///< redis_version; "" unknown
  std::int64_t witness = 0;           ///< the witness: a slot start in s; 0 = none
  bool witness_durable = false;       ///< written by a node with AOF on and WAITAOF
  std::int64_t adopted = 0;           ///< the slot of the last `adopt` record; 0 = none
  std::int64_t adopted_ms = 0;        ///< when it was written, the node's TIME
  std::string adopted_by;             ///< "alice@ops1"
  std::int64_t adopts = 0;            ///< how many times `adopt` was run on this key here
  std::int64_t replicas = -1;         ///< INFO replication connected_slaves; -1 not asked
};

/// When the server started (ms since the epoch), as late as its uptime allows; nullopt
/// when it did not say.
std::optional<std::int64_t> server_started_ms(const OnceNode& n);
/// Whether a server of this redis_version has WAITAOF (7.2 and later).
bool supports_waitaof(std::string_view version);
/// AOF on and WAITAOF: what a claim there must be made durable with before it counts.
bool fsyncs_claims(const OnceNode& n);

/// How a node counts as unclaimed for a slot.
enum class Counted {
  kUptime,     ///< up since before the slot could begin
  kAdopt,      ///< up since before the slot's `adopt` record
  kWitness,    ///< AOF, WAITAOF and a witness as high as any node's
  kGuardOff,   ///< restart_guard = false
  kNo,         ///< it does not count: it may have lost a claim of the slot
};
/// "uptime", "adopt", "witness", "off" (the claim script's words), "".
const char* to_string(Counted how);
Counted counted_from(std::string_view word);

struct OnceVerdict {
  Counted how = Counted::kNo;
  /// kNo: why, in words ("started 2026-11-25T14:00:03Z, after the slot could begin
  /// (2026-11-25T12:00:00Z), and AOF is off"); otherwise how it counts.
  std::string why;
};
/// The rule for node `n` and the slot starting `slot_s` (s since the epoch), which can
/// begin at `guard_from_ms` (0: the guard is off), with `highest` the highest witness any
/// node showed. Does not look at n.claim (a claim there is another matter: taken).
OnceVerdict once_verdict(const OnceNode& n, std::int64_t slot_s, std::int64_t guard_from_ms, std::int64_t highest);
/// The highest witness among the nodes that answered (0: none).
std::int64_t highest_witness(const std::vector<OnceNode>& nodes);
/// What to do about nodes that do not count: adopt on a first deployment, AOF on Redis
/// >= 7.2 for maintenance restarts (said to the operator with the skip and by `check`).
/// `key_flag`: the key a --key gave the run ("" for the file's), which the adopt it
/// names must be given too, or it adopts the file's key.
std::string once_advice(const std::string& config_path, const std::string& key_flag = {});

/// How long the witness and the adopt record live: the longer of 7 days and 4 x once_per,
/// so that they outlast the gap between two runs (refreshed by every claim).
Millis witness_ttl(Millis once_per);
/// How long the claim's WAITAOF and WAIT may block on the server (each), before the claim
/// counts as not durable there.
inline constexpr Millis kDurableWait{2000};

}  // namespace redisgo::lock
