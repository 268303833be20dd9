#pragma once
/// The leader's health check (redisgo_task(1), MODES; keepalived's vrrp_script, with the
/// service as it runs under the lease): while the child runs, `health_command` runs every
/// `health_interval`, is killed when it overruns `health_timeout` (a failure), and
/// `health_fall` failures in a row make the leader step down. Its output (stdout and
/// stderr together, at most kMaxOutput bytes kept) is logged at debug, a failure at warn
/// with the output's last line.
///
/// It is driven by the daemon's poll loop: append_fds() adds its fds, service() does the
/// work after poll. It starts a check only when one is due and none runs, so it never
/// spins, and its process runs behind a keeper like the child (process/child.h): it dies
/// with the daemon and by the lease's kill deadline.

#include <poll.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "process/child.h"
#include "util/clock.h"
#include "util/unique_fd.h"

namespace spdlog {
class logger;
}

namespace redisgo::daemon {

class HealthCheck {
 public:
  static constexpr std::size_t kMaxOutput = 4096;

  HealthCheck(const config::TaskConfig& task, std::shared_ptr<spdlog::logger> log, const Clock& clock);
  ~HealthCheck();  ///< kills a check that runs
  HealthCheck(const HealthCheck&) = delete;
  HealthCheck& operator=(const HealthCheck&) = delete;

  bool enabled() const { return !task_.health_command.empty(); }
  /// The child (re)started under the kill deadline `kill_at_ns`: the first check is due one
  /// health_interval from now. `spawn` carries the child's environment; its argv is replaced
  /// by health_command.
  void arm(const process::SpawnOptions& spawn, std::int64_t kill_at_ns);
  /// The child stopped: kill a check that runs; no further check until arm().
  void disarm() noexcept;
  /// When service() next has something to do; max() when nothing.
  Clock::time_point next_wakeup() const;
  /// Adds the running check's fds (output pipe, keeper exit) to `fds`.
  void append_fds(std::vector<pollfd>& fds);
  /// After poll: reads output, reaps, enforces the timeout and starts a check when due, under
  /// the lease's kill deadline last given (the check must not outlive the lease). Returns the
  /// reason to step down once health_fall checks in a row failed.
  std::optional<std::string> service(const std::vector<pollfd>& fds);
  /// The lease's kill deadline, decided at `decided_ns` (a renewal, a stop, or the same
  /// again to say the daemon runs): the next check starts under it, and a running check's
  /// keeper follows it, as the child's does. Never throws.
  void set_deadline(std::int64_t kill_at_ns, std::int64_t decided_ns) noexcept;
  /// Consecutive failures so far.
  int failures() const { return failures_; }

 private:
  void start(std::int64_t kill_at_ns);
  void read_output() noexcept;
  /// The check ended with `code` (or timed out): account it.
  std::optional<std::string> finish(int code, bool timed_out);

  const config::TaskConfig& task_;
  std::shared_ptr<spdlog::logger> log_;
  const Clock& clock_;
  /// Logs a failure: each of the first kLoggedFailures of a streak and the one that makes
  /// it step down at warn, the others in a summary at most every 30 s (docs/DESIGN.md, invariant 7: a
  /// check every 100 ms with a high health_fall must not write ten warnings a second).
  void log_failure(const std::string& what);
  static constexpr int kLoggedFailures = 3;
  Clock::time_point last_summary_{};
  int unreported_ = 0;
  std::optional<process::SpawnOptions> spawn_;  // set while armed
  std::optional<process::Child> running_;
  UniqueFd output_;                             // read end of the running check's output
  std::string buffer_;
  Clock::time_point started_{};
  Clock::time_point next_{Clock::time_point::max()};
  std::size_t first_fd_ = 0;                    // where append_fds put ours
  std::size_t fd_count_ = 0;
  int failures_ = 0;
  std::int64_t kill_at_ns_ = 0;                 // the lease's kill deadline (arm, set_deadline)
};

}  // namespace redisgo::daemon
