#pragma once
/// systemd Type=notify integration through $NOTIFY_SOCKET (libsystemd's sd_notify, which
/// handles path and abstract "@" sockets). Every call does nothing when the variable is
/// unset, so the daemon runs the same outside systemd.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "util/clock.h"

namespace redisgo::systemd {

class Notifier {
 public:
  /// Reads NOTIFY_SOCKET / WATCHDOG_USEC / WATCHDOG_PID from the environment.
  Notifier();
  bool enabled() const noexcept { return enabled_; }
  void ready() noexcept;                           ///< READY=1
  void status(const std::string& text) noexcept;   ///< STATUS=text
  void stopping() noexcept;                        ///< STOPPING=1
  void watchdog() noexcept;                        ///< WATCHDOG=1
  /// WATCHDOG_USEC when set for this process, else nullopt.
  std::optional<std::chrono::microseconds> watchdog_interval() const noexcept { return watchdog_; }

 private:
  bool enabled_ = false;
  std::optional<std::chrono::microseconds> watchdog_;
};

/// Pings WATCHDOG=1 at half of WATCHDOG_USEC from its own thread, but only while the
/// main loop proves it is alive by calling heartbeat() at least once per ping period:
/// a stuck main loop stops the pings and systemd restarts the service.
class Watchdog {
 public:
  Watchdog(Notifier& notifier, const Clock& clock = SystemClock::instance());
  ~Watchdog();  ///< stops and joins
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  /// Called by the main loop on every iteration.
  void heartbeat() noexcept;
  /// The main loop must call heartbeat() at least this often (nullopt: no watchdog).
  std::optional<std::chrono::milliseconds> period() const noexcept;

 private:
  void run();
  Notifier& notifier_;
  const Clock& clock_;
  std::optional<std::chrono::milliseconds> period_;
  std::atomic<Clock::duration::rep> last_beat_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace redisgo::systemd
