#pragma once
/// Shared by the files of the process module only (not part of its interface): the
/// keeper's wire records, the spawn plan, and the /proc walking that both the keeper and
/// the daemon's orphan clean-up use. child.h is the module's interface; the keeper's
/// design is described there.

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "process/child.h"
#include "process/deadline_rule.h"

namespace redisgo::process::detail {

// What the job reports over the error pipe before _exit. One write(2) of a few bytes,
// atomic on a pipe.
enum class Stage : int { kChdir = 1, kExec = 2, kFork = 3, kDeadline = 4 };
struct ChildFailure {
  Stage stage;
  int err;
};

// What the daemon asks of the keeper on the control pipe: whole records (32 bytes, one
// write each, atomic on a pipe). Every one says the daemon ran when it was written.
enum class Request : std::int64_t { kSignal = 1, kDeadline = 2 };
struct KeeperRequest {
  Request kind;
  std::int64_t value;       // kSignal: the signal; kDeadline: CLOCK_BOOTTIME ns, 0 = none
  std::int64_t decided_ns;  // kDeadline: when the daemon decided it (deadline_rule.h)
  std::int64_t sent_ns;     // CLOCK_BOOTTIME when written
};

// What the keeper reports to the daemon on the status pipe (16 bytes each).
enum class Report : std::int32_t { kStarted = 1, kExited = 2, kDeadline = 3 };
struct KeeperReport {
  Report kind;
  std::int32_t value;  // kStarted: the job's pid; kExited: its wait status; kDeadline: the signal
  std::int64_t at_ns;  // kDeadline: when the keeper sent it on its own (CLOCK_BOOTTIME)
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
  DeadlineSettings deadline;     // what the keeper does on its own at the deadline
};

/// Builds the plan for `options`: the merged environment and the PATH lookup happen here,
/// in the daemon, before fork. Throws SpawnError when there is nothing to run.
Plan make_plan(const SpawnOptions& options);

/// A problem with what exec needs beside the program at `path` (relative paths are relative
/// to `workdir`): a script's #! interpreter, or a dynamically linked program's loader
/// (PT_INTERP), that is missing (exec's ENOENT for a file that exists) or cannot be run;
/// followed through interpreters that are scripts themselves. nullopt when there is none,
/// or the file cannot be read (exec decides then).
std::optional<NotRunnable> interpreter_problem(const std::string& path, const std::string& workdir);

/// Where the keeper writes its name over the daemon's argv strings (set_program_args).
void set_keeper_name_area(char* args, std::size_t len) noexcept;

/// The keeper's main, in the child of fork(): starts the job, then forwards signals,
/// holds the deadline and takes the whole tree down (child.h). Never returns.
[[noreturn]] void run_keeper(const Plan& plan, int control_fd, int status_fd, int report_fd) noexcept;

/// Calls fn(pid, dir_fd) for every numeric entry of a /proc directory, with raw
/// getdents64 (opendir allocates, which is not allowed after fork in a threaded program).
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

/// The ppid field of /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may contain
/// spaces and parentheses, so parse from the last ')'). -1 if unreadable.
int parent_of(int pid, int proc_dir);

}  // namespace redisgo::process::detail
