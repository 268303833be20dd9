#pragma once
/// The daemon's event loop (docs/DESIGN.md "Processes and threads"): one thread waits in
/// poll() on the phases' fds, a signalfd and a CLOCK_BOOTTIME timer for every deadline, so
/// that a host suspend does not postpone the lease deadline. It also keeps the systemd
/// watchdog fed, says STATUS= only when it changes, and watches the metrics exporter's
/// textfile writes. The phases' drivers (standby_driver.h, leader_driver.h) add their fds and
/// read what woke them.

#include <poll.h>

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "log/cause_log.h"
#include "metrics/metrics.h"
#include "process/signals.h"
#include "systemd/notify.h"
#include "util/clock.h"
#include "util/timer.h"

namespace spdlog {
class logger;
}

namespace redisgo::daemon {

class EventLoop {
 public:
  EventLoop(const config::Config& config, std::shared_ptr<spdlog::logger> log, const Clock& clock);

  /// The signalfd: what a Redis round watches to end at once on a stop.
  int signal_fd() const noexcept { return signals_.fd(); }
  /// Reads pending signals. TERM/INT request the stop (said once; the first one names it);
  /// the others are returned for forwarding to the child.
  std::vector<int> read_signals();
  bool stop_requested() const noexcept { return stop_requested_; }
  int stop_signal() const noexcept { return stop_signal_; }

  /// poll() on `fds` plus the boot-time timer armed at `wake_at`, for at most `cap`
  /// (steady-clock waits such as a subscriber's retry) and the watchdog's period; then
  /// the heartbeat.
  void poll_until(std::vector<pollfd>& fds, Clock::time_point wake_at, std::optional<Millis> cap = std::nullopt);
  /// Waits until `until`, reading signals on the way; false when a stop was requested first.
  bool sleep_until(Clock::time_point until);

  /// systemd STATUS=, sent only when it changed.
  void say_status(std::string text);
  void ready() noexcept { notifier_.ready(); }
  void stopping() noexcept { notifier_.stopping(); }
  /// The proof of life the watchdog waits for, and how often it needs one (none: no watchdog).
  void heartbeat() noexcept { watchdog_.heartbeat(); }
  std::optional<Millis> heartbeat_period() const noexcept { return watchdog_.period(); }

  /// Starts the [metrics] exporter of `metrics` (when configured); says on stderr why it
  /// cannot start and returns false then.
  bool start_exporter(metrics::Metrics& metrics);
  /// Stops the exporter; a last textfile write left behind is said at warn.
  void stop_exporter();
  bool exporting() const noexcept { return exporter_ != nullptr; }

 private:
  /// A textfile that can no longer be written is said once, then summarised.
  void watch_exporter();

  const config::Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  const Clock& clock_;
  systemd::Notifier notifier_;
  systemd::Watchdog watchdog_;
  process::SignalFd signals_;
  BootTimer timer_;
  bool stop_requested_ = false;
  int stop_signal_ = SIGTERM;
  std::string status_text_;  ///< the last STATUS= sent
  std::unique_ptr<metrics::Exporter> exporter_;
  std::uint64_t textfile_failures_ = 0;
  log::CauseLog metrics_log_;
};

}  // namespace redisgo::daemon
