#pragma once
/// Prometheus metrics of one daemon (redisgo_task(1), METRICS).
///
/// Metrics is a fixed set of series updated by the main loop and the renewal thread and
/// read by the exporter: every update is an atomic or a short critical section, never I/O,
/// so it costs the lease paths nothing. With [metrics] off the daemon still updates it
/// (a few atomic adds per lease period) but no Exporter exists: no thread, no socket, no
/// file.
///
/// Exporter serves the text exposition format 0.0.4 at GET /metrics on `listen` and/or
/// rewrites `textfile` atomically (temp file in the same directory, then rename) for
/// node_exporter's textfile collector. One thread of its own, poll()-driven, stopped and
/// joined by stop() or the destructor; the textfile's writes on another (a write that
/// blocks, on a hung NFS mount, holds up neither the HTTP server nor the stop).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "util/clock.h"

namespace redisgo::metrics {

/// What the daemon is doing, for redisgo_task_state (one-hot: the current state's series is
/// 1, every other 0). The cannot-reach and refused states win over the others: they say
/// that this host cannot run the job.
enum class State {
  kStandby,             ///< contending: the lease is held by another, or free and about to be taken
  kInLine,              ///< fair = true: waiting in the key's waiting line for its turn
  kRestartGuard,        ///< a Redis node restarted less than expire ago and grants nothing yet
  kPaused,              ///< the key is paused (`redisgo_task pause`)
  kLeader,              ///< holds a lease (any slot); the child runs or is about to
  kSteppedDown,         ///< stepped down, holding back for step_down_hold
  kUnreachable,         ///< too few Redis nodes answer for a quorum
  kCredentialsRefused,  ///< Redis refused the credentials (AUTH, ACL)
  kTlsFailed,           ///< the TLS verification of the Redis nodes failed
  kErrorReply,          ///< another error reply keeps attempts from a quorum (e.g. NOPERM)
  /// Its renewals were refused (the ACL user lacks a right they need): it stepped down and
  /// does not take the lease until a probe finds the right granted
  kRenewalRefused,
};
inline constexpr std::size_t kStateCount = 11;
/// The label value: "standby", "in_line", "restart_guard", "paused", "leader",
/// "stepped_down", "unreachable", "credentials_refused", "tls_failed", "error_reply",
/// "renewal_refused".
const char* to_string(State s);
/// The state that the cause of attempts reaching no quorum puts the daemon in
/// ("credentials", "tls", "error", "unreachable"; "" = none: a quorum answers).
std::optional<State> state_of_cause(std::string_view cause);

/// redisgo_task_redis_errors_total's kinds (every one is shown for every node from the
/// start): "unreachable" (a name that does not resolve, a connect refused or unreachable),
/// "timeout", "closed" (the server closed an open connection), "protocol" (not RESP),
/// "auth" (credentials or an ACL right refused), "tls", "reply" (another error reply).
inline constexpr std::size_t kRedisErrorKindCount = 7;
extern const char* const kRedisErrorKinds[kRedisErrorKindCount];
/// redisgo_task_control_requests_total's kinds: "handover", "pause", "resume".
inline constexpr std::size_t kControlKindCount = 3;
extern const char* const kControlKinds[kControlKindCount];

/// The standard process metrics' values (process_*), read at each render; a value that
/// could not be read leaves its series out.
struct ProcessStats {
  std::optional<double> start_time_seconds;  ///< unix seconds
  std::optional<double> cpu_seconds;         ///< user + system
  std::optional<double> resident_bytes;
  std::optional<double> open_fds;
};
/// This process's, from /proc/self (stat, fd) and /proc/stat's boot time.
ProcessStats read_process_stats();
using ProcessProbe = ProcessStats (*)();

/// Every series carries key="<lock key>", so several daemons on one host stay apart.
class Metrics {
 public:
  /// `nodes`: the configured node names, each reported by redisgo_task_node_up (0 until
  /// the first answer) and redisgo_task_redis_errors_total. `clock` computes the lease's
  /// remaining seconds at render time; `process` reads the process_* values (tests inject one).
  Metrics(std::string key, std::vector<std::string> nodes, const Clock& clock = SystemClock::instance(),
          ProcessProbe process = read_process_stats);

  /// redisgo_task_token: the fencing token of the current (or last) lease.
  void set_token(std::uint64_t token);
  /// redisgo_task_lease_remaining_seconds: until this local deadline; nullopt = 0 (no lease).
  void set_lease_deadline(std::optional<Clock::time_point> deadline);
  /// redisgo_task_acquisitions_total.
  void add_acquisition();
  /// redisgo_task_renewals_total{result="confirmed"|"failed"|"lost"} and, for every
  /// round, redisgo_task_renewal_duration_seconds (histogram).
  void add_renewal(std::string_view result, double seconds);
  /// redisgo_task_wait_seconds (histogram): a wait for the lease that ended in acquiring it.
  void add_wait(double seconds);
  /// redisgo_task_line_length: the waiting line's length as of this daemon's last attempt.
  void set_line_length(std::int64_t length);
  /// redisgo_task_renewal_refused_info{right="+pexpire"}: 1 while this daemon holds back
  /// because its renewals were refused, naming the right (or what else was refused, e.g.
  /// "credentials"); nullopt: the series is absent.
  void set_renewal_refused(std::optional<std::string> right);
  /// redisgo_task_lease_losses_total{cause="lost"|"deadline"|"taken"}.
  void add_lease_loss(std::string_view cause);
  /// redisgo_task_child_starts_total.
  void add_child_start();
  /// redisgo_task_freezes_past_lease_total: this host was frozen (SIGSTOP, a paused VM, a
  /// stalled host) past its lease deadline with its child alive.
  void add_freeze_past_lease();
  /// redisgo_task_child_last_exit_code (128+N for signal N); absent before the first exit.
  void set_child_exit(int code);
  /// redisgo_task_step_downs_total{cause="restart_limit"|"health"|"handover"|"cannot_start"}.
  void add_step_down(std::string_view cause);
  /// redisgo_task_once_per_slots_skipped_total{reason="restart_guard"|"not_durable"|"claim_failed"}:
  /// a once_per slot that this run did not run though nobody had (too few nodes count as
  /// unclaimed; the claim not made durable in time; the claim not written on a quorum).
  void add_once_skipped(std::string_view reason);
  std::uint64_t once_skipped(std::string_view reason) const;
  /// redisgo_task_control_requests_total{kind="handover"|"pause"|"resume"}: an operator's
  /// request that reached this daemon.
  void add_control_request(std::string_view kind);
  /// redisgo_task_node_up{node="..."} (0/1). An unknown node name is added.
  void set_node_up(std::string_view node, bool up);
  /// redisgo_task_redis_errors_total{node="...",kind="..."}: a failure of a call or a
  /// connection to `node`, of one of kRedisErrorKinds. An unknown node name is added.
  void add_redis_error(std::string_view node, std::string_view kind);
  /// add_redis_error for `node`, as a function that connections may keep and call from any
  /// thread: it shares the series with this object and outlives it safely.
  std::function<void(std::string_view kind)> redis_error_counter(std::string node);
  /// redisgo_task_state{state="..."}: 1 for `state`, 0 for the others.
  void set_state(State state);
  State state() const;
  /// redisgo_task_line_position: our place in the waiting line (1 = head; 0 = not in line).
  void set_line_position(std::int64_t position);
  /// redisgo_task_last_success_timestamp_seconds: a child exited 0 at this time (unix seconds).
  void set_last_success(double unix_seconds);
  /// redisgo_task_child_last_start_timestamp_seconds: a child started at this time.
  void set_last_start(double unix_seconds);
  /// redisgo_task_textfile_write_errors_total: the textfile writes that failed so far (the
  /// exporter's count, which it copies here).
  void set_textfile_write_errors(std::uint64_t total);
  /// What the config says that alerts need (set once, at start).
  struct Settings {
    std::string mode = "oneshot";  ///< redisgo_task_config_info{mode}: "oneshot" or "supervise"
    int limit = 1;                 ///< redisgo_task_config_info{limit}
    double expire_seconds = 0;     ///< redisgo_task_expire_seconds: the lease's TTL
    double once_per_seconds = 0;   ///< redisgo_task_once_per_seconds; 0 = no once_per
  };
  void configure(const Settings& settings);
  /// A previous textfile's redisgo_task_last_success_timestamp_seconds for this key, when it
  /// has one above ours: a oneshot run from cron carries the last success of the runs
  /// before it (else one run that loses the lease to another host would erase it).
  /// True when it took a value.
  bool restore_last_success(std::string_view previous_textfile);

  /// A previous textfile's redisgo_task_once_per_slots_skipped_total for this key, where it
  /// is above ours: a oneshot run from cron carries the count of the runs before it, so that
  /// the counter only grows on a host and increase() sees every skipped slot. True when it
  /// took a value.
  bool restore_once_skipped(std::string_view previous_textfile);

  /// The whole exposition, # HELP and # TYPE lines included, label values escaped.
  std::string render() const;
  /// render() and redisgo_task_textfile_written_timestamp_seconds = `now_unix`: the
  /// textfile's text (a series that only a file needs: over HTTP, Prometheus' own `up` and
  /// scrape time say the same).
  std::string render_textfile(double now_unix) const;
  /// What a oneshot run leaves in its textfile when it exits: the series that describe
  /// the finished run (build info, config, once_per, last start, last success, last exit
  /// code, once_per slots skipped) and none of the live ones (state, nodes, Redis errors,
  /// the process, the written timestamp), so that the file reports no leader that is gone
  /// and no stale daemon, but keeps cron's last success.
  std::string render_record() const;

  /// Bumped by every update that changes a value (the exporter rewrites the textfile
  /// when it moved).
  std::uint64_t version() const;

 private:
  struct Impl;
  /// Bumps the version (relaxed: it only tells the exporter that something moved).
  void changed();

  std::shared_ptr<Impl> impl_;
};

struct ExporterOptions {
  /// "host:port" (IPv4 address, "[v6]:port" or "localhost:port") to serve GET /metrics; empty = no server.
  std::string listen;
  /// File to rewrite atomically; empty = none.
  std::string textfile;
  /// The textfile is rewritten at most this often when a value changed, and at least
  /// every `textfile_refresh` (the remaining-seconds gauge moves on its own).
  /// The exporter learns of changes by looking at Metrics::version() this often (updates
  /// never wake it: they do no I/O). Below 10 ms counts as 10 ms, so it cannot spin.
  std::chrono::milliseconds textfile_min_interval{1000};
  /// Below textfile_min_interval counts as textfile_min_interval.
  std::chrono::milliseconds textfile_refresh{15000};
  /// A client must send its whole request head within this time after it connected, and
  /// then take the whole response within this time; otherwise it is closed. Below 1 ms
  /// counts as 1 ms.
  std::chrono::milliseconds client_timeout{5000};
  /// How long the start waits for the first textfile write, and a stop for the last one.
  std::chrono::milliseconds textfile_write_bound{1000};
  /// Writes `content` to `path` atomically; "" or why it failed. Empty = the real one
  /// (a temp file beside it, renamed over it). Tests inject one that blocks.
  std::function<std::string(const std::string& path, const std::string& content)> textfile_write;
  /// What stop() does with the textfile.
  enum class AtStop {
    kWrite,   ///< writes it one last time and leaves it
    kRemove,  ///< removes it, unless another process has written it since our last write
    kRecord,  ///< replaces it with Metrics::render_record()
  };
  AtStop at_stop = AtStop::kWrite;
  /// The wall clock (unix seconds) of redisgo_task_textfile_written_timestamp_seconds.
  /// Empty = the system clock. Tests inject one.
  std::function<double()> wall_clock;
};

/// The text of the file at `path` (at most 1 MiB), or "" when it cannot be read (absent,
/// not a regular file) or the read did not end within `bound` (a hung mount: the read is
/// left to a thread of its own). For Metrics::restore_last_success at start.
std::string read_previous_textfile(const std::string& path, std::chrono::milliseconds bound);

/// HTTP: GET and HEAD /metrics (a query string is ignored) answer 200 with
/// `Content-Type: text/plain; version=0.0.4; charset=utf-8`; another path 404, another
/// method 405, a request that does not parse 400, a request head over 8 KiB 431. Every
/// response carries Content-Length and `Connection: close`. At most 32 clients at once
/// (one more is accepted and closed at once); a client past client_timeout is reset.
class Exporter {
 public:
  /// Binds the listen address and writes the textfile once before returning, so a bad
  /// address or an unwritable directory fails at start (throws redisgo::Error naming the
  /// address or path and the errno text). Starts the thread.
  /// It sets redisgo_task_textfile_write_errors_total in `metrics` from its writer's count.
  Exporter(Metrics& metrics, ExporterOptions options);
  /// stop(), when it was not called.
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;
  /// The bound port (useful with listen = "127.0.0.1:0"); 0 when not listening.
  int port() const;
  /// Why the last textfile write after start failed ("" once a later write succeeded).
  /// A failed rewrite is not fatal: it is retried at the next textfile_min_interval.
  std::string last_error() const;
  /// Textfile writes that failed since start.
  std::uint64_t textfile_failures() const;
  /// Stops the HTTP server (within ~100 ms) and does with the textfile what
  /// ExporterOptions::at_stop says (a last write, its removal, or the run's record), waiting
  /// at most textfile_write_bound for that. "" when it was done (or there is no textfile);
  /// else what happened to it: a write still blocked then (a hung mount) is left to its
  /// thread, which ends when the write returns; a file that another process wrote since our
  /// last write is left in place, said so. Call once; later calls return "".
  std::string stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redisgo::metrics
