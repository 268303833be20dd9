#include "systemd/notify.h"

#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace redisgo::systemd {

Notifier::Notifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && socket[0] != '\0';
  if (!enabled_) return;
  // sd_watchdog_enabled checks WATCHDOG_PID against getpid(): a WATCHDOG_USEC inherited
  // from a parent that is itself watched must not make us ping on its behalf.
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    watchdog_ = std::chrono::microseconds(static_cast<std::chrono::microseconds::rep>(usec));
  }
}

void Notifier::send(const std::string& message) noexcept {
  if (!enabled_) return;
  // A failed notification is not worth stopping for: systemd would only notice a
  // missing READY/WATCHDOG, and it has its own timeouts for that.
  (void)sd_notify(0, message.c_str());
}

void Notifier::ready() noexcept { send("READY=1"); }

void Notifier::status(const std::string& text) noexcept {
  if (!enabled_) return;
  try {
    std::string line = "STATUS=" + text;
    std::replace(line.begin(), line.end(), '\n', ' ');
    // sd_notify takes a C string: an embedded NUL would silently cut the status.
    std::replace(line.begin(), line.end(), '\0', ' ');
    send(line);
  } catch (...) {
    // Out of memory while building a status line: skip it.
  }
}

void Notifier::stopping() noexcept { send("STOPPING=1"); }

void Notifier::watchdog() noexcept { send("WATCHDOG=1"); }

Watchdog::Watchdog(Notifier& notifier, const Clock& clock)
    : notifier_(notifier), clock_(clock), last_beat_ns_(clock.now().time_since_epoch().count()) {
  interval_ = notifier_.watchdog_interval();
  if (!interval_) return;
  // Never 0 ms, so a caller can use it as a poll timeout without spinning.
  period_ = std::max(std::chrono::milliseconds(1),
                     std::chrono::duration_cast<std::chrono::milliseconds>(*interval_ / 4));
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::heartbeat() noexcept {
  last_beat_ns_.store(clock_.now().time_since_epoch().count(), std::memory_order_relaxed);
}

std::optional<std::chrono::milliseconds> Watchdog::period() const noexcept { return period_; }

std::optional<std::chrono::microseconds> Watchdog::ping_interval() const noexcept {
  if (!interval_) return std::nullopt;
  return *interval_ / 2;
}

bool Watchdog::fresh() const noexcept {
  auto last = Clock::duration(last_beat_ns_.load(std::memory_order_relaxed));
  auto age = clock_.now().time_since_epoch() - last;
  return age < *ping_interval();
}

void Watchdog::run() {
  const auto every = *ping_interval();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    // A stale heartbeat means the main loop is stuck (deadlock, blocked syscall): stay
    // silent so systemd's WatchdogSec fires and restarts us, instead of vouching for a
    // process that no longer does its job.
    if (fresh()) notifier_.watchdog();
    cv_.wait_for(lock, every, [this] { return stopping_; });
  }
}

}  // namespace redisgo::systemd
