#pragma once
/// What a scenario costs the cluster (docs/DESIGN.md, invariant 7, issue 8): commands/s each Redis
/// node processed, per daemon, and log lines/s at info or louder, per daemon. Every
/// fault test measures a window with it and checks the bounds: a daemon never sends a
/// node more than 50 commands/s and never logs more than 5 lines/s, in any state.
///
/// Commands come from INFO's total_commands_processed, which also counts the commands a
/// script runs (a missed acquire is EVALSHA + SET + GET + PTTL = 4), minus the meter's
/// own INFO calls. A node that is down at either end of the window counts 0.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace redisgo::testing {

class RedisServer;

class StormMeter {
 public:
  static constexpr double kMaxCommandsPerDaemonPerNode = 50;
  static constexpr double kMaxLogLinesPerSecond = 5;

  struct Figures {
    double seconds = 0;
    std::vector<double> commands_per_s;  ///< per node, all daemons together
    std::vector<double> lines_per_s;     ///< per log file
  };

  /// `logs`: the stderr files of the daemons; `daemons`: how many send to the nodes.
  StormMeter(std::vector<const RedisServer*> nodes, std::vector<std::string> logs, int daemons);
  /// Starts a window (snapshots the counters).
  void start();
  /// Ends it and returns the figures.
  Figures stop();
  /// start(), wait `window`, stop(), then EXPECT the bounds. Returns the figures.
  Figures measure(std::chrono::milliseconds window);
  /// EXPECTs the bounds on `f` (GoogleTest failures name the node or log).
  void expect_bounds(const Figures& f) const;

 private:
  long long commands(std::size_t node) const;  // -1 when down
  std::size_t loud_lines(const std::string& path) const;

  std::vector<const RedisServer*> nodes_;
  std::vector<std::string> logs_;
  int daemons_;
  std::chrono::steady_clock::time_point t0_;
  std::vector<long long> c0_;
  std::vector<std::chrono::steady_clock::time_point> n0_;  // per node: as its first INFO returned
  std::vector<std::size_t> l0_;
};

/// Info-or-louder lines of our log format in `text` ("<ts> info  [daemon] ...").
std::size_t count_loud_lines(const std::string& text);

/// CPU time (user + system) a process has used, from /proc/<pid>/stat; -1 if unreadable.
std::chrono::milliseconds cpu_time(pid_t pid);

}  // namespace redisgo::testing
