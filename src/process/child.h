#pragma once
/// The child command (STYLE.md "Child process").
///
/// spawn(): argv, envp and the PATH lookup are built before fork; fork with all signals
/// blocked; in the child: default dispositions, setpgid(0,0), PR_SET_PDEATHSIG and a
/// getppid() check for the race where the daemon died first, chdir(workdir), every fd
/// above 2 marked close-on-exec, an empty signal mask (the daemon keeps its handled
/// signals blocked), execve. An exec failure is reported over a CLOEXEC pipe and thrown
/// as SpawnError (126/127 semantics). Only async-signal-safe calls between fork and exec.
///
/// PR_SET_PDEATHSIG fires when the *thread* that forked exits, not the process: spawn
/// from a thread that lives as long as the child should (the daemon's main loop).
///
/// Reaping also SIGKILLs what is left of the child's process group, while the exited
/// leader is still a zombie (so its pid, which is the pgid, cannot have been reused): a
/// child that backgrounds a process and exits must not leave a second copy of the job
/// running after the lease is released and another host starts it. A process that
/// leaves the group itself (setsid) escapes this; that would need a cgroup.

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
  /// argv[0] is looked up in PATH (of the merged environment) if it has no '/'; a
  /// relative path with '/' is relative to `workdir`.
  std::vector<std::string> argv;
  std::string workdir;                         ///< empty = inherit the daemon's
  std::map<std::string, std::string> env;      ///< added to (overriding) the daemon's environment
  /// Names removed from the daemon's environment (before `env` is applied): variables
  /// addressed to the daemon itself, such as systemd's NOTIFY_SOCKET.
  std::vector<std::string> unset_env;
  /// Signal the child gets when the daemon dies (PR_SET_PDEATHSIG). 0 = none.
  int death_signal = 9;                        // SIGKILL
};

/// The command could not be started: exit_code() is 127 (not found) or 126 (not
/// executable, workdir unusable, other); error_number() is the errno.
class SpawnError : public Error {
 public:
  SpawnError(const std::string& what, int err, int exit_code) : Error(what), errno_(err), exit_code_(exit_code) {}
  int error_number() const { return errno_; }
  int exit_code() const { return exit_code_; }

 private:
  int errno_;
  int exit_code_;
};

/// waitpid status -> shell convention: exit code, or 128+N for signal N (-1 for a status
/// that is neither, e.g. stopped).
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
  /// If something else reaped the pid (waitpid(-1), SIGCHLD ignored) the code is 255.
  std::optional<int> try_wait();
  /// Blocks until the child ends (EINTR-safe); returns its exit code.
  int wait();
  /// Blocks up to `timeout`; returns the exit code if it ended.
  std::optional<int> wait_for(Millis timeout);

  /// kill(-pgid, sig). No-op if not running. Never throws.
  void signal_group(int sig) noexcept;
  /// `sig` (plus SIGCONT, so a stopped group can act on it) to the group, wait up to
  /// `grace`, then SIGKILL the group and reap. Returns the exit code; the code already
  /// known if it had ended; -1 if there never was a child. Never throws.
  /// It does not return while the child runs (SIGKILL repeated every second): releasing
  /// the lease with the child alive would break mutual exclusion. Only a process stuck in
  /// uninterruptible sleep can delay it.
  int terminate_group(int sig, Millis grace) noexcept;

 private:
  /// waitid(WNOWAIT) for the exit, SIGKILL the rest of the group, then waitpid.
  std::optional<int> reap(bool block) noexcept;

  pid_t pid_ = -1;
  UniqueFd pidfd_;
  std::optional<int> status_;  // exit code once reaped
};

}  // namespace redisgo::process
