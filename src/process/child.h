#pragma once
/// The child command (STYLE.md "Child process").
///
/// spawn(): fork with all signals blocked; in the child: reset dispositions, restore the
/// mask, setpgid(0,0), PR_SET_PDEATHSIG(SIGKILL) and a getppid() check for the race where
/// the daemon died first, close every fd above 2, chdir(workdir), execvpe. An exec failure
/// is reported over a CLOEXEC pipe and thrown as SpawnError (126/127 semantics).
/// Only async-signal-safe calls between fork and exec; argv/envp are built before fork.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/unique_fd.h"

namespace redisgo::process {

using Millis = std::chrono::milliseconds;

struct SpawnOptions {
  std::vector<std::string> argv;               ///< argv[0] looked up in PATH if it has no '/'
  std::string workdir;                         ///< empty = inherit
  std::map<std::string, std::string> env;      ///< added to (overriding) the daemon's environment
  /// Signal the child gets when the daemon dies (PR_SET_PDEATHSIG). 0 = none.
  int death_signal = 9;                        // SIGKILL
};

/// exec failed: exit_code() is 127 (not found) or 126 (not executable / other).
class SpawnError : public Error {
 public:
  SpawnError(const std::string& what, int err, int exit_code) : Error(what), errno_(err), exit_code_(exit_code) {}
  int error_number() const { return errno_; }
  int exit_code() const { return exit_code_; }

 private:
  int errno_;
  int exit_code_;
};

/// waitpid status -> shell convention: exit code, or 128+N for signal N.
int exit_code_from_wait_status(int status);

class Child {
 public:
  /// Starts the child in its own process group. Throws SpawnError / IoError.
  static Child spawn(const SpawnOptions& options);

  Child() = default;
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  /// Never leaves a running child behind: if still running, SIGKILLs its group and reaps
  /// it (terminate-with-timeout, as folly ~Subprocess chooses not to abort in production).
  ~Child();

  pid_t pid() const noexcept { return pid_; }
  /// A pidfd (readable when the child exits), for poll(); -1 if none.
  int exit_fd() const noexcept { return pidfd_.get(); }
  bool running() const noexcept { return pid_ > 0 && !status_; }

  /// Reaps without blocking; returns the exit code (exit_code_from_wait_status) once ended.
  std::optional<int> try_wait();
  /// Blocks until the child ends (EINTR-safe); returns its exit code.
  int wait();
  /// Blocks up to `timeout`; returns the exit code if it ended.
  std::optional<int> wait_for(Millis timeout);

  /// kill(-pgid, sig). No-op if not running. Never throws.
  void signal_group(int sig) noexcept;
  /// `sig` to the group, wait up to `grace`, then SIGKILL the group and reap.
  /// Returns the exit code. Never throws.
  int terminate_group(int sig, Millis grace) noexcept;

 private:
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  std::optional<int> status_;  // exit code once reaped
};

}  // namespace redisgo::process
