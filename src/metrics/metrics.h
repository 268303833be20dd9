#pragma once
/// Prometheus metrics of one daemon (redisgo_task(1), METRICS; issue 12 item 5).
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

/// Every series carries key="<lock key>", so several daemons on one host (one textfile
/// each, or one scrape job each) stay apart.
class Metrics {
 public:
  /// `nodes`: the configured node names, each reported by redisgo_task_node_up (0 until
  /// the first answer). `clock` computes the lease's remaining seconds at render time.
  Metrics(std::string key, std::vector<std::string> nodes, const Clock& clock = SystemClock::instance());

  /// redisgo_task_leader (0/1).
  void set_leader(bool leader);
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
  /// redisgo_task_cannot_acquire{cause="credentials"|"tls"|"error"|"unreachable"} (0/1):
  /// 1 for the cause that keeps this daemon's attempts from a quorum; "" = none (a quorum
  /// answers, busy or not). An unknown cause is added.
  void set_cannot_acquire(std::string_view cause);
  /// redisgo_task_lease_losses_total{cause="lost"|"deadline"|...}.
  void add_lease_loss(std::string_view cause);
  /// redisgo_task_child_starts_total.
  void add_child_start();
  /// redisgo_task_child_last_exit_status (128+N for signal N; -1 before the first exit).
  void set_child_exit(int status);
  /// redisgo_task_step_downs_total{cause="restart_limit"|"health"|"handover"|"cannot_start"}.
  void add_step_down(std::string_view cause);
  /// redisgo_task_node_up{node="..."} (0/1). An unknown node name is added.
  void set_node_up(std::string_view node, bool up);

  /// The whole exposition, # HELP and # TYPE lines included, label values escaped.
  std::string render() const;
  /// Bumped by every update that changes a value (the exporter rewrites the textfile
  /// when it moved).
  std::uint64_t version() const { return version_.load(std::memory_order_relaxed); }

 private:
  struct Impl;
  /// Bumps version_ (relaxed: it only tells the exporter that something moved).
  void changed() { version_.fetch_add(1, std::memory_order_relaxed); }

  std::shared_ptr<Impl> impl_;
  std::atomic<std::uint64_t> version_{0};
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
};

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
  Exporter(const Metrics& metrics, ExporterOptions options);
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
  /// Stops the HTTP server (within ~100 ms) and writes the textfile one last time, waiting
  /// at most textfile_write_bound for that write. "" when it was written (or there is no
  /// textfile); else what happened to it: a write still blocked then (a hung mount) is left
  /// to its thread, which ends when the write returns. Call once; later calls return "".
  std::string stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redisgo::metrics
