#include "process/child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace redisgo::process {
namespace {

// Used when the merged environment has no PATH; what a login shell would usually have.
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
// The code when the status is unknowable because something else reaped the pid.
constexpr int kUnknownExitCode = 255;
// While waiting for a SIGKILLed group, how often the SIGKILL is repeated.
constexpr Millis kKillRepeat{1000};

// What the child reports over the error pipe before _exit. Written with one write(2) of
// a few bytes, which is atomic on a pipe.
enum class Stage : int { kChdir = 1, kExec = 2 };
struct ChildFailure {
  Stage stage;
  int err;
};

// Everything the child needs, prepared before fork so that the child allocates nothing.
struct Plan {
  std::string path;  // resolved executable
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string workdir;
  int death_signal = 0;
};

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

std::string env_value(const std::vector<std::string>& env, const std::string& name) {
  const std::string prefix = name + "=";
  for (const auto& entry : env) {
    if (entry.compare(0, prefix.size(), prefix) == 0) return entry.substr(prefix.size());
  }
  return {};
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// execvpe's search, done in the parent: the first executable regular file on PATH wins;
// failing that, the first non-executable regular file (exec then fails with EACCES, 126,
// as a shell reports it); failing that, ENOENT (127). Relative PATH entries are taken
// relative to the workdir, where the child will exec.
std::optional<std::string> search_path(const std::string& name, const std::string& path_var,
                                       const std::string& workdir) {
  std::optional<std::string> not_executable;
  std::size_t start = 0;
  while (start <= path_var.size()) {
    std::size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    // An empty entry means the current directory.
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

Plan make_plan(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    throw SpawnError("cannot run an empty command", EINVAL, 127);
  }
  Plan plan;
  plan.argv_storage = options.argv;
  plan.env_storage = merged_environment(options.env, options.unset_env);
  plan.workdir = options.workdir;
  plan.death_signal = options.death_signal;

  const std::string& name = options.argv[0];
  if (name.find('/') != std::string::npos) {
    plan.path = name;
  } else {
    std::string path_var = env_value(plan.env_storage, "PATH");
    bool has_path = std::any_of(plan.env_storage.begin(), plan.env_storage.end(),
                                [](const std::string& e) { return e.rfind("PATH=", 0) == 0; });
    auto found = search_path(name, has_path ? path_var : kDefaultPath, plan.workdir);
    if (!found) throw SpawnError(errno_message("cannot run '" + name + "'", ENOENT), ENOENT, 127);
    plan.path = *found;
  }

  for (auto& arg : plan.argv_storage) plan.argv.push_back(arg.data());
  plan.argv.push_back(nullptr);
  for (auto& entry : plan.env_storage) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);
  return plan;
}

// ---- Child side: only async-signal-safe calls from here to the exec ----

[[noreturn]] void fail_in_child(int report_fd, Stage stage, int err) {
  ChildFailure failure{stage, err};
  // Nothing more can be done if this write fails; the exit code still says 126/127.
  ssize_t ignored = ::write(report_fd, &failure, sizeof failure);
  (void)ignored;
  ::_exit(stage == Stage::kExec && err == ENOENT ? 127 : 126);
}

// Marks every fd above 2 close-on-exec by walking /proc/self/fd with raw getdents64
// (opendir allocates, which is not allowed after fork in a threaded program).
bool cloexec_fds_from_proc() {
  int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
      int fd = 0;
      bool numeric = *name != '\0';
      for (const char* c = name; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9') {
          numeric = false;
          break;
        }
        fd = fd * 10 + (*c - '0');
      }
      if (numeric && fd > 2 && fd != dir) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
      off += reclen;
    }
  }
  ::close(dir);
  return true;
}

// The daemon's own fds are all CLOEXEC, but another thread may have opened one (e.g. a
// hiredis socket before its fcntl) while we forked; the child must inherit none of them.
// Marking instead of closing keeps the error-report pipe open until the exec.
void cloexec_all_fds_above_stderr() {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  if (cloexec_fds_from_proc()) return;
  struct rlimit limit {};
  rlim_t max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < max_fd) max_fd = limit.rlim_cur;
  for (rlim_t fd = 3; fd < max_fd; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
}

[[noreturn]] void run_child(const Plan& plan, int report_fd, pid_t parent) noexcept {
  // Default dispositions: handlers would be reset by exec anyway, but an ignored signal
  // (the daemon ignores SIGPIPE) stays ignored across exec. All signals are still
  // blocked here, so no daemon handler can run in the child meanwhile.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::sigaction(sig, &dfl, nullptr);  // EINVAL for glibc's reserved signals: fine
  }

  // Own group, so kill(-pgid) reaches the child and everything it starts, and a ^C to
  // the daemon's terminal group is delivered through the daemon only.
  ::setpgid(0, 0);

  if (plan.death_signal != 0) {
    if (::prctl(PR_SET_PDEATHSIG, plan.death_signal, 0, 0, 0) != 0) fail_in_child(report_fd, Stage::kExec, errno);
    // The daemon may have died between fork and prctl; then nobody will send the death
    // signal, so act as if it had been sent.
    if (::getppid() != parent) ::_exit(128 + plan.death_signal);
  }

  if (!plan.workdir.empty() && ::chdir(plan.workdir.c_str()) != 0) fail_in_child(report_fd, Stage::kChdir, errno);

  cloexec_all_fds_above_stderr();

  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  ::execve(plan.path.c_str(), plan.argv.data(), plan.envp.data());
  fail_in_child(report_fd, Stage::kExec, errno);
}

// ---- Parent side ----

// Reads the child's report: nullopt on EOF (the exec closed the CLOEXEC pipe).
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
  Plan plan = make_plan(options);
  auto [report_read, report_write] = pipe_cloexec();

  // With every signal blocked across fork, no handler of the daemon can run in the child
  // before the child has reset the dispositions.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) run_child(plan, report_write.get(), parent);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) throw_errno("fork", fork_errno);

  // Also from this side, so the group exists before we could signal it, whichever of the
  // two runs first. EACCES (the child already exec'd) means the child did it itself.
  ::setpgid(pid, pid);
  report_write.reset();

  Child child;
  child.pid_ = pid;
  if (auto failure = read_report(report_read.get())) {
    int status = 0;
    waitpid_retrying(pid, &status, 0);
    child.pid_ = -1;
    const std::string name = "cannot run '" + options.argv[0] + "'";
    if (failure->stage == Stage::kChdir) {
      throw SpawnError(errno_message(name + ": cannot change directory to '" + options.workdir + "'", failure->err),
                       failure->err, 126);
    }
    throw SpawnError(errno_message(name, failure->err), failure->err, failure->err == ENOENT ? 127 : 126);
  }

  // pidfds are close-on-exec from birth. The pid cannot have been reused: it is ours and
  // not reaped yet. Without pidfd support (kernel < 5.3) wait_for() polls instead.
  // (Raw syscall: glibc 2.36's <sys/pidfd.h> lacks extern "C" and does not link from C++.)
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0 && errno != ENOSYS) throw_errno("pidfd_open", errno);  // ~Child kills it
  child.pidfd_.reset(pidfd);
  return child;
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      status_(std::exchange(other.status_, std::nullopt)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    if (running()) terminate_group(SIGKILL, Millis(0));
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

Child::~Child() {
  if (running()) terminate_group(SIGKILL, Millis(0));
}

std::optional<int> Child::reap(bool block) noexcept {
  if (!running()) return status_;
  siginfo_t info{};
  const int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
  for (;;) {
    info.si_pid = 0;
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, flags) == 0) break;
    if (errno == EINTR) continue;
    // ECHILD: reaped behind our back; the pid (and pgid) may already belong to someone
    // else, so never signal it again.
    status_ = kUnknownExitCode;
    return status_;
  }
  if (info.si_pid == 0) return std::nullopt;  // still running

  // The leader is a zombie now, so -pid_ still names its group and no other: kill what
  // it left behind before the pid can be reused.
  ::kill(-pid_, SIGKILL);
  int status = 0;
  if (waitpid_retrying(pid_, &status, 0) == pid_) {
    status_ = exit_code_from_wait_status(status);
  } else {
    status_ = kUnknownExitCode;
  }
  return status_;
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
      if (::poll(&p, 1, ms) < 0 && errno != EINTR) {
        std::this_thread::sleep_for(std::min(left, Millis(5)));
      }
    } else {
      std::this_thread::sleep_for(std::min(left, Millis(5)));
    }
  }
}

void Child::signal_group(int sig) noexcept {
  if (running()) ::kill(-pid_, sig);
}

int Child::terminate_group(int sig, Millis grace) noexcept {
  if (pid_ <= 0) return -1;
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
  for (;;) {
    signal_group(SIGKILL);
    try {
      if (auto code = wait_for(kKillRepeat)) return *code;
    } catch (...) {
    }
  }
}

}  // namespace redisgo::process
