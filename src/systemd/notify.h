#pragma once
/// systemd Type=notify integration through $NOTIFY_SOCKET: the sd_notify datagram
/// protocol, to a path or an abstract "@" socket, written here (no libsystemd). Every
/// call does nothing when the variable is unset, so the daemon runs the same outside
/// systemd. MAINPID is never sent: the daemon
/// itself is the main process, and the child must not be mistaken for it.

#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "util/clock.h"
#include "util/unique_fd.h"

namespace redisgo::systemd {

class Notifier {
 public:
  /// Reads NOTIFY_SOCKET / WATCHDOG_USEC / WATCHDOG_PID from the environment once (and
  /// leaves them there) and opens the datagram socket (close-on-exec).
  Notifier();
  /// True when NOTIFY_SOCKET is set (non-empty).
  bool enabled() const noexcept { return enabled_; }
  void ready() noexcept;                           ///< READY=1
  /// STATUS=text. Newlines in `text` become spaces: a newline would start a new
  /// assignment in the datagram (e.g. a forged "READY=1" inside an error message).
  void status(const std::string& text) noexcept;
  void stopping() noexcept;                        ///< STOPPING=1
  void watchdog() noexcept;                        ///< WATCHDOG=1
  /// WATCHDOG_USEC when set for this process (WATCHDOG_PID absent or ours) and
  /// notification is enabled, else nullopt.
  std::optional<std::chrono::microseconds> watchdog_interval() const noexcept { return watchdog_; }

 private:
  void send(const std::string& message) noexcept;
  bool enabled_ = false;
  UniqueFd fd_;
  sockaddr_un addr_{};
  socklen_t addr_len_ = 0;
  std::optional<std::chrono::microseconds> watchdog_;
};

/// Pings WATCHDOG=1 at half of WATCHDOG_USEC from its own thread, but only while the
/// main loop proves it is alive by calling heartbeat() at least once per period():
/// a heartbeat older than half of WATCHDOG_USEC stops the pings and systemd restarts the
/// service. Without a watchdog (nullopt interval) no thread is started and every call is
/// a no-op. The first ping is sent at construction.
class Watchdog {
 public:
  Watchdog(Notifier& notifier, const Clock& clock = SystemClock::instance());
  ~Watchdog();  ///< stops and joins
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  /// Called by the main loop on every iteration. Thread-safe, cheap (one atomic store).
  void heartbeat() noexcept;
  /// The main loop must call heartbeat() at least this often: a quarter of
  /// WATCHDOG_USEC, which leaves the other quarter as slack for a slow iteration
  /// (nullopt: no watchdog).
  std::optional<std::chrono::milliseconds> period() const noexcept;
  /// Half of WATCHDOG_USEC: how often WATCHDOG=1 is sent, and the heartbeat age beyond
  /// which it is not (nullopt: no watchdog).
  std::optional<std::chrono::microseconds> ping_interval() const noexcept;

 private:
  void run();
  bool fresh() const noexcept;
  Notifier& notifier_;
  const Clock& clock_;
  std::optional<std::chrono::microseconds> interval_;  // WATCHDOG_USEC
  std::optional<std::chrono::milliseconds> period_;
  std::atomic<Clock::duration::rep> last_beat_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace redisgo::systemd
