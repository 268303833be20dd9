#pragma once
/// The child command, behind a keeper process that takes its whole tree down with it
/// (redisgo_task(1), ENVIRONMENT).
///
///   daemon ── keeper (own process group, child subreaper) ── job (own process group)
///                                                             └── grandchildren, setsid'd ones
///
/// PR_SET_PDEATHSIG reaches only the direct child, and a job started as `sh -c 'a; b'`
/// runs its commands as grandchildren: when the daemon died by SIGKILL, `sleep 37` lived on
/// while a standby ran the same job. So the daemon forks a small keeper (no exec: it is a
/// copy of the daemon that only makes system calls) which forks the job and then:
///  - forwards the signals the daemon asks for (a byte per signal on a control pipe) to
///    the job's process group;
///  - as a child subreaper, becomes the parent of every descendant orphaned by its parent's
///    death, setsid'd ones included, so none can slip away to init;
///  - when the job's leader exits, SIGKILLs what is left of its group and every other
///    descendant (a backgrounded copy of the job must not outlive the lease), reaps them
///    all, reports the leader's wait status on a status pipe and exits;
///  - when the daemon dies by any means, the control pipe reads EOF and it does the same
///    at once: the whole tree is dead within milliseconds;
///  - holds the lease's kill deadline on a CLOCK_BOOTTIME timer of its own (set_deadline):
///    a daemon that is stopped or wedged while its child runs cannot let the child outlive
///    the lease. What it does with the deadlines it is sent is deadline_rule.h's rule: the
///    last one sent counts, and it stops the job as the daemon would (kill_signal, then
///    SIGKILL) when the daemon has fallen silent; what it did is reported (keeper_act()).
/// The job gets PR_SET_PDEATHSIG(SIGKILL) on the keeper (single-threaded, so it fires
/// reliably). Under systemd the unit's cgroup covers the same ground once more.
///
/// The job's argv, envp and PATH lookup are built before fork; between fork and exec
/// (keeper and job) only async-signal-safe calls are made. An exec failure is reported
/// over a CLOEXEC pipe and thrown as SpawnError (126/127 semantics).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/unique_fd.h"

namespace redisgo::process {

namespace detail {
struct KeeperReport;
}

using Millis = std::chrono::milliseconds;

struct SpawnOptions {
  /// argv[0] is looked up in PATH (of the merged environment) if it has no '/'; a
  /// relative path with '/' is relative to `workdir`.
  std::vector<std::string> argv;
  std::string workdir;                         ///< empty = inherit the daemon's
  std::map<std::string, std::string> env;      ///< added to (overriding) the daemon's environment
  /// Names removed from the daemon's environment (before `env` is applied): variables
  /// addressed to the daemon itself (systemd's NOTIFY_SOCKET) or secret (password_env).
  std::vector<std::string> unset_env;
  /// The lease's kill deadline (CLOCK_BOOTTIME ns, as set_deadline()), armed in the keeper
  /// before the job is forked; past it, the job is not started (SpawnError, Cause::kTooLate).
  /// 0 = none.
  std::int64_t deadline_ns = 0;
  /// What the keeper does on its own once the deadline comes within `kill_grace` and the
  /// daemon has written nothing for longer than `tick` (stopped, frozen): `kill_signal`
  /// (then SIGCONT) to the job's group; SIGKILL at the deadline in any case. 0 = no
  /// kill_signal, SIGKILL only (process/deadline_rule.h).
  int kill_signal = 0;
  Millis kill_grace{0};
  Millis tick{0};
  /// When >= 0, the job's stdout and stderr both go to this fd (the write end of a pipe
  /// the caller reads: the health check's output). -1 = inherited from the daemon.
  int output_fd = -1;
};

/// Makes this process a child subreaper, so that the descendants of a job whose keeper was
/// killed from outside come to it (and are killed) instead of escaping to init. The daemon
/// calls it once at start.
void set_subreaper() noexcept;

/// Remembers where main's argv strings are, so that a keeper can overwrite them with its
/// own name: commands that find the daemon by name (killall, pkill -f) must not find it.
void set_program_args(int argc, char** argv) noexcept;

/// The command could not be started: cause() says why, error_number() is the errno.
class SpawnError : public Error {
 public:
  /// Why, as the shell would tell it (127 / 126) and the lease adds: the caller picks the
  /// exit status (util/exit_status.h).
  enum class Cause {
    kNotFound,   ///< no such program (an empty command, not on PATH, no such file)
    kCannotRun,  ///< found, but not runnable (permissions, not a program, workdir, fork)
    kTooLate,    ///< the lease's kill deadline came before the job could be forked
  };
  SpawnError(const std::string& what, int err, Cause cause) : Error(what), errno_(err), cause_(cause) {}
  int error_number() const { return errno_; }
  Cause cause() const { return cause_; }

 private:
  int errno_;
  Cause cause_;
};

/// waitpid status -> shell convention: exit code, or 128+N for signal N (-1 for a status
/// that is neither, e.g. stopped).
int exit_code_from_wait_status(int status);

/// Where a program would be found, as exec would search `path_var` (empty entries are
/// the current directory). nullopt: not found. A regular file that is not executable is
/// returned when nothing better exists (exec then fails with EACCES, 126).
std::optional<std::string> search_path(const std::string& name, const std::string& path_var,
                                       const std::string& workdir = "");

/// Why the job could not be exec'd as Child::spawn would (workdir missing or not a
/// directory, program not found on the merged PATH or not executable, a script's #!
/// interpreter or a program's dynamic loader missing or not executable, arguments or
/// environment beyond the kernel's limits: E2BIG), checked from this process without
/// forking; nullopt when it looks runnable. For `validate` and start-up: a broken command
/// fails loudly before the lease is taken.
struct NotRunnable {
  enum class Part {
    kProgram,      ///< the program (or its interpreter)
    kWorkdir,
    kArguments,    ///< argv is too long
    kEnvironment,  ///< the environment is too long
  };
  Part part = Part::kProgram;
  /// exec would fail with ENOENT (a shell's 127: not found, or its interpreter missing);
  /// else with another error (126: not executable, too long, ...).
  bool missing = false;
  std::string why;
};
std::optional<NotRunnable> why_not_runnable(const SpawnOptions& options);

/// The kernel's limits on what exec copies (fs/exec.c), for this process's stack limit:
/// one argument or `NAME=value` at most `per_string` bytes with its NUL (MAX_ARG_STRLEN,
/// 32 pages), and all of them with their pointers at most `total` (sysconf(_SC_ARG_MAX), a
/// quarter of the stack limit, which the kernel caps at 6 MiB).
struct ExecLimits {
  std::size_t per_string = 0;
  std::size_t total = 0;
};
ExecLimits exec_limits();
/// What why_not_runnable() leaves of ExecLimits::total for what the kernel copies besides
/// argv and envp (a script's #! line, slack); the program's path, copied once more for a
/// script, is counted on top of it.
inline constexpr std::size_t kExecMargin = 4096;

/// What a keeper did on its own at the lease's deadline (deadline_rule.h): the first
/// signal it sent the job's group, and when (CLOCK_BOOTTIME ns). signal 0: nothing.
struct KeeperAct {
  int signal = 0;
  std::int64_t at_ns = 0;
  bool operator==(const KeeperAct&) const = default;
};

/// A started child as the daemon drives it: Child, or a fake in tests (tests/support).
class Job {
 public:
  virtual ~Job() = default;
  virtual pid_t pid() const noexcept = 0;
  virtual pid_t keeper_pid() const noexcept = 0;
  /// Readable when the tree is gone; -1 when there is nothing to poll (try_wait decides).
  virtual int exit_fd() const noexcept = 0;
  virtual bool running() const noexcept = 0;
  virtual std::optional<int> try_wait() = 0;
  virtual void signal_group(int sig) noexcept = 0;
  virtual void force_kill() noexcept = 0;
  virtual void set_deadline(std::int64_t boot_ns, std::int64_t decided_ns) noexcept = 0;
  virtual int terminate_group(int sig, Millis grace) noexcept = 0;
  /// Once the tree is gone: what the keeper did on its own at the deadline.
  virtual KeeperAct keeper_act() const noexcept = 0;
  /// Once the tree is gone: the signal that killed the keeper from outside (SIGKILL: the OOM
  /// killer, a kill -9), -1 if it ended without its report some other way; 0 if it was not
  /// killed (or the daemon killed it, force_kill).
  virtual int keeper_killed_by() const noexcept = 0;
};

/// Starts jobs: the daemon is given one (docs/DESIGN.md "Dependencies"), so that its
/// phases can be driven in-process with a fake.
class Spawner {
 public:
  virtual ~Spawner() = default;
  /// Throws SpawnError / IoError as Child::spawn.
  virtual std::unique_ptr<Job> spawn(const SpawnOptions& options) = 0;
};

/// The real one: Child::spawn, the keeper and the job.
Spawner& keeper_spawner();

class Child final : public Job {
 public:
  /// Starts the keeper and the job. Throws SpawnError / IoError.
  static Child spawn(const SpawnOptions& options);

  Child() = default;
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  /// Never leaves a running tree behind: if still running, SIGKILLs it and reaps the keeper
  /// (terminate-with-timeout, as folly ~Subprocess chooses not to abort in production).
  ~Child() override;

  /// The job's pid (leader of its process group).
  pid_t pid() const noexcept override { return pid_; }
  /// The keeper's pid.
  pid_t keeper_pid() const noexcept override { return keeper_; }
  /// Readable when the job's whole tree is gone (the keeper's report, or its death: the
  /// status pipe's EOF); for poll().
  int exit_fd() const noexcept override { return status_in_ ? status_in_.get() : pidfd_.get(); }
  bool running() const noexcept override { return keeper_ > 0 && !status_; }

  /// Reaps without blocking; returns the job's exit code (exit_code_from_wait_status)
  /// once its tree is gone. When the keeper itself was killed, the job's code is unknown:
  /// 71 (EX_OSERR, keeper_killed_by() says by what), or 137 when the daemon killed it
  /// (force_kill: the job's group got SIGKILL first).
  std::optional<int> try_wait() override;
  /// Blocks until the tree is gone; returns the job's exit code.
  int wait();
  /// Blocks up to `timeout`; returns the exit code if it ended.
  std::optional<int> wait_for(Millis timeout);

  /// Delivers `sig` to the job's process group (through the keeper); SIGKILL also kills
  /// every other descendant. No-op if not running. Never throws.
  void signal_group(int sig) noexcept override;
  /// Last resort when the tree does not die (the keeper stopped or wedged): SIGKILL the
  /// keeper and the job's group from here; reap() then kills the orphans. Never throws.
  void force_kill() noexcept override;
  /// The instant (CLOCK_BOOTTIME, ns since boot; SystemClock's time_point) at which the
  /// keeper SIGKILLs the tree on its own; 0 = none. `decided_ns` is when the daemon decided
  /// it: a later deadline counts only if decided before the one it replaces
  /// (deadline_rule.h). Sent again unchanged, it tells the keeper that the daemon runs.
  /// Never throws.
  void set_deadline(std::int64_t boot_ns, std::int64_t decided_ns) noexcept override;
  KeeperAct keeper_act() const noexcept override { return keeper_act_; }
  int keeper_killed_by() const noexcept override { return keeper_killed_by_; }
  /// `sig` (plus SIGCONT, so a stopped group can act on it) to the group, wait up to
  /// `grace`, then SIGKILL the tree and reap. Returns the exit code; the code already
  /// known if it had ended; -1 if there never was a child. Never throws.
  /// It does not return while the tree lives (SIGKILL repeated every second): releasing
  /// the lease with the child alive would break mutual exclusion. Only a process stuck in
  /// uninterruptible sleep can delay it.
  int terminate_group(int sig, Millis grace) noexcept override;

 private:
  std::optional<int> reap(bool block) noexcept;
  /// Waits for a keeper that reported the end of the tree and is exiting (reap()).
  void reap_keeper() noexcept;
  void last_resort_kill() noexcept;
  /// Remembers the keeper's first act of its own (a Report::kDeadline).
  void note_deadline_act(const detail::KeeperReport& report) noexcept;
  /// Kills the job's group and every child of this process that is not a keeper (the
  /// orphans of a job whose keeper died), and reaps them.
  void kill_orphans() noexcept;

  pid_t keeper_ = -1;
  pid_t pid_ = -1;
  UniqueFd pidfd_;     // the keeper's
  UniqueFd control_;   // write end: a byte per signal; closing it kills the tree
  UniqueFd status_in_; // read end: the keeper's reports
  std::optional<int> status_;  // exit code once reaped (or reported by the keeper)
  bool keeper_unreaped_ = false;  // status_ came from the keeper's report; it is still to be waited for
  bool forced_ = false;           // the daemon killed the keeper (last_resort_kill)
  int keeper_killed_by_ = 0;
  KeeperAct keeper_act_;
  std::int64_t told_deadline_ = 0;  // the last deadline request written, and when it was decided
  std::int64_t told_decided_ = -1;
};

}  // namespace redisgo::process
