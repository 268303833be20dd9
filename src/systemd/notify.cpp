#include "systemd/notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace redisgo::systemd {

Notifier::Notifier() {
  // The sd_notify protocol (systemd's sd_notify(3)): one datagram per message to the
  // AF_UNIX socket named by NOTIFY_SOCKET, a path or "@abstract". Written here rather
  // than linking libsystemd, which pulls in seven shared libraries and costs every start
  // of the binary about 1.5 ms of dynamic loading (docs/BENCHMARKS.md). The environment
  // is read once, here: nothing reads it again while other threads run.
  const char* socket_env = std::getenv("NOTIFY_SOCKET");
  if (socket_env == nullptr || socket_env[0] == '\0') return;
  std::string path = socket_env;
  if (path.size() >= sizeof(addr_.sun_path) || (path[0] != '/' && path[0] != '@')) return;
  addr_.sun_family = AF_UNIX;
  std::memcpy(addr_.sun_path, path.data(), path.size());
  addr_len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  if (path[0] == '@') addr_.sun_path[0] = '\0';  // abstract namespace
  else ++addr_len_;                              // path: include the terminating NUL
  fd_.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  enabled_ = fd_.valid();
  if (!enabled_) return;
  // WATCHDOG_USEC applies to us only when WATCHDOG_PID is unset or names this process:
  // a value inherited from a watched parent must not make us ping on its behalf.
  const char* usec_env = std::getenv("WATCHDOG_USEC");
  const char* pid_env = std::getenv("WATCHDOG_PID");
  if (usec_env == nullptr) return;
  if (pid_env != nullptr && std::strtol(pid_env, nullptr, 10) != static_cast<long>(::getpid())) return;
  char* end = nullptr;
  unsigned long long usec = std::strtoull(usec_env, &end, 10);
  if (end != usec_env && *end == '\0' && usec > 0) {
    watchdog_ = std::chrono::microseconds(static_cast<std::chrono::microseconds::rep>(usec));
  }
}

void Notifier::send(const std::string& message) noexcept {
  if (!enabled_) return;
  // A failed notification is not worth stopping for: systemd would only notice a
  // missing READY/WATCHDOG, and it has its own timeouts for that.
  (void)::sendto(fd_.get(), message.data(), message.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr_),
                 addr_len_);
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
