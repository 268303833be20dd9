// The daemon's side of a child (child.h): spawning the keeper, reading its reports,
// reaping it, and the last-resort kills. The keeper's own side is keeper.cpp.
#include "process/child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "process/keeper.h"
#include "util/exit_status.h"

namespace redisgo::process {

using detail::ChildFailure;
using detail::KeeperReport;
using detail::KeeperRequest;
using detail::Report;
using detail::Request;
using detail::Stage;

namespace {

// The job's code when its keeper was killed from outside (the OOM killer, a kill -9): the
// job died of its death signal with it (redisgo_task(1), EXIT STATUS).
constexpr int kKeeperKilledExitCode = exit_status(Outcome::kKeeperKilled);
// The job's code when the daemon itself had to kill the keeper (last_resort_kill): the
// job's group got SIGKILL first.
constexpr int kForcedExitCode = 128 + SIGKILL;
// While waiting for a SIGKILLed tree, how often the SIGKILL is repeated.
constexpr Millis kKillRepeat{1000};
// A keeper that has not exited this long after SIGKILL requests is itself stopped or
// wedged: the daemon then kills it and the job's group directly (last resort).
constexpr int kKeeperPatience = 5;  // kKillRepeat periods

// Keepers alive in this process (for the orphan clean-up, which must spare them).
std::mutex g_keepers_mu;
std::vector<pid_t> g_keepers;

void register_keeper(pid_t pid) {
  std::lock_guard lk(g_keepers_mu);
  g_keepers.push_back(pid);
}

void forget_keeper(pid_t pid) {
  std::lock_guard lk(g_keepers_mu);
  g_keepers.erase(std::remove(g_keepers.begin(), g_keepers.end(), pid), g_keepers.end());
}

bool is_keeper(pid_t pid) {
  std::lock_guard lk(g_keepers_mu);
  return std::find(g_keepers.begin(), g_keepers.end(), pid) != g_keepers.end();
}

// Reads the job's exec report: nullopt on EOF (the exec closed the CLOEXEC pipe).
std::optional<ChildFailure> read_report(int fd) {
  ChildFailure failure{};
  std::size_t got = 0;
  char* out = reinterpret_cast<char*>(&failure);
  while (got < sizeof failure) {
    ssize_t n = ::read(fd, out + got, sizeof failure - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ChildFailure{Stage::kExec, errno};
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got == 0) return std::nullopt;
  if (got < sizeof failure) return ChildFailure{Stage::kExec, EIO};
  return failure;
}

// Reads one keeper report without blocking (the keeper writes them whole).
std::optional<KeeperReport> read_keeper_report(int fd) {
  KeeperReport r{};
  for (;;) {
    ssize_t n = ::read(fd, &r, sizeof r);
    if (n < 0 && errno == EINTR) continue;
    if (n == static_cast<ssize_t>(sizeof r)) return r;
    return std::nullopt;
  }
}

std::int64_t boot_now_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

int waitpid_retrying(pid_t pid, int* status, int flags) {
  for (;;) {
    pid_t r = ::waitpid(pid, status, flags);
    if (r >= 0 || errno != EINTR) return static_cast<int>(r);
  }
}

}  // namespace

int exit_code_from_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

Child Child::spawn(const SpawnOptions& options) {
  detail::Plan plan = detail::make_plan(options);
  auto [report_read, report_write] = pipe_cloexec();
  auto [control_read, control_write] = pipe_cloexec();
  auto [status_read, status_write] = pipe_cloexec();

  // With every signal blocked across fork, no handler of the daemon can run in the
  // keeper, and the keeper keeps them blocked (it reads SIGCHLD from a signalfd).
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t keeper = ::fork();
  if (keeper == 0) detail::run_keeper(plan, control_read.get(), status_write.get(), report_write.get());
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (keeper < 0) throw_errno("fork", fork_errno);
  report_write.reset();
  control_read.reset();
  status_write.reset();

  Child child;
  child.keeper_ = keeper;
  register_keeper(keeper);
  child.control_ = std::move(control_write);
  child.status_in_ = std::move(status_read);
  // pidfds are close-on-exec from birth. The pid cannot have been reused: it is ours and
  // not reaped yet. (Raw syscall: glibc 2.36's <sys/pidfd.h> does not link from C++.)
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, keeper, 0));
  if (pidfd >= 0) child.pidfd_.reset(pidfd);

  if (auto failure = read_report(report_read.get())) {
    child.wait();  // the keeper reaps the failed job and exits
    child.reap_keeper();
    child.keeper_ = -1;
    const std::string name = "cannot run '" + options.argv[0] + "'";
    if (failure->stage == Stage::kChdir) {
      throw SpawnError(errno_message(name + ": cannot change directory to '" + options.workdir + "'", failure->err),
                       failure->err, SpawnError::Cause::kCannotRun);
    }
    if (failure->stage == Stage::kFork) {
      throw SpawnError(errno_message(name + ": fork", failure->err), failure->err, SpawnError::Cause::kCannotRun);
    }
    if (failure->stage == Stage::kDeadline) {
      throw SpawnError(name + ": not started: the lease could have ended before the child started", ETIME,
                       SpawnError::Cause::kTooLate);
    }
    if (failure->err == ENOENT || failure->err == EACCES) {
      // exec says ENOENT for a file that exists when its #! interpreter or its dynamic
      // loader does not: name that, not "No such file" for a file the operator can see.
      const std::string seen =
          plan.path[0] != '/' && !options.workdir.empty() ? options.workdir + "/" + plan.path : plan.path;
      if (auto bad = detail::interpreter_problem(seen, options.workdir)) {
        throw SpawnError(name + ": " + bad->why, failure->err,
                         failure->err == ENOENT ? SpawnError::Cause::kNotFound : SpawnError::Cause::kCannotRun);
      }
    }
    throw SpawnError(errno_message(name, failure->err), failure->err,
                     failure->err == ENOENT ? SpawnError::Cause::kNotFound : SpawnError::Cause::kCannotRun);
  }
  // The keeper wrote the job's pid before closing its copy of the report pipe.
  if (auto started = read_keeper_report(child.status_in_.get()); started && started->kind == Report::kStarted) {
    child.pid_ = started->value;
  }
  // Signal requests must never block the daemon's loop. A request that does not fit is
  // lost, and the keeper takes deadlines as a chain (deadline_rule.h): room for hours of
  // renewals of a stopped keeper (1 MiB, the unprivileged maximum; 64 KiB if refused).
  ::fcntl(child.control_.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(child.control_.get(), F_SETPIPE_SZ, 1 << 20);
  child.told_deadline_ = options.deadline_ns;
  ::fcntl(child.status_in_.get(), F_SETFL, O_NONBLOCK);
  if (pidfd < 0 && errno != ENOSYS) {
    // Without a pidfd, wait_for() polls; only a kernel older than 5.3 lacks it.
  }
  return child;
}

Child::Child(Child&& other) noexcept
    : keeper_(std::exchange(other.keeper_, -1)),
      pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      control_(std::move(other.control_)),
      status_in_(std::move(other.status_in_)),
      status_(std::exchange(other.status_, std::nullopt)),
      keeper_unreaped_(std::exchange(other.keeper_unreaped_, false)),
      forced_(std::exchange(other.forced_, false)),
      keeper_killed_by_(std::exchange(other.keeper_killed_by_, 0)),
      keeper_act_(std::exchange(other.keeper_act_, KeeperAct{})),
      told_deadline_(std::exchange(other.told_deadline_, 0)),
      told_decided_(std::exchange(other.told_decided_, -1)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    if (running()) terminate_group(SIGKILL, Millis(0));
    reap_keeper();
    keeper_unreaped_ = std::exchange(other.keeper_unreaped_, false);
    keeper_ = std::exchange(other.keeper_, -1);
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    control_ = std::move(other.control_);
    status_in_ = std::move(other.status_in_);
    status_ = std::exchange(other.status_, std::nullopt);
    forced_ = std::exchange(other.forced_, false);
    keeper_killed_by_ = std::exchange(other.keeper_killed_by_, 0);
    keeper_act_ = std::exchange(other.keeper_act_, KeeperAct{});
    told_deadline_ = std::exchange(other.told_deadline_, 0);
    told_decided_ = std::exchange(other.told_decided_, -1);
  }
  return *this;
}

Child::~Child() {
  if (running()) terminate_group(SIGKILL, Millis(0));
  reap_keeper();
}

void Child::reap_keeper() noexcept {
  if (!keeper_unreaped_) return;
  keeper_unreaped_ = false;
  if (keeper_ <= 0) return;
  // It has reported the tree gone and only exits; SIGKILL makes sure a keeper stopped in
  // that last moment does not hold this up.
  ::kill(keeper_, SIGKILL);
  int status = 0;
  waitpid_retrying(keeper_, &status, 0);
  forget_keeper(keeper_);
  pidfd_.reset();
}

std::optional<int> Child::reap(bool block) noexcept {
  if (!running()) return status_;
  int status = 0;
  pid_t r = static_cast<pid_t>(waitpid_retrying(keeper_, &status, WNOHANG));
  if (r == 0) {
    // The keeper reports the job's status once the job's whole tree is dead and reaped,
    // and then only exits: that report ends the child. The keeper itself (tearing down its
    // copy of the daemon's memory takes a while) is reaped later, off the release's path,
    // so that a handover does not wait for it.
    while (auto report = read_keeper_report(status_in_.get())) {
      note_deadline_act(*report);
      if (report->kind == Report::kExited) {
        status_ = exit_code_from_wait_status(report->value);
        keeper_unreaped_ = true;
        control_.reset();
        return status_;
      }
    }
    if (!block) return std::nullopt;  // still running
    r = static_cast<pid_t>(waitpid_retrying(keeper_, &status, 0));
  }
  // The keeper's last report is the job's wait status.
  std::optional<int> code;
  while (auto report = read_keeper_report(status_in_.get())) {
    note_deadline_act(*report);
    if (report->kind == Report::kExited) code = exit_code_from_wait_status(report->value);
  }
  forget_keeper(keeper_);
  if (!code) {
    // The keeper was killed before the tree was gone: its job died of the death signal,
    // and the job's own descendants were orphaned. As a child subreaper (set_subreaper)
    // this process inherits them: kill them all before anyone may release the lease.
    kill_orphans();
    if (forced_) {
      code = kForcedExitCode;
    } else {
      keeper_killed_by_ = WIFSIGNALED(status) ? WTERMSIG(status) : -1;
      code = kKeeperKilledExitCode;
    }
  }
  status_ = code;
  control_.reset();
  pidfd_.reset();
  return status_;
}

void Child::kill_orphans() noexcept {
  if (pid_ > 0) ::kill(-pid_, SIGKILL);  // the job's group, if anything of it is left
  const pid_t self = ::getpid();
  // Each pass kills this process's children that are not keepers; their own children
  // are orphaned to us in turn. Bounded: SIGKILLed processes die promptly.
  for (int pass = 0; pass < 400; ++pass) {
    bool any = false;
    detail::for_each_proc_entry("/proc", [&](int pid, int proc_dir) {
      if (detail::parent_of(pid, proc_dir) != self || is_keeper(pid)) return;
      any = true;
      ::kill(pid, SIGKILL);
    });
    // Reap the ones that died (only non-keepers: peek, then wait by pid).
    for (;;) {
      siginfo_t info{};
      if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) break;
      if (is_keeper(info.si_pid)) break;  // a keeper's exit is its Child's to reap
      int st = 0;
      waitpid_retrying(info.si_pid, &st, 0);
    }
    if (!any) return;
    ::poll(nullptr, 0, 5);
  }
}

void set_subreaper() noexcept { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

void set_program_args(int argc, char** argv) noexcept {
  if (argc <= 0 || !argv || !argv[0]) return;
  // The strings of argv are contiguous: from argv[0] to the end of the last one.
  char* end = argv[argc - 1] + std::strlen(argv[argc - 1]) + 1;
  detail::set_keeper_name_area(argv[0], static_cast<std::size_t>(end - argv[0]));
}

std::optional<int> Child::try_wait() { return reap(false); }

int Child::wait() {
  auto code = reap(true);
  return code.value_or(kKeeperKilledExitCode);
}

std::optional<int> Child::wait_for(Millis timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto code = reap(false)) return code;
    const auto left = std::chrono::ceil<Millis>(deadline - std::chrono::steady_clock::now());
    if (left <= Millis(0)) return std::nullopt;
    if (pidfd_) {
      pollfd p{pidfd_.get(), POLLIN, 0};
      const int ms = static_cast<int>(std::min<long long>(left.count(), INT_MAX));
      if (::poll(&p, 1, ms) < 0 && errno != EINTR) std::this_thread::sleep_for(std::min(left, Millis(5)));
    } else {
      std::this_thread::sleep_for(std::min(left, Millis(5)));
    }
  }
}

namespace {

/// Writes a request to the keeper without risking SIGPIPE when the keeper is gone: the
/// daemon ignores SIGPIPE, but this module must not depend on its caller's disposition.
/// SIGPIPE is blocked in this thread for the write, and one it raised is consumed.
void write_request(int fd, const void* data, std::size_t size) noexcept {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  const ssize_t n = ::write(fd, data, size);
  if (n < 0 && errno == EPIPE && !was_pending) {
    const timespec zero{0, 0};
    ::sigtimedwait(&pipe_only, nullptr, &zero);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

void Child::note_deadline_act(const KeeperReport& report) noexcept {
  if (report.kind != Report::kDeadline || keeper_act_.signal != 0) return;
  keeper_act_ = KeeperAct{report.value, report.at_ns};
}

void Child::signal_group(int sig) noexcept {
  if (!running() || !control_ || sig <= 0 || sig >= NSIG) return;
  KeeperRequest req{Request::kSignal, sig, 0, boot_now_ns()};
  write_request(control_.get(), &req, sizeof req);
  // A stopped keeper could not act on the request.
  ::kill(keeper_, SIGCONT);
  // SIGKILL also goes to the job's group directly: it must not depend on the keeper. (The
  // group id stays the job's while the keeper lives: it kills the group before it reaps
  // the job's leader, and exits only when the tree is gone.)
  if (sig == SIGKILL && pid_ > 0) ::kill(-pid_, SIGKILL);
}

void Child::force_kill() noexcept {
  if (!running()) return;
  last_resort_kill();
}

void Child::set_deadline(std::int64_t boot_ns, std::int64_t decided_ns) noexcept {
  if (!running() || !control_) return;
  const std::int64_t deadline = std::max<std::int64_t>(boot_ns, 0);
  // The same deadline again only says that the daemon runs. A keeper that has not read the
  // last request yet (stopped) learns that from it when it does, and a backlog of repeats
  // would only fill the pipe.
  int unread = 0;
  if (deadline == told_deadline_ && decided_ns == told_decided_ && ::ioctl(control_.get(), FIONREAD, &unread) == 0 &&
      unread > 0) {
    return;
  }
  told_deadline_ = deadline;
  told_decided_ = decided_ns;
  KeeperRequest req{Request::kDeadline, deadline, decided_ns, boot_now_ns()};
  write_request(control_.get(), &req, sizeof req);
}

void Child::last_resort_kill() noexcept {
  // The keeper does not act on our requests (stopped, wedged): kill it and the job's
  // group directly. The job's death signal then fires too, and the job's orphans come
  // to this process (a subreaper), which reap() kills.
  forced_ = true;
  ::kill(keeper_, SIGKILL);
  if (pid_ > 0) ::kill(-pid_, SIGKILL);
}

int Child::terminate_group(int sig, Millis grace) noexcept {
  if (keeper_ <= 0) return -1;
  if (auto code = reap(false)) return *code;
  if (sig != SIGKILL) {
    signal_group(sig);
    // A stopped process would only act on the signal once continued.
    if (sig != SIGCONT) signal_group(SIGCONT);
    try {
      if (auto code = wait_for(grace)) return *code;
    } catch (...) {  // wait_for allocates nothing, but this must never throw
    }
  }
  for (int round = 0;; ++round) {
    signal_group(SIGKILL);
    ::kill(keeper_, SIGCONT);  // a stopped keeper could not act on it
    if (round >= kKeeperPatience) last_resort_kill();
    try {
      if (auto code = wait_for(kKillRepeat)) return *code;
    } catch (...) {
    }
  }
}

Spawner& keeper_spawner() {
  struct KeeperSpawner final : Spawner {
    std::unique_ptr<Job> spawn(const SpawnOptions& options) override {
      return std::make_unique<Child>(Child::spawn(options));
    }
  };
  static KeeperSpawner spawner;
  return spawner;
}

}  // namespace redisgo::process
