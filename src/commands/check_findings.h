#pragma once
/// The judgement half of `redisgo_task check` (commands/check.h does the talking): pure
/// functions from what a node answered, or from the config, to findings, and how the
/// findings print and decide the exit status. Kept free of I/O so that every threshold
/// is unit-tested (tests/unit/commands_check_test.cpp).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "lock/once.h"
#include "redis/topology.h"

namespace redisgo::commands::check {

using Millis = std::chrono::milliseconds;

/// kSkip: a check the ACL user may not make (NOPERM); the finding names the right it needs.
/// It is not a fault of the server: `check` still exits 0 when every other finding is ok.
enum class Level { kOk, kWarn, kFail, kSkip };
/// "ok", "warn", "fail", "skip".
const char* to_string(Level level);

/// One line of the report.
struct Finding {
  Level level = Level::kOk;
  std::string check;    ///< "reachable", "version", "role", "maxmemory-policy", ...
  std::string node;     ///< the server ("127.0.0.1:6379"); empty: the setup as a whole
  std::string message;  ///< what was found, with the figures
  std::string hint;     ///< what to do about it; empty when there is nothing to do
  /// Machine-readable extras for --json: name -> a JSON value already encoded
  /// ("12.5", "\"noeviction\"", "true").
  std::vector<std::pair<std::string, std::string>> fields;
};

/// 0 when every finding is ok or skip, 1 when any is warn or fail, 69 (kExitUnavailable) when
/// fewer than a quorum of the nodes could be reached (whatever the findings say), 77
/// (kExitNoPerm) instead when a node refused the credentials or failed TLS verification:
/// as every other subcommand, so that a script can tell a wrong password from an outage.
int exit_code(const std::vector<Finding>& findings, bool quorum_reachable, bool refused = false);

/// One line per finding: "<level> <check> [<node>]: <message>[. Fix: <hint>]".
void write_text(const std::vector<Finding>& findings, std::ostream& out);

/// What --json prints around the findings.
struct Report {
  std::string config;       ///< the config file's path
  std::string key;
  std::string topology;     ///< "host", "nodes", "sentinels", "cluster_nodes"
  int nodes = 0;            ///< servers checked (the located one for Sentinel/Cluster)
  int reachable = 0;
  int quorum = 0;
  std::vector<Finding> findings;
  int exit = 0;
};
/// One JSON object and a newline.
void write_json(const Report& report, std::ostream& out);

/// Whether a call's error text is the ACL's refusal (NOPERM): what `check` cannot find out
/// for lack of a right is a skip, not a warning about the server.
bool acl_refused(std::string_view why);
/// A skip for check `check` on `node`: `what` could not be read (`why`), and `right` is the
/// ACL rule that lets this user read it ("+info").
Finding skip(std::string check, std::string node, const std::string& what, const std::string& why,
             const std::string& right);

/// A finding (check name, node "" when it concerns none, what was found, what to do).
Finding make(Level level, std::string check, std::string node, std::string message, std::string hint = {});

/// A JSON string literal (quotes included).
std::string json_quote(std::string_view s);
/// A JSON number with up to 3 decimals ("12.5", "-0.125", "3").
std::string json_number(double v);

// ---- what the nodes answered ---------------------------------------------------------

/// INFO's "field:value" lines (sections and blank lines skipped, "\r" dropped).
std::map<std::string, std::string> parse_info(std::string_view text);

/// "7.0.15" -> {7, 0, 15}; a missing part is 0. Nullopt when it does not start with a number.
struct Version {
  int major = 0, minor = 0, patch = 0;
  auto operator<=>(const Version&) const = default;
};
std::optional<Version> parse_version(std::string_view text);

/// `version` as INFO gave it (empty: INFO could not be read, `why` says why).
/// `acl_user`: the config names a username (AUTH user pass needs 6.0).
Finding version_finding(const std::string& node, const std::string& version, bool acl_user, const std::string& why);

/// `role` from ROLE ("master", "slave", "replica", "sentinel") or INFO replication; empty
/// when neither could be read (`why`). `redis_mode` is INFO's ("standalone", "cluster",
/// "sentinel"; empty when unknown). `master_of` names its master for a replica ("ip:port").
Finding role_finding(const std::string& node, const std::string& role, const std::string& redis_mode,
                     const std::string& master_of, config::Topology topology, const std::string& why);

/// `policy` from CONFIG GET or INFO memory (empty: neither answered, `why`);
/// `maxmemory` in bytes when known.
Finding memory_finding(const std::string& node, const std::string& policy, std::optional<std::int64_t> maxmemory,
                       const std::string& why);

/// What a node said about its durability.
struct Persistence {
  std::optional<bool> aof;           ///< INFO persistence aof_enabled
  std::optional<std::string> save;   ///< CONFIG GET save ("" = no snapshots)
  std::string appendfsync;           ///< CONFIG GET appendfsync, when it answered
  std::string why;                   ///< why a part is missing
};
/// `guarded`: the restart guard is on and can read this server's uptime, so a restart that
/// loses data costs a wait of one expire, not exclusion (ok instead of warn).
Finding persistence_finding(const std::string& node, const Persistence& p, Millis expire, config::Topology topology,
                            bool guarded = false);

/// The restart guard on one server: off, on (uptime_s from INFO server), or unable to apply
/// (no uptime: INFO refused, `why`).
Finding guard_finding(const std::string& node, bool enabled, std::optional<std::int64_t> uptime_s,
                      const std::string& why);

/// A server's identity (INFO server run_id), per configured node.
struct ServerId {
  std::string node;
  std::string run_id;  ///< empty: unknown (unreachable, INFO refused)
};
/// One `fail` per group of nodes that are the same server (equal run_id); `quorum` is
/// the configuration's, for the explanation. None when all differ.
std::vector<Finding> duplicate_findings(const std::vector<ServerId>& ids, int quorum);

/// One TIME round trip, all in µs since the Unix epoch: this host's clock when the
/// request went out and when the reply came back, and the server's TIME.
struct ClockSample {
  std::int64_t send_us = 0;
  std::int64_t recv_us = 0;
  std::int64_t server_us = 0;
};
/// The server's clock minus this host's, and how far off that can be (half the round
/// trip: the server read its clock somewhere inside it).
struct ClockOffset {
  std::int64_t offset_us = 0;
  std::int64_t uncertainty_us = 0;
};
/// offset = server − (send + recv)/2, ± (recv − send)/2.
ClockOffset offset_of(const ClockSample& s);
/// The sample with the shortest round trip (the tightest bound); nullopt for none.
std::optional<ClockOffset> best_offset(const std::vector<ClockSample>& samples);
/// "TIME" reply {"seconds", "microseconds"} -> µs since the epoch.
std::optional<std::int64_t> parse_time_reply(const std::string& seconds, const std::string& micros);
/// Offsets larger than this (beyond the uncertainty) are warned about: a tenth of
/// expire, at most 1 s, and with once_per at most a quarter of it (hosts agree on a slot
/// only while their clocks differ by less than half of it; each host may be off either way).
Millis clock_limit(Millis expire, std::optional<Millis> once_per = std::nullopt);
Finding clock_finding(const std::string& node, const ClockOffset& offset, Millis expire,
                      std::optional<Millis> once_per = std::nullopt);

/// The same arithmetic as the config's cross-check (config/loader_cross_checks.cpp): what a renewal cycle
/// needs of the lease, and what is left over.
struct Margins {
  Millis cron{0};
  Millis kill_grace{0};
  Millis drift{0};        ///< ceil(expire × drift_factor) + drift_fixed + kill margin
  Millis need{0};         ///< cron + kill_grace + drift
  Millis expire{0};
  Millis spare{0};        ///< expire − need (> 0 in a valid config)
  Millis round_trip{0};   ///< connect_timeout + io_timeout: a renewal through a reconnect
};
Margins margins(const config::Config& config);
Finding margin_finding(const config::Config& config);

/// The key's waiting line on one node against this config's `fair` (docs/DESIGN.md "The
/// waiting line": mixed settings). `length`: waiters in the line; `outside`: subscribers of
/// the shared release channel (waiters with fair = false, or a version without the line; -1
/// unknown). Nullopt `length`: the line could not be read (`why`).
Finding line_finding(const std::string& node, bool fair, std::optional<std::int64_t> length, std::int64_t outside,
                     const std::string& line_key, const std::string& channel, const std::string& why);

/// Redlock: how many nodes answered against the quorum.
Finding quorum_finding(int reachable, int nodes, int quorum);

/// TLS: the peer line of the connection ("TLS TLSv1.3, certificate /CN=..., ...
/// expires ... (in N days)"): ok, warn within 14 days of expiry, fail once expired.
Finding tls_finding(const std::string& node, const std::string& peer);

/// Sentinel: what the sentinels said, judged, and the master a majority of them names
/// (the one the daemon would use; none without a majority, as the locator does).
struct SentinelView {
  std::vector<Finding> findings;
  std::optional<redis::Endpoint> master;
  std::vector<std::string> replicas;  ///< as the first sentinel naming the master lists them
  std::string replicas_error;         ///< why it could not list them
};
SentinelView sentinel_findings(const redis::SentinelReport& report, const std::string& master_name, int wait_replicas);

/// The "replicas" finding of a Sentinel setup. `online_on_master`: the replicas the master
/// itself counts online (INFO replication), which is what WAIT counts; when known it decides
/// sentinel_wait_replicas, whatever the sentinels' list says (a sentinel learns of a new
/// replica only at its next INFO of the master). A list the sentinels would not give
/// (`replicas_error`) is a skip when the master could not tell either.
Finding replica_finding(const std::vector<std::string>& replicas, const std::string& replicas_error,
                        const std::string& master, int wait_replicas, std::optional<int> online_on_master);
/// Replicas that INFO replication shows in state=online (the fields slave0, slave1, ...).
std::optional<int> online_replicas(const std::map<std::string, std::string>& info);

/// Cluster: the seeds' failures and the owner of the key's slot.
struct ClusterView {
  std::vector<Finding> findings;
  std::optional<redis::Endpoint> owner;
};
ClusterView cluster_findings(const redis::ClusterReport& report, const std::string& key);

/// once_per (redisgo_task(1), once_per): what one server said for the rule (kReadOnce), with
/// the claims of the slot nearest to now and of the one after it.
struct OnceProbe {
  std::string node;
  std::optional<lock::OnceNode> state;  ///< nullopt: not read (`why`)
  std::string why;
  std::optional<lock::ClaimRecord> current, next;
  std::string appendfsync;              ///< CONFIG GET appendfsync ("" unknown)
  std::string waitaof_error;            ///< WAITAOF 0 0 0 refused ("" = ran, or not asked)
  std::string wait_error;               ///< WAIT 0 0 refused (Sentinel, Cluster)
};
/// Per node: whether it counts as unclaimed for the next slot to run (the one nearest to
/// now when it has not run, else the one after), whether it still would after a restart, and
/// what keeps its claims from counting (appendfsync no, WAITAOF or WAIT refused, a Sentinel or
/// Cluster master without a replica); then for the setup: whether that slot would run or be
/// skipped, and what to do. `now_ms`: this host's clock.
std::vector<Finding> once_findings(const std::vector<OnceProbe>& probes, const config::Config& config,
                                   std::int64_t now_ms, int quorum);

/// "1.2 ms" / "-350.0 ms" / "2.31 s" for figures in messages.
std::string format_us(std::int64_t us);

}  // namespace redisgo::commands::check
