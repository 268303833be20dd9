#pragma once
/// Runs the real redisgo_task binary as a subprocess for end-to-end tests: stdout and
/// stderr go to files in a temp dir, exit is awaited with a bound, and the destructor
/// SIGKILLs it (by pid) if a test left it running.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/records.h"

namespace redisgo::testing {

class TaskProcess {
 public:
  /// Starts `redisgo_task <args...>` with the test's environment plus `env`.
  /// Its output goes to <dir>/<name>.out and <dir>/<name>.err. `binary`: another build of
  /// redisgo_task (the mixed-version test's old release); "": this build's.
  TaskProcess(const std::string& dir, const std::string& name, const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env = {}, const std::string& binary = "");
  ~TaskProcess();
  TaskProcess(const TaskProcess&) = delete;
  TaskProcess& operator=(const TaskProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  /// Waits up to `timeout` for exit; returns the exit code (128+N for signal N).
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  void signal(int sig);
  std::string out() const;
  std::string err() const;
  /// Waits until stderr contains `text` (bounded); true if it did.
  bool wait_for_log(const std::string& text, std::chrono::milliseconds timeout);

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  std::optional<int> code_;
};

/// Runs the binary to completion (bounded) and returns {exit code, stdout, stderr}.
struct RunResult {
  int code = -1;
  std::string out, err;
};
RunResult run_task_binary(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                          const std::map<std::string, std::string>& env = {});

/// A minimal config file text for a single node.
/// The manual's bound on a stop (SIGTERM to exit, in every state): 100 ms. Under a sanitizer the
/// exit itself includes LeakSanitizer's scan and every instruction is instrumented, so the
/// wall-clock bound there is 300 ms; the plain build holds the manual's figure. (Measured under
/// ASan at ctest -j6: stops 30-170 ms, a tree's death 3-33 ms. Ten tests at once, which saturate
/// two cores, took stops to 370-410 ms: the asan preset runs six.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr std::chrono::milliseconds kStopBound{300};
#else
inline constexpr std::chrono::milliseconds kStopBound{100};
#endif

struct ConfigSpec {
  std::string nodes;         ///< TOML for the node(s): e.g. host = "127.0.0.1:6379"
  std::string key = "rgt:lock";
  std::string expire = "2s";
  std::string cron = "500ms";
  std::string kill_grace = "500ms";
  std::string io_timeout = "200ms";  ///< also connect_timeout
  std::string mode = "oneshot";
  std::string extra_redis;   ///< more [redis] lines
  std::string extra_task;    ///< more [task] lines
  std::string backoff = "strategy = \"exponential\"\ninitial = \"20ms\"\nmax = \"200ms\"\n";
  std::string log_level = "debug";
  /// Off by default here: every test server is fresh, and the guard would hold each first
  /// acquisition back for expire. The guard's own tests turn it on.
  bool restart_guard = false;
};
std::string make_config(const ConfigSpec& spec);

/// The shared fault check of the Redis-pause and lost-quorum tests: runs a supervise
/// leader (expire 1500 ms, cron 300 ms, kill_grace 400 ms, restart always) from the config
/// file `config`, waits for its child and a renewal, calls `fault`, expects the child
/// dead before the TTL could have run out, keeps the fault `fault_for` longer, calls
/// `heal`, and expects a new child under a higher token; then stops the daemon.
/// The config must come from fault_config_spec().
ConfigSpec fault_config_spec();

/// The leader/standby scenarios' supervise config: 1500 ms lease, cron 300 ms, kill_grace
/// 300 ms, 250 ms timeouts, info logs, restart always after 100 ms; `extra_task` appended.
ConfigSpec leader_standby_spec(const std::string& extra_task = "");

/// Checks the children's records (support/records.h) through GoogleTest: no overlap per
/// slot, tokens in order; every problem is reported.
void expect_exclusive_records(const std::string& records, const std::vector<Freeze>& freezes = {}, int limit = 1);
void expect_child_stopped_before_lease_ends(const std::string& dir, const std::string& config,
                                            const std::function<void()>& fault, std::chrono::milliseconds fault_for,
                                            const std::function<void()>& heal);

/// Reads a whole file ("" if missing).
std::string read_file(const std::string& path);

/// Non-empty lines of `text`.
std::vector<std::string> split_lines(const std::string& text);

/// The rows of the markdown table in `text` whose header row starts with `header` (its
/// separator row left out): each row's cells, trimmed. Empty when there is no such table.
std::vector<std::vector<std::string>> markdown_table(const std::string& text, const std::string& header);

/// The absolute paths written in backquotes in `cell` ("`/usr/bin/x` (Debian 12)").
std::vector<std::string> quoted_paths(const std::string& cell);

/// A shell command that stages `cmake --install` of the build `build` for `prefix` into
/// `destdir`, holding a lock on the build while it runs and, when `manifest_copy` is not
/// empty, until it has copied the build's install_manifest.txt there. Every install of one
/// build writes that one manifest: tests that install it at once would read each other's.
std::string staged_install_command(const std::string& build, const std::string& destdir, const std::string& prefix,
                                   const std::string& manifest_copy = "");

/// kill(pid, 0) succeeds.
bool process_alive(pid_t pid);

/// The keeper of daemon `daemon` (its child named "redisgo-keeper"), or -1.
pid_t keeper_of(pid_t daemon);

/// A line "<pid> <token>" that a child wrote about itself.
struct ChildRecord {
  pid_t pid = -1;
  unsigned long long token = 0;
};
ChildRecord parse_child_record(const std::string& line);

/// Shell snippet for a job that logs its interval: appends "start <ns> <token>" to `log`,
/// sleeps `seconds`, appends "end <ns>" (small O_APPEND writes are atomic).
std::string interval_job(const std::string& log, const std::string& seconds);

/// Checks an interval_job() log: `jobs` intervals, no two overlapping (start/end strictly
/// alternate in time order), and tokens strictly increasing in start order. Reports
/// failures through GoogleTest.
void expect_exclusive_intervals(const std::string& log_text, std::size_t jobs);

}  // namespace redisgo::testing
