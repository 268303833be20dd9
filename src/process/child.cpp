#include "process/child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
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

extern char** environ;

namespace redisgo::process {
namespace {

// Used when the merged environment has no PATH; what a login shell would usually have.
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
// The code when the job's status is unknowable (the keeper was killed from outside).
constexpr int kUnknownExitCode = 255;
// While waiting for a SIGKILLed tree, how often the SIGKILL is repeated.
constexpr Millis kKillRepeat{1000};
// A keeper that has not exited this long after SIGKILL requests is itself stopped or
// wedged: the daemon then kills it and the job's group directly (last resort).
constexpr int kKeeperPatience = 5;  // kKillRepeat periods
// While the keeper kills leftovers it re-checks this often (milliseconds).
constexpr int kSweepMs = 5;

// What the job reports over the error pipe before _exit. One write(2) of a few bytes,
// atomic on a pipe.
enum class Stage : int { kChdir = 1, kExec = 2, kFork = 3, kDeadline = 4 };
struct ChildFailure {
  Stage stage;
  int err;
};

// What the daemon asks of the keeper on the control pipe: whole records (16 bytes, one
// write each, atomic on a pipe).
enum class Request : std::int64_t { kSignal = 1, kDeadline = 2 };
struct KeeperRequest {
  Request kind;
  std::int64_t value;  // kSignal: the signal; kDeadline: CLOCK_BOOTTIME ns, 0 = none
};

// What the keeper reports to the daemon on the status pipe.
enum class Report : std::int32_t { kStarted = 1, kExited = 2 };
struct KeeperReport {
  Report kind;
  std::int32_t value;  // kStarted: the job's pid; kExited: its wait status
};

// Everything the keeper and the job need, prepared before fork so that they allocate nothing.
struct Plan {
  std::string path;  // resolved executable
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string workdir;
  std::int64_t deadline_ns = 0;  // CLOCK_BOOTTIME; 0 = none
  int output_fd = -1;            // the job's stdout and stderr; -1 = inherited
};

// The daemon's own argument area (main's argv strings), which the keeper overwrites with
// its name: `killall redisgo_task` and `pkill -f redisgo_task` aimed at the daemon must
// not hit the keeper, whose survival is what takes the job's tree down.
char* g_args = nullptr;
std::size_t g_args_len = 0;
constexpr char kKeeperName[] = "redisgo-keeper";

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

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides,
                                            const std::vector<std::string>& unset) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    std::string name(entry.substr(0, eq));
    if (overrides.count(name) != 0) continue;
    if (std::find(unset.begin(), unset.end(), name) != unset.end()) continue;
    env.emplace_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

std::optional<std::string> env_value(const std::vector<std::string>& env, const std::string& name) {
  const std::string prefix = name + "=";
  for (const auto& entry : env) {
    if (entry.compare(0, prefix.size(), prefix) == 0) return entry.substr(prefix.size());
  }
  return std::nullopt;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// The path the job will exec for `name` (relative paths are relative to its workdir): a
/// name with '/' as given, else execvpe's search of the PATH in `env`. nullopt: not found.
std::optional<std::string> program_path(const std::string& name, const std::vector<std::string>& env,
                                        const std::string& workdir) {
  if (name.find('/') != std::string::npos) return name;
  return search_path(name, env_value(env, "PATH").value_or(kDefaultPath), workdir);
}

Plan make_plan(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    throw SpawnError("cannot run an empty command", EINVAL, SpawnError::Cause::kNotFound);
  }
  Plan plan;
  plan.argv_storage = options.argv;
  plan.env_storage = merged_environment(options.env, options.unset_env);
  plan.workdir = options.workdir;
  plan.deadline_ns = options.deadline_ns;
  plan.output_fd = options.output_fd;

  const std::string& name = options.argv[0];
  auto found = program_path(name, plan.env_storage, plan.workdir);
  if (!found) {
    throw SpawnError(errno_message("cannot run '" + name + "'", ENOENT), ENOENT, SpawnError::Cause::kNotFound);
  }
  plan.path = *found;

  for (auto& arg : plan.argv_storage) plan.argv.push_back(arg.data());
  plan.argv.push_back(nullptr);
  for (auto& entry : plan.env_storage) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);
  return plan;
}

// ---- Keeper and job side: only async-signal-safe calls from here to the exec ----

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

// Calls fn(pid) for every numeric entry of /proc, with raw getdents64 (opendir
// allocates, which is not allowed after fork in a threaded program).
template <class Fn>
bool for_each_proc_entry(const char* dir_path, Fn fn) {
  int dir = ::open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  alignas(8) char buf[4096];
  for (;;) {
    long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      // linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, char name[].
      unsigned short reclen;
      std::memcpy(&reclen, buf + off + 16, sizeof reclen);
      const char* name = buf + off + 19;
      long value = 0;
      bool numeric = *name != '\0';
      for (const char* c = name; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9' || value > INT_MAX / 10) {
          numeric = false;
          break;
        }
        value = value * 10 + (*c - '0');
      }
      if (numeric) fn(static_cast<int>(value), dir);
      off += reclen;
    }
  }
  ::close(dir);
  return true;
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

// The ppid field of /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may contain
// spaces and parentheses, so parse from the last ')'). -1 if unreadable.
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

// SIGKILLs every live child of this process. As a subreaper, the keeper inherits each
// orphan of its tree, so repeating this until none is left kills every descendant,
// setsid'd ones included.
void kill_children(pid_t self) {
  for_each_proc_entry("/proc", [self](int pid, int proc_dir) {
    if (parent_of(pid, proc_dir) == self) ::kill(pid, SIGKILL);
  });
}

[[noreturn]] void run_keeper(const Plan& plan, int control_fd, int status_fd, int report_fd) noexcept {
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
  const pid_t self = ::getpid();

  // The daemon may have died already: then nothing is started.
  pollfd check{control_fd, POLLIN, 0};
  if (::poll(&check, 1, 0) > 0 && (check.revents & (POLLHUP | POLLERR))) ::_exit(0);

  // Every signal stays blocked in the keeper (the mask came from spawn()); SIGCHLD is
  // read from a signalfd.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  int chld_fd = ::signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  // The lease deadline, held here too: if the daemon is stopped or wedged (SIGSTOP, a
  // debugger, a stuck page fault) the job is still killed when the lease can end. An
  // absolute CLOCK_BOOTTIME timer also fires at once after a suspend or a freeze of the
  // whole tree.
  int deadline_fd = ::timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
  if (plan.deadline_ns > 0) {
    // Armed before the job exists, and the job is not started at all once the lease can
    // have ended: a daemon that stalled between its own check and here must not start a
    // child under a lease another host may hold by now.
    timespec now{};
    ::clock_gettime(CLOCK_BOOTTIME, &now);
    const std::int64_t now_ns = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
    if (now_ns >= plan.deadline_ns) fail_in_child(report_fd, Stage::kDeadline, ETIME);
    if (deadline_fd >= 0) {
      itimerspec spec{};
      spec.it_value.tv_sec = static_cast<time_t>(plan.deadline_ns / 1'000'000'000);
      spec.it_value.tv_nsec = static_cast<long>(plan.deadline_ns % 1'000'000'000);
      ::timerfd_settime(deadline_fd, TFD_TIMER_ABSTIME, &spec, nullptr);
    }
  }

  const pid_t job = ::fork();
  if (job == 0) run_job(plan, report_fd, self);
  if (job < 0) fail_in_child(report_fd, Stage::kFork, errno);
  ::setpgid(job, job);  // from this side too, so the group exists before any signal
  KeeperReport started{Report::kStarted, job};
  write_all(status_fd, &started, sizeof started);
  ::close(report_fd);  // the daemon reads EOF once the job has exec'd as well

  bool daemon_alive = true;
  bool job_done = false;
  bool killing = false;  // the job is over or must die: kill every descendant
  int job_status = 0;
  char pending[sizeof(KeeperRequest)];
  std::size_t pending_len = 0;
  for (;;) {
    // Reap whatever exited. The job is peeked first (WNOWAIT) so that its group can be
    // killed while its zombie still holds the group id.
    for (;;) {
      siginfo_t info{};
      if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno == EINTR) continue;
        if (killing) {  // ECHILD: the whole tree is gone
          KeeperReport exited{Report::kExited, job_status};
          write_all(status_fd, &exited, sizeof exited);
          ::_exit(0);
        }
        break;
      }
      if (info.si_pid == 0) break;
      if (info.si_pid == job) ::kill(-job, SIGKILL);
      int status = 0;
      while (::waitpid(info.si_pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (info.si_pid == job) {
        job_status = status;
        job_done = true;
        killing = true;
      }
    }
    if (killing) kill_children(self);

    pollfd fds[3];
    nfds_t nfds = 0;
    int control_at = -1, deadline_at = -1;
    if (daemon_alive) {
      control_at = static_cast<int>(nfds);
      fds[nfds++] = pollfd{control_fd, POLLIN, 0};
    }
    if (chld_fd >= 0) fds[nfds++] = pollfd{chld_fd, POLLIN, 0};
    if (deadline_fd >= 0 && !killing) {
      deadline_at = static_cast<int>(nfds);
      fds[nfds++] = pollfd{deadline_fd, POLLIN, 0};
    }
    // Without a SIGCHLD fd (signalfd failed) fall back to checking every few ms.
    const int timeout = killing || chld_fd < 0 ? kSweepMs : -1;
    if (::poll(fds, nfds, timeout) < 0 && errno != EINTR) ::poll(nullptr, 0, kSweepMs);
    if (chld_fd >= 0) {
      signalfd_siginfo si;
      while (::read(chld_fd, &si, sizeof si) > 0) {
      }
    }
    if (deadline_at >= 0 && fds[deadline_at].revents != 0) {
      // The lease can end now and nobody stopped the job: it must not run on.
      if (!job_done) ::kill(-job, SIGKILL);
      killing = true;
    }
    // The control pipe is blocking on this side: read it only when poll says so.
    if (control_at < 0 || fds[control_at].revents == 0) continue;
    ssize_t n = ::read(control_fd, pending + pending_len, sizeof pending - pending_len);
    if (n < 0) continue;
    if (n == 0) {
      // The daemon is gone (exit, crash, SIGKILL): nothing may outlive it.
      daemon_alive = false;
      if (!job_done) ::kill(-job, SIGKILL);
      killing = true;
      continue;
    }
    pending_len += static_cast<std::size_t>(n);
    if (pending_len < sizeof pending) continue;
    pending_len = 0;
    KeeperRequest req;
    std::memcpy(&req, pending, sizeof req);
    if (req.kind == Request::kDeadline && deadline_fd >= 0) {
      itimerspec spec{};  // 0: disarm
      if (req.value > 0) {
        spec.it_value.tv_sec = static_cast<time_t>(req.value / 1'000'000'000);
        spec.it_value.tv_nsec = static_cast<long>(req.value % 1'000'000'000);
      }
      ::timerfd_settime(deadline_fd, TFD_TIMER_ABSTIME, &spec, nullptr);
    } else if (req.kind == Request::kSignal && !job_done && req.value > 0 && req.value < NSIG) {
      ::kill(-job, static_cast<int>(req.value));
      if (req.value == SIGKILL) killing = true;
    }
  }
}

// ---- Parent side ----

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

std::optional<std::string> search_path(const std::string& name, const std::string& path_var,
                                       const std::string& workdir) {
  // execvpe's search: the first executable regular file on PATH wins; failing that, the
  // first non-executable regular file (exec then fails with EACCES, 126, as a shell
  // reports it); failing that, not found (127). Relative PATH entries are taken relative
  // to the workdir, where the child will exec.
  std::optional<std::string> not_executable;
  std::size_t start = 0;
  while (start <= path_var.size()) {
    std::size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    const std::string dir = end > start ? path_var.substr(start, end - start) : std::string(".");
    start = end + 1;
    std::string candidate = dir + "/" + name;
    std::string checked = candidate;  // as the parent sees it
    if (dir[0] != '/' && !workdir.empty()) checked = workdir + "/" + candidate;
    if (!is_regular_file(checked)) continue;
    if (::access(checked.c_str(), X_OK) == 0) return candidate;
    if (!not_executable) not_executable = candidate;
  }
  return not_executable;
}

std::optional<NotRunnable> why_not_runnable(const SpawnOptions& options) {
  if (!options.workdir.empty()) {
    struct stat st {};
    const std::string shown = "'" + options.workdir + "'";
    if (::stat(options.workdir.c_str(), &st) != 0) return NotRunnable{true, errno_message(shown, errno)};
    if (!S_ISDIR(st.st_mode)) return NotRunnable{true, shown + " is not a directory"};
    if (::access(options.workdir.c_str(), X_OK) != 0) return NotRunnable{true, errno_message(shown, errno)};
  }
  if (options.argv.empty() || options.argv[0].empty()) return NotRunnable{false, "the command is empty"};
  const std::string& name = options.argv[0];
  const auto env = merged_environment(options.env, options.unset_env);
  auto found = program_path(name, env, options.workdir);
  if (!found) {
    return NotRunnable{false, "'" + name + "' is not found on PATH (" + env_value(env, "PATH").value_or(kDefaultPath) + ")"};
  }
  // As this process sees it: a relative path is relative to the job's workdir.
  const std::string path = (*found)[0] != '/' && !options.workdir.empty() ? options.workdir + "/" + *found : *found;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NotRunnable{false, errno_message("'" + path + "'", errno)};
  if (!S_ISREG(st.st_mode)) return NotRunnable{false, "'" + path + "' is not a regular file"};
  if (::access(path.c_str(), X_OK) != 0) return NotRunnable{false, "'" + path + "' is not executable by this user"};
  return std::nullopt;
}

Child Child::spawn(const SpawnOptions& options) {
  Plan plan = make_plan(options);
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
  if (keeper == 0) run_keeper(plan, control_read.get(), status_write.get(), report_write.get());
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
    throw SpawnError(errno_message(name, failure->err), failure->err,
                     failure->err == ENOENT ? SpawnError::Cause::kNotFound : SpawnError::Cause::kCannotRun);
  }
  // The keeper wrote the job's pid before closing its copy of the report pipe.
  if (auto started = read_keeper_report(child.status_in_.get()); started && started->kind == Report::kStarted) {
    child.pid_ = started->value;
  }
  // Signal requests must never block the daemon's loop.
  ::fcntl(child.control_.get(), F_SETFL, O_NONBLOCK);
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
      status_(std::exchange(other.status_, std::nullopt)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    if (running()) terminate_group(SIGKILL, Millis(0));
    keeper_ = std::exchange(other.keeper_, -1);
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    control_ = std::move(other.control_);
    status_in_ = std::move(other.status_in_);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

Child::~Child() {
  if (running()) terminate_group(SIGKILL, Millis(0));
}

std::optional<int> Child::reap(bool block) noexcept {
  if (!running()) return status_;
  int status = 0;
  pid_t r = static_cast<pid_t>(waitpid_retrying(keeper_, &status, block ? 0 : WNOHANG));
  if (r == 0) return std::nullopt;  // still running
  // The keeper's last report is the job's wait status.
  std::optional<int> code;
  while (auto report = read_keeper_report(status_in_.get())) {
    if (report->kind == Report::kExited) code = exit_code_from_wait_status(report->value);
  }
  forget_keeper(keeper_);
  if (!code) {
    // The keeper was killed from outside before the tree was gone: its job died of the
    // death signal, and the job's own descendants were orphaned. As a child subreaper
    // (set_subreaper) this process inherits them: kill them all before anyone may
    // release the lease.
    kill_orphans();
    code = kUnknownExitCode;
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
    for_each_proc_entry("/proc", [&](int pid, int proc_dir) {
      if (parent_of(pid, proc_dir) != self || is_keeper(pid)) return;
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
  g_args = argv[0];
  g_args_len = static_cast<std::size_t>(end - argv[0]);
}

std::optional<int> Child::try_wait() { return reap(false); }

int Child::wait() {
  auto code = reap(true);
  return code.value_or(kUnknownExitCode);
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

void Child::signal_group(int sig) noexcept {
  if (!running() || !control_ || sig <= 0 || sig >= NSIG) return;
  KeeperRequest req{Request::kSignal, sig};
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

void Child::set_deadline(std::int64_t boot_ns) noexcept {
  if (!running() || !control_) return;
  KeeperRequest req{Request::kDeadline, std::max<std::int64_t>(boot_ns, 0)};
  write_request(control_.get(), &req, sizeof req);
}

void Child::last_resort_kill() noexcept {
  // The keeper does not act on our requests (stopped, wedged): kill it and the job's
  // group directly. The job's death signal then fires too, and the job's orphans come
  // to this process (a subreaper), which reap() kills.
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
