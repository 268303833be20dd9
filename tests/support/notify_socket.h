#pragma once
/// A stand-in for systemd's notification socket in tests: a unix datagram socket bound
/// to a path in a temp dir or to an abstract name, whose address goes into
/// NOTIFY_SOCKET (of this process, or of a daemon the test starts). It records every
/// datagram with the sender's pid (SO_PASSCRED), so a test can also check that the
/// daemon, not its child, sent it.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/redis_server.h"
#include "util/unique_fd.h"

namespace redisgo::testing {

class NotifySocket {
 public:
  enum class Kind { kPath, kAbstract };
  struct Datagram {
    std::string text;  ///< e.g. "READY=1"
    pid_t pid = 0;     ///< sender's pid as the kernel reports it
    std::chrono::steady_clock::time_point at{};  ///< when it was read
  };

  /// Binds the socket; throws std::runtime_error on failure.
  explicit NotifySocket(Kind kind = Kind::kPath);
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  /// The value for NOTIFY_SOCKET: a path, or "@name" for an abstract socket.
  const std::string& address() const { return address_; }

  /// Every datagram that arrives within `window` (always waits the whole window).
  std::vector<std::string> recv_all(std::chrono::milliseconds window);
  /// What is queued right now, without waiting.
  std::vector<std::string> drain() { return recv_all(std::chrono::milliseconds(0)); }
  /// Reads until a datagram equal to `text` arrives or `timeout` passes; true if it did.
  bool wait_for(const std::string& text, std::chrono::milliseconds timeout);
  /// Reads until a datagram satisfies `pred` or `timeout` passes; returns it.
  std::optional<Datagram> wait_for(const std::function<bool(const std::string&)>& pred,
                                   std::chrono::milliseconds timeout);

  /// Every datagram read so far by any of the calls above, oldest first.
  const std::vector<Datagram>& history() const { return history_; }

 private:
  /// Waits up to `timeout` for one datagram; appends it to history_.
  std::optional<Datagram> recv_one(std::chrono::milliseconds timeout);

  std::unique_ptr<TempDir> dir_;  // kPath only
  std::string address_;
  UniqueFd fd_;
  std::vector<Datagram> history_;
};

/// Sets environment variables for the lifetime of the object and restores the previous
/// values (or unsets them) on destruction. Not thread-safe: no other thread may read the
/// environment meanwhile (setenv/getenv race).
class ScopedEnvVars {
 public:
  ScopedEnvVars() = default;
  ~ScopedEnvVars();
  ScopedEnvVars(const ScopedEnvVars&) = delete;
  ScopedEnvVars& operator=(const ScopedEnvVars&) = delete;
  /// Sets `name` to `value` (nullopt: unsets it).
  ScopedEnvVars& set(const std::string& name, const std::optional<std::string>& value);

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace redisgo::testing
