#pragma once
/// `redisgo_task list`: every key this Redis deployment coordinates, one line each (README
/// "A fleet view"). Keys are found by their fence counters ("<base>:fence", docs/DESIGN.md
/// "Keys"), which every acquisition writes and which outlive a lease by days: a key
/// used this week shows, held or not. SCAN only, on every node (every Cluster master);
/// everything else is read by one read-only script per key (lock/scripts.h kListKey).
///
/// The judgement (merging the nodes' answers under the quorum, the text and JSON) is pure
/// and unit-tested; run_list (list_scan.cpp) does the talking.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "lock/lease.h"

namespace redisgo::commands {

namespace list {

/// One node's answer for one key.
struct NodeKey {
  bool read = false;      ///< the script answered
  std::string error;      ///< when not (NOPERM: this user may not read the key)
  std::string holder;     ///< lease key's value ("" free)
  std::int64_t ttl_ms = -2;
  std::string fence;
  std::int64_t line = 0;  ///< -1: the line is not a sorted set
  std::int64_t pause_ttl_ms = -2;
  std::string paused_by, pause_reason, paused_since_ms, paused_until_ms;
  struct Slot {
    int slot = 0;
    std::string holder;
    std::int64_t ttl_ms = -2;
  };
  std::vector<Slot> slots;  ///< a semaphore's other slots that are held (1..63)
  /// Other slots whose key is not a string (slot, its type): something else wrote it.
  std::vector<std::pair<int, std::string>> other_type;
  std::string refusal;      ///< a lock::RefusalNote's text, or ""
};

/// The latest once_per claim seen for a key.
struct LastClaim {
  std::int64_t slot_start_s = 0;
  std::string holder, status;
};

/// A key as the quorum sees it.
struct Row {
  std::string key;
  /// "held", "free", "split" (no holder on a quorum, some nodes hold it), "unreadable".
  std::string state;
  std::string holder, host;
  std::optional<std::uint64_t> token;   ///< the fence counter (nullopt: unreadable, or none)
  bool fence_seen = false;              ///< a fence counter exists (a key only paused has none)
  std::optional<std::int64_t> since_s;  ///< the lease's grant: the token is the server's TIME in µs then
  std::int64_t ttl_ms = -2;             ///< the quorum's (the lowest of the nodes that hold it)
  std::vector<NodeKey::Slot> slots;     ///< other slots held (limit > 1)
  /// Slots whose key is of another type on any node that answered (slot, type): the daemons
  /// skip them, so the semaphore serves that many fewer.
  std::vector<std::pair<int, std::string>> other_type;
  std::int64_t line = 0;
  std::optional<LastClaim> claim;
  bool paused = false;
  std::string paused_by, pause_reason;
  std::int64_t paused_since_ms = 0, paused_until_ms = 0;
  /// A daemon holds back because its renewals were refused (the newest note any node has).
  std::optional<lock::RefusalNote> refusal;
  std::string error;                    ///< why unreadable
};

/// One node's keys: per key, its answer (nodes that lack a key say nothing for it).
struct NodeScan {
  std::string node;
  bool reachable = false;
  std::string error;       ///< SCAN failed (unreachable, NOPERM, ...)
  bool refused = false;    ///< credentials or TLS
  bool truncated = false;  ///< stopped at the bound
  std::vector<std::pair<std::string, NodeKey>> keys;
  std::vector<std::pair<std::string, LastClaim>> claims;
};

/// The rows, sorted by key, from every node's scan; `quorum` nodes must agree on a holder.
std::vector<Row> merge(const std::vector<NodeScan>& scans, int quorum);
void write_text(const std::vector<Row>& rows, const std::vector<NodeScan>& scans, std::ostream& out);
void write_json(const std::vector<Row>& rows, const std::vector<NodeScan>& scans, std::ostream& out);

}  // namespace list

/// Prints every key whose name matches `pattern` (a glob, as SCAN MATCH; "" = all). 0 when
/// a quorum of nodes could be scanned, 77 when credentials were refused, 69 otherwise.
int run_list(const config::Config& config, const std::string& pattern, bool json, std::ostream& out);

}  // namespace redisgo::commands
