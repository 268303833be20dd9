#pragma once
/// TOML configuration -> validated structs (redisgo_task(1), CONFIGURATION).
///
/// load_file() never throws for bad input: it returns every error of the file at once
/// (each naming file, line, column, key, what was expected and what was found) and the
/// warnings (unknown keys, with their line). A secret (the Redis password) is resolved
/// here and never appears in a Diagnostic or in render_effective().

#include <algorithm>
#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace redisgo::config {

using Millis = std::chrono::milliseconds;

/// kCredential: a systemd credential (`password_credential`), read from
/// $CREDENTIALS_DIRECTORY or, outside a unit, from systemd's credential store.
enum class PasswordSource { kNone, kInline, kEnv, kFile, kCredential };

/// Where the lease lives (redisgo_task(1), PRODUCTION REDIS): exactly one of `host`, `nodes`,
/// `sentinels` (+ `sentinel_master`) or `cluster_nodes` in the file.
enum class Topology {
  kSingle,    ///< host: one server
  kRedlock,   ///< nodes: N independent servers, quorum N/2 + 1
  kSentinel,  ///< sentinels: the master that the sentinels name, followed across failovers
  kCluster,   ///< cluster_nodes: the master that owns the key's hash slot
};

/// TLS to every node and sentinel (`tls = true`).
struct TlsConfig {
  bool enabled = false;
  std::string ca_file;      ///< PEM CA bundle; empty = the system trust store
  std::string cert_file;    ///< client certificate (tls-auth-clients); empty = none
  std::string key_file;     ///< its key; set exactly when cert_file is
  std::string server_name;  ///< SNI and the name verified; empty = each node's host
  bool skip_verify = false; ///< no verification at all (tests only; warned at every start)
  bool operator==(const TlsConfig&) const = default;
};

struct RedisConfig {
  Topology topology = Topology::kSingle;
  /// kSingle / kRedlock: each "host:port" or "unix:///path/redis.sock". One entry = single
  /// instance (from `host`), several = Redlock (from `nodes`). Empty for the other modes.
  std::vector<std::string> nodes;
  /// kSentinel: the sentinels ("host:port") and the name of the master they watch.
  std::vector<std::string> sentinels;
  std::string sentinel_master;
  std::string sentinel_username;   ///< the sentinels' own ACL user; empty = none
  std::string sentinel_password;   ///< the sentinels' own password; empty = no AUTH. Never print.
  PasswordSource sentinel_password_source = PasswordSource::kNone;
  std::string sentinel_password_origin;
  /// After an acquisition, WAIT for this many replicas to have it (0 = do not wait).
  int sentinel_wait_replicas = 0;
  /// kCluster: seed nodes ("host:port"); the slot map is learnt from them.
  std::vector<std::string> cluster_nodes;
  TlsConfig tls;
  std::string key;                 ///< required
  std::string key_flag;            ///< the key --key gave ("" when it is the file's): advice names it
  bool monitor_try_all = true;     ///< true: contend forever; false: at most retries_count attempts
  int retries_count = 4;           ///< attempts when monitor_try_all = false (>= 1)
  Millis expire{5000};             ///< lease TTL
  /// Renewal interval. load_*() always sets it (> 0; default_cron(expire) when the file
  /// leaves it out). 0 only in a Config built in code, and then means default_cron(expire).
  Millis cron{0};
  std::string value;               ///< holder id; empty = generated at start (hostname:pid:random)
  std::string username;            ///< ACL user; empty = none (plain AUTH password)
  std::string password;            ///< resolved secret; empty = no AUTH. Never print.
  PasswordSource password_source = PasswordSource::kNone;
  /// env var name, or the path of the file or credential (printable); empty for inline.
  std::string password_origin;
  int db = 0;
  Millis connect_timeout{500};
  Millis io_timeout{500};
  /// oneshot: how long a run waits for a quorum of nodes to answer before it gives up with 69
  /// (a busy lease is still waited for as monitor_try_all says).
  Millis unreachable_timeout{60'000};
  double drift_factor = 0.01;      ///< clock drift allowance as a fraction of expire (Redlock)
  Millis drift_fixed{2};           ///< plus this constant
  /// A server up for less than `expire` grants an absent lease key to nobody new
  /// (docs/DESIGN.md "Restart guard"). false: off.
  bool restart_guard = true;
  /// The waiting line (docs/DESIGN.md "The waiting line", invariant 11): first come, first
  /// served, one wake per release. false: every waiter races for a freed lease.
  bool fair = true;
  /// The time a woken head of the line has to take its turn: max(1 s, io_timeout).
  Millis turn_window() const { return std::max(Millis(1000), io_timeout); }
  bool operator==(const RedisConfig&) const = default;
};

enum class Strategy { kExponential, kConstant, kSimple, kZero, kStop, kAdaptive };
enum class Jitter { kNone, kFull, kEqual, kDecorrelated };

struct BackoffConfig {
  Strategy strategy = Strategy::kExponential;
  Millis initial{30};
  Millis max{1000};
  double factor = 2.0;
  Jitter jitter = Jitter::kFull;
  std::vector<Millis> intervals;   ///< strategy = simple
  bool operator==(const BackoffConfig&) const = default;
};

enum class Mode { kOneshot, kSupervise };
enum class Restart { kAlways, kOnFailure, kNever };

struct TaskConfig {
  /// The argv to exec. A string command in the file becomes {"/bin/sh", "-c", string}.
  /// May be empty in the file when the command comes after `--` on the command line;
  /// the CLI checks that one of them gives a command.
  std::vector<std::string> command;
  bool command_is_shell = false;   ///< came from a string
  Mode mode = Mode::kOneshot;
  Restart restart = Restart::kOnFailure;
  Millis restart_delay{1000};      ///< 0 allowed: restart at once
  int kill_signal = SIGTERM;
  Millis kill_grace{2000};
  std::optional<Millis> timeout;   ///< oneshot only; nullopt = none
  /// oneshot only: how long a run waits for the lease, from its start (--wait-timeout
  /// overrides it); 0 = try once (--no-wait); nullopt = as the [redis] retry keys say.
  std::optional<Millis> wait_timeout;
  std::string workdir;             ///< empty = inherit
  std::map<std::string, std::string> env;
  /// supervise: more than restart_limit child exits within restart_window make the leader
  /// step down (release, hold off for step_down_hold) so another host can take over.
  int restart_limit = 5;
  Millis restart_window{60'000};
  /// How long a leader that stepped down does not contend; nullopt = 2 x expire
  /// (effective_step_down_hold()).
  std::optional<Millis> step_down_hold;
  /// Semaphore: at most this many holders at once, each on its own slot lease
  /// (REDISGO_TASK_SLOT = 0..limit-1). 1 = the plain lease.
  int limit = 1;
  /// oneshot: at most one run per slot of this length since the Unix epoch, cluster-wide
  /// (redisgo_task(1), MODES). nullopt = no slots.
  std::optional<Millis> once_per;
  /// supervise: run while leader every health_interval, killed after health_timeout;
  /// health_fall consecutive failures make the leader step down. Empty = no health check.
  std::vector<std::string> health_command;
  bool health_command_is_shell = false;
  Millis health_interval{10'000};
  Millis health_timeout{5'000};
  int health_fall = 3;
  bool operator==(const TaskConfig&) const = default;
};

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };

struct LogConfig {
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kText;
  bool operator==(const LogConfig&) const = default;
};

/// [metrics]: off unless one of them is set.
struct MetricsConfig {
  std::string listen;    ///< "host:port" for GET /metrics; empty = no HTTP server
  std::string textfile;  ///< rewritten atomically for node_exporter; empty = none
  bool enabled() const { return !listen.empty() || !textfile.empty(); }
  bool operator==(const MetricsConfig&) const = default;
};

struct Config {
  std::string source;  ///< file path it was read from
  RedisConfig redis;
  BackoffConfig backoff;
  TaskConfig task;
  LogConfig log;
  MetricsConfig metrics;
  /// Field-wise; note that `source` takes part, so compare configs read from one place.
  bool operator==(const Config&) const = default;
};

/// One problem found in a file.
struct Diagnostic {
  std::string file;
  int line = 0;       ///< 0 = unknown
  int column = 0;     ///< 0 = unknown
  std::string key;    ///< dotted, e.g. "redis.expire"; empty for a syntax error
  std::string message;///< e.g. "expected a duration such as \"5s\", found \"5 seconds\""
  /// "file:line:col: key: message" (parts that are unknown are left out).
  std::string str() const;
};

struct LoadResult {
  std::optional<Config> config;     ///< set only when errors is empty
  std::vector<Diagnostic> errors;
  std::vector<Diagnostic> warnings;
};

/// Looks up an environment variable (injected so tests need not touch the real one).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
/// The environment variable that overrides [redis] value (the holder id's prefix) when set.
inline constexpr const char* kHolderPrefixEnv = "REDISGO_TASK_HOLDER_PREFIX";
EnvLookup process_env();
/// Erases the values of the environment variables the config read a password from
/// (password_env, sentinel_password_env), in place and from the environment: once loaded,
/// a secret must not stay readable in /proc/<pid>/environ of the daemon or its keeper.
void scrub_secret_environment(const Config& config);

/// Reads a password file again (password_file, or the path password_credential resolved
/// to: RedisConfig::password_origin), as the loader did, for a password rotated under a
/// running daemon. The password, or nullopt and `why` (which never contains it).
std::optional<std::string> read_password_file(const std::string& path, std::string& why);

/// What a command needs of the file. `status` and `handover` need only [redis] (and
/// [log]): a broken [task], [backoff] or [metrics] is not their business (redisgo_task(1), COMMANDS).
enum class Scope { kAll, kRedis };

/// Reads and validates a file. A file that cannot be read is one error.
LoadResult load_file(const std::string& path, const EnvLookup& env = process_env(), Scope scope = Scope::kAll);
/// Same, from text; `source` names it in diagnostics.
LoadResult load_string(const std::string& text, const std::string& source,
                       const EnvLookup& env = process_env(), Scope scope = Scope::kAll);

/// A problem found after loading (e.g. `task.command` does not resolve), placed at the
/// key's line and column in config.source when the file still has it there.
Diagnostic diagnostic_at(const Config& config, const std::string& dotted_key, std::string message);

/// The effective configuration (defaults filled in) as TOML, password masked as
/// "********" with where it came from noted in a comment. For `validate`.
std::string render_effective(const Config& config);

/// The default of every key, as TOML with section headers (`validate --defaults`); the
/// form is described at the top of its output and in redisgo_task(1), validate. The docs'
/// tables of defaults are checked against it.
std::string render_defaults();

/// The manual's maxima: every duration at most one year, expire at most one day (deadlines and
/// poll timeouts stay far from any overflow), a key at most 512 bytes.
inline constexpr Millis kMaxDuration{365LL * 24 * 3600 * 1000};
inline constexpr Millis kMaxExpire{24LL * 3600 * 1000};

/// Redis Cluster: the derived names ({key}:fence, {key}:released) share the key's slot
/// when the key has a non-empty hash tag, or has no '}' at all (then "{key}" is the tag).
bool cluster_safe_key(const std::string& key);
inline constexpr std::size_t kMaxKeyBytes = 512;
/// A holder id prefix ([redis] value, REDISGO_TASK_HOLDER_PREFIX, --holder-prefix) goes into
/// notes that status and list split at newlines and onto their lines: a control character
/// in it is refused. What an error says after "found" (nullopt: there is none):
/// "\"evil\\n0\" (\\n at byte 5)".
std::optional<std::string> control_character_found(const std::string& text);
/// Floors: a renewal every 100 ms at most (3 commands each: 30/s per node), and a crash
/// loop counted over at least a second.
inline constexpr Millis kMinCron{100};
inline constexpr Millis kMinRestartWindow{1000};
/// A semaphore of more slots than this is a misconfiguration (each waiter's attempt
/// names every slot key).
inline constexpr int kMaxLimit = 64;
/// once_per slots shorter than this cannot tell hosts' clocks apart (P/2 of skew).
inline constexpr Millis kMinOncePer{1000};
/// A health check at most every 100 ms.
inline constexpr Millis kMinHealthInterval{100};

/// The renewal interval when the file leaves `cron` out: expire/5, rounded down to ms (1s for
/// the default 5s). It leaves the default kill_grace (2s) a cron to spare, so that defaults
/// pass `check`'s margins: a failed renewal is retried before the child must be told to stop.
inline Millis default_cron(Millis expire) { return expire / 5; }

/// step_down_hold, or 2 x expire when the file leaves it out.
Millis effective_step_down_hold(const Config& config);

/// Time between the SIGKILL to the child's group and the local lease deadline: covers
/// signal delivery and reaping. 1/20 of the TTL, at least 5 ms, at most 100 ms.
Millis kill_margin(Millis expire);

/// The name in `known` closest to `name` when it is close enough to be a typo ("did you
/// mean"); shared with the CLI's subcommand names.
std::optional<std::string> closest_name(std::string_view name, const std::vector<std::string_view>& known);

/// Name <-> value helpers shared with the CLI and logs.
std::optional<int> parse_signal(const std::string& name);   ///< "SIGTERM", "TERM", "15"
std::string signal_name(int sig);                            ///< "SIGTERM"
const char* to_string(Strategy);
const char* to_string(Jitter);
const char* to_string(Mode);
const char* to_string(Restart);
const char* to_string(LogLevel);
const char* to_string(LogFormat);

}  // namespace redisgo::config
