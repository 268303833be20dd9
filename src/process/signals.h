#pragma once
/// Signals are blocked in main() before any thread starts and received in one loop
/// through a signalfd: no work in async handlers.

#include <csignal>
#include <optional>

#include "util/unique_fd.h"

namespace redisgo::process {

/// The signals the daemon handles: SIGTERM and SIGINT stop it; SIGHUP, SIGQUIT, SIGUSR1,
/// SIGUSR2, SIGALRM, SIGPWR, SIGIO, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGWINCH, SIGURG,
/// SIGTSTP (a terminal's ^Z) and SIGCONT (its `fg`) are forwarded to the child: none of
/// them may kill or stop the daemon and leave a lease unreleased or a child unguarded. (SIGCHLD is not needed:
/// child exit is seen through a pidfd.)
sigset_t handled_signals();

/// Blocks handled_signals() in the calling thread (call first thing in main, so every
/// thread inherits the mask). Also ignores SIGPIPE (a closed Redis socket gives EPIPE) and
/// SIGTTIN/SIGTTOU (a background daemon's terminal I/O must not stop it).
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
