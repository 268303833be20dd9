// The keeper and the job between fork and exec (child.h): only async-signal-safe calls
// from fork to the job's exec, and none that allocates.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "process/keeper.h"

namespace redisgo::process::detail {
namespace {

// While the keeper kills leftovers it re-checks this often (milliseconds).
constexpr int kSweepMs = 5;

// The daemon's own argument area (main's argv strings), which the keeper overwrites with
// its name: `killall redisgo_task` and `pkill -f redisgo_task` aimed at the daemon must
// not hit the keeper, whose survival is what takes the job's tree down.
char* g_args = nullptr;
std::size_t g_args_len = 0;
constexpr char kKeeperName[] = "redisgo-keeper";

void write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

[[noreturn]] void fail_in_child(int report_fd, Stage stage, int err) {
  ChildFailure failure{stage, err};
  // Nothing more can be done if this write fails; the exit code still says 126/127.
  write_all(report_fd, &failure, sizeof failure);
  ::_exit(stage == Stage::kExec && err == ENOENT ? 127 : 126);
}

// Marks every fd above 2 close-on-exec.
void cloexec_all_fds_above_stderr() {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  if (for_each_proc_entry("/proc/self/fd", [](int fd, int dir) {
        if (fd > 2 && fd != dir) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
      })) {
    return;
  }
  struct rlimit limit {};
  rlim_t max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < max_fd) max_fd = limit.rlim_cur;
  for (rlim_t fd = 3; fd < max_fd; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
}

void close_range_or_loop(unsigned first, unsigned last) {
  if (first > last) return;
  if (::close_range(first, last, 0) == 0) return;
  struct rlimit limit {};
  unsigned max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < max_fd) max_fd = static_cast<unsigned>(limit.rlim_cur);
  for (unsigned fd = first; fd <= last && fd < max_fd; ++fd) ::close(static_cast<int>(fd));
}

// The keeper keeps only stdio and its three pipe ends: the daemon's Redis sockets, its
// signalfd and the other end of each pipe must not be held open by it.
void close_all_but(int a, int b, int c) {
  int keep[3] = {a, b, c};
  std::sort(keep, keep + 3);
  unsigned from = 3;
  for (int k : keep) {
    if (k < 3) continue;
    if (static_cast<unsigned>(k) > from) close_range_or_loop(from, static_cast<unsigned>(k) - 1);
    from = static_cast<unsigned>(k) + 1;
  }
  close_range_or_loop(from, ~0U);
}

[[noreturn]] void run_job(const Plan& plan, int report_fd, pid_t keeper) noexcept {
  // Default dispositions: an ignored signal (the daemon ignores SIGPIPE) stays ignored
  // across exec. All signals are still blocked here.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::sigaction(sig, &dfl, nullptr);  // EINVAL for glibc's reserved signals: fine
  }
  // Own group, so kill(-pgid) reaches the job and everything it starts, and a ^C to the
  // daemon's terminal group is delivered through the daemon only.
  ::setpgid(0, 0);
  // The keeper is single-threaded, so the death signal is tied to its life, not a thread's.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail_in_child(report_fd, Stage::kExec, errno);
  if (::getppid() != keeper) ::_exit(128 + SIGKILL);  // the keeper died before prctl
  if (!plan.workdir.empty() && ::chdir(plan.workdir.c_str()) != 0) fail_in_child(report_fd, Stage::kChdir, errno);
  cloexec_all_fds_above_stderr();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(plan.path.c_str(), plan.argv.data(), plan.envp.data());
  fail_in_child(report_fd, Stage::kExec, errno);
}

// What start_job's clone hands the job: the job runs on a stack of its own in the keeper's
// memory until it execs.
struct JobStart {
  const Plan* plan;
  int report_fd;
  pid_t keeper;
};

int job_main(void* arg) {
  const auto* start = static_cast<const JobStart*>(arg);
  run_job(*start->plan, start->report_fd, start->keeper);
}

// The job's stack while it shares the keeper's memory: run_job makes a few system calls
// and allocates nothing.
constexpr std::size_t kJobStackBytes = 64 * 1024;

// Starts the job as posix_spawn does: clone(CLONE_VM | CLONE_VFORK) on a stack of its own,
// the keeper suspended until the job has exec'd or exited. A fork() here copied the
// keeper's page tables (the daemon's address space) only for exec to throw them away, and
// the keeper paid copy-on-write faults on top, on every start (docs/BENCHMARKS.md). What the job changes before exec is its own (no CLONE_FILES, CLONE_FS or
// CLONE_SIGHAND: descriptors, directory and dispositions are copies), its death signal is
// tied to the keeper (single-threaded), and every signal stays blocked until just before
// exec, with every disposition at its default by then, so no handler can run on the shared
// memory. Falls back to fork() when the stack cannot be mapped.
// Under AddressSanitizer or ThreadSanitizer the job forks instead: their runtimes do not know
// the job's own stack, and exec from it printed "ASan is ignoring requested
// __asan_handle_no_return ... False positive error reports may follow" into the daemon's
// log (the cron wrapper then rightly called a clean run loud). The clone path is what the
// optimised build, and so the default preset's suite, runs.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kForkTheJob = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kForkTheJob = true;
#else
constexpr bool kForkTheJob = false;
#endif
#else
constexpr bool kForkTheJob = false;
#endif

pid_t start_job(const Plan& plan, int report_fd, pid_t keeper) {
  void* stack = kForkTheJob ? MAP_FAILED
                            : ::mmap(nullptr, kJobStackBytes, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    const pid_t job = ::fork();
    if (job == 0) run_job(plan, report_fd, keeper);
    return job;
  }
  JobStart start{&plan, report_fd, keeper};
  // The stack grows down on x86-64 and aarch64: clone takes its top.
  char* top = static_cast<char*>(stack) + kJobStackBytes;
  const pid_t job = ::clone(job_main, top, CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  const int err = errno;
  ::munmap(stack, kJobStackBytes);  // the job has exec'd or exited by now
  errno = err;
  return job;
}

// SIGKILLs every live child of this process. As a subreaper, the keeper inherits each
// orphan of its tree, so repeating this until none is left kills every descendant,
// setsid'd ones included.
void kill_children(pid_t self) {
  for_each_proc_entry("/proc", [self](int pid, int proc_dir) {
    if (parent_of(pid, proc_dir) == self) ::kill(pid, SIGKILL);
  });
}

// ---- The keeper's main ----

// Everything up to the job's fork that makes this process the keeper: the job's output,
// no inherited descriptors, its own name, group and subreaper role.
void become_keeper(const Plan& plan, int control_fd, int status_fd, int report_fd) {
  // The job inherits the keeper's stdout and stderr (the keeper itself writes to neither).
  if (plan.output_fd >= 0) {
    ::dup2(plan.output_fd, STDOUT_FILENO);
    ::dup2(plan.output_fd, STDERR_FILENO);
  }
  close_all_but(control_fd, status_fd, report_fd);
  ::prctl(PR_SET_NAME, kKeeperName, 0, 0, 0);
  if (g_args && g_args_len > 0) {
    std::memset(g_args, 0, g_args_len);
    std::memcpy(g_args, kKeeperName, std::min(g_args_len - 1, sizeof kKeeperName - 1));
  }
  ::setpgid(0, 0);  // group signals to the job never reach the keeper, nor the other way
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

std::int64_t boot_now_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// Arms (or, for 0, disarms) an absolute CLOCK_BOOTTIME timer.
void arm_at(int timer_fd, std::int64_t at_ns) {
  if (timer_fd < 0) return;
  itimerspec spec{};
  if (at_ns > 0) {
    spec.it_value.tv_sec = static_cast<time_t>(at_ns / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(at_ns % 1'000'000'000);
  }
  ::timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

// The lease deadline, held here too: if the daemon is stopped or wedged (SIGSTOP, a
// debugger, a stuck page fault) the job is still killed when the lease can end. An
// absolute CLOCK_BOOTTIME timer also fires at once after a suspend or a freeze of the
// whole tree. Returns the timer, or -1 when none could be made.
int arm_lease_deadline(const Plan& plan, int report_fd) {
  int deadline_fd = ::timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
  // Armed before the job exists, and the job is not started at all once the lease can
  // have ended: a daemon that stalled between its own check and here must not start a
  // child under a lease another host may hold by now.
  if (!may_start(plan.deadline_ns, boot_now_ns())) fail_in_child(report_fd, Stage::kDeadline, ETIME);
  if (plan.deadline_ns <= 0) return deadline_fd;
  arm_at(deadline_fd, plan.deadline_ns);
  return deadline_fd;
}

// The keeper once the job runs: reaps, forwards the daemon's requests, holds the deadline,
// and kills the whole tree when the job ends, the deadline passes or the daemon is gone.
class Keeper {
 public:
  Keeper(pid_t self, pid_t job, int control_fd, int status_fd, int chld_fd, int deadline_fd, const Plan& plan)
      : self_(self), job_(job), control_fd_(control_fd), status_fd_(status_fd), chld_fd_(chld_fd),
        deadline_fd_(deadline_fd), settings_(plan.deadline), state_(started(plan.deadline_ns, boot_now_ns())) {}

  [[noreturn]] void run() {
    for (;;) {
      reap_exited();
      if (killing_) kill_children(self_);
      if (!killing_) hold_deadline();

      pollfd fds[3];
      nfds_t nfds = 0;
      int control_at = -1;
      if (daemon_alive_) {
        control_at = static_cast<int>(nfds);
        fds[nfds++] = pollfd{control_fd_, POLLIN, 0};
      }
      if (chld_fd_ >= 0) fds[nfds++] = pollfd{chld_fd_, POLLIN, 0};
      // The timer only wakes the loop: hold_deadline() decides from the clock.
      if (deadline_fd_ >= 0 && !killing_) fds[nfds++] = pollfd{deadline_fd_, POLLIN, 0};
      // Without a SIGCHLD fd (signalfd failed) or a timer, fall back to checking every few ms.
      const int timeout = killing_ || chld_fd_ < 0 || deadline_fd_ < 0 ? kSweepMs : -1;
      if (::poll(fds, nfds, timeout) < 0 && errno != EINTR) ::poll(nullptr, 0, kSweepMs);
      if (chld_fd_ >= 0) {
        signalfd_siginfo si;
        while (::read(chld_fd_, &si, sizeof si) > 0) {
        }
      }
      // Every message that is waiting is taken before the deadline is looked at again: a
      // keeper resumed after a stop acts on the daemon's last deadline, not a stale one.
      if (control_at >= 0 && fds[control_at].revents != 0) read_control();
    }
  }

 private:
  // Carries out the deadline rule (deadline_rule.h) and arms the timer for its next look.
  void hold_deadline() {
    for (;;) {
      const std::int64_t now = boot_now_ns();
      const DeadlineMove move = decide(state_, now, settings_);
      if (move.kind == DeadlineMove::Kind::kWait) {
        arm_at(deadline_fd_, move.until_ns);
        return;
      }
      if (move.kind == DeadlineMove::Kind::kSignal) {
        // The daemon cannot stop its child (silent for a tick): the keeper does, as the
        // daemon would have: kill_signal, SIGCONT so that a stopped job can act on it.
        if (!job_done_) {
          ::kill(-job_, settings_.kill_signal);
          ::kill(-job_, SIGCONT);
        }
        state_ = signalled(state_);
        report_deadline(settings_.kill_signal, now);
        continue;
      }
      // The lease can end now and nobody stopped the job: it must not run on.
      if (!job_done_) ::kill(-job_, SIGKILL);
      killing_ = true;
      report_deadline(SIGKILL, now);
      return;
    }
  }

  void report_deadline(int sig, std::int64_t at_ns) {
    KeeperReport acted{Report::kDeadline, sig, at_ns};
    write_all(status_fd_, &acted, sizeof acted);
  }

  // Reaps whatever exited; once killing, exits when the whole tree is gone. The job is
  // peeked first (WNOWAIT) so that its group can be killed while its zombie still holds
  // the group id.
  void reap_exited() {
    for (;;) {
      siginfo_t info{};
      if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno == EINTR) continue;
        if (killing_) {  // ECHILD: the whole tree is gone
          KeeperReport exited{Report::kExited, job_status_, 0};
          write_all(status_fd_, &exited, sizeof exited);
          ::_exit(0);
        }
        return;
      }
      if (info.si_pid == 0) return;
      if (info.si_pid == job_) ::kill(-job_, SIGKILL);
      int status = 0;
      while (::waitpid(info.si_pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (info.si_pid == job_) {
        job_status_ = status;
        job_done_ = true;
        killing_ = true;
      }
    }
  }

  // Reads every whole request waiting on the control pipe (non-blocking on this side) and
  // carries it out; EOF means the daemon is gone.
  void read_control() {
    for (;;) {
      ssize_t n = ::read(control_fd_, pending_ + pending_len_, sizeof pending_ - pending_len_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return;  // EAGAIN: all taken
      if (n == 0) {
        // The daemon is gone (exit, crash, SIGKILL): nothing may outlive it.
        daemon_alive_ = false;
        if (!job_done_) ::kill(-job_, SIGKILL);
        killing_ = true;
        return;
      }
      pending_len_ += static_cast<std::size_t>(n);
      std::size_t at = 0;
      for (; pending_len_ - at >= sizeof(KeeperRequest); at += sizeof(KeeperRequest)) {
        KeeperRequest req;
        std::memcpy(&req, pending_ + at, sizeof req);
        carry_out(req);
      }
      std::memmove(pending_, pending_ + at, pending_len_ - at);
      pending_len_ -= at;
    }
  }

  void carry_out(const KeeperRequest& req) {
    if (req.kind == Request::kDeadline) {
      state_ = take(state_, DeadlineMessage{req.value, req.decided_ns, req.sent_ns});
      return;
    }
    state_ = heard(state_, req.sent_ns);
    if (req.kind == Request::kSignal && !job_done_ && req.value > 0 && req.value < NSIG) {
      ::kill(-job_, static_cast<int>(req.value));
      if (req.value == SIGKILL) killing_ = true;
    }
  }

  const pid_t self_;
  const pid_t job_;
  const int control_fd_;
  const int status_fd_;
  const int chld_fd_;
  const int deadline_fd_;
  const DeadlineSettings settings_;
  DeadlineState state_;
  bool daemon_alive_ = true;
  bool job_done_ = false;
  bool killing_ = false;  // the job is over or must die: kill every descendant
  int job_status_ = 0;
  // Up to 32 requests per read: a backlog after a stop is taken in a few reads.
  char pending_[32 * sizeof(KeeperRequest)];
  std::size_t pending_len_ = 0;
};

}  // namespace

int parent_of(int pid, int proc_dir) {
  char path[32];
  // "<pid>/stat" relative to /proc, built by hand (no snprintf after fork).
  char digits[16];
  int nd = 0;
  for (int v = pid; v > 0 && nd < 15; v /= 10) digits[nd++] = static_cast<char>('0' + v % 10);
  int len = 0;
  while (nd > 0) path[len++] = digits[--nd];
  const char* suffix = "/stat";
  for (const char* s = suffix; *s; ++s) path[len++] = *s;
  path[len] = '\0';
  int fd = ::openat(proc_dir, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* close_paren = nullptr;
  for (ssize_t i = 0; i < n; ++i) {
    if (buf[i] == ')') close_paren = buf + i;
  }
  if (!close_paren) return -1;
  const char* p = close_paren + 1;
  while (*p == ' ') ++p;
  while (*p && *p != ' ') ++p;  // state
  while (*p == ' ') ++p;
  int ppid = 0;
  while (*p >= '0' && *p <= '9') ppid = ppid * 10 + (*p++ - '0');
  return ppid;
}

void set_keeper_name_area(char* args, std::size_t len) noexcept {
  g_args = args;
  g_args_len = len;
}

[[noreturn]] void run_keeper(const Plan& plan, int control_fd, int status_fd, int report_fd) noexcept {
  become_keeper(plan, control_fd, status_fd, report_fd);
  const pid_t self = ::getpid();

  // The daemon may have died already: then nothing is started.
  pollfd check{control_fd, POLLIN, 0};
  if (::poll(&check, 1, 0) > 0 && (check.revents & (POLLHUP | POLLERR))) ::_exit(0);

  // Every signal stays blocked in the keeper (the mask came from spawn()); SIGCHLD is
  // read from a signalfd.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  const int chld_fd = ::signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  const int deadline_fd = arm_lease_deadline(plan, report_fd);
  // Every waiting request is read in one go (read_control): this end must not block.
  ::fcntl(control_fd, F_SETFL, ::fcntl(control_fd, F_GETFL) | O_NONBLOCK);

  const pid_t job = start_job(plan, report_fd, self);
  if (job < 0) fail_in_child(report_fd, Stage::kFork, errno);
  ::setpgid(job, job);  // from this side too, so the group exists before any signal
  KeeperReport started{Report::kStarted, job, 0};
  write_all(status_fd, &started, sizeof started);
  ::close(report_fd);  // the daemon reads EOF once the job has exec'd as well

  Keeper(self, job, control_fd, status_fd, chld_fd, deadline_fd, plan).run();
}

}  // namespace redisgo::process::detail
