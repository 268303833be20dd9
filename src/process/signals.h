#pragma once
/// Signals are blocked in main() before any thread starts and received in one loop
/// through a signalfd (STYLE.md): no work in async handlers.

#include <csignal>
#include <optional>

#include "util/unique_fd.h"

namespace redisgo::process {

/// The signals the daemon handles: SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2.
/// (SIGCHLD is not needed: child exit is seen through a pidfd.)
sigset_t handled_signals();

/// Blocks handled_signals() in the calling thread (call first thing in main, so every
/// thread inherits the mask). Also ignores SIGPIPE (a closed Redis socket gives EPIPE).
void block_handled_signals();

/// signalfd over handled_signals(), nonblocking and close-on-exec.
class SignalFd {
 public:
  SignalFd();  ///< throws IoError
  int fd() const noexcept { return fd_.get(); }
  /// Next pending signal number, or nullopt if none.
  std::optional<int> read();

 private:
  UniqueFd fd_;
};

}  // namespace redisgo::process
