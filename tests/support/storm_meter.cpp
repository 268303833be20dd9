#include "support/storm_meter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "support/redis_server.h"
#include "support/task_process.h"

namespace redisgo::testing {

StormMeter::StormMeter(std::vector<const RedisServer*> nodes, std::vector<std::string> logs, int daemons)
    : nodes_(std::move(nodes)), logs_(std::move(logs)), daemons_(daemons) {}

long long StormMeter::commands(std::size_t node) const {
  const RedisServer* s = nodes_[node];
  if (!s->running()) return -1;
  const std::string info = s->cli({"INFO", "stats"});
  const std::string tag = "total_commands_processed:";
  auto at = info.find(tag);
  if (at == std::string::npos) return -1;
  return std::stoll(info.substr(at + tag.size()));
}

std::size_t count_loud_lines(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    // "2026-11-23T06:11:21.778Z info  [daemon] ..." (journald form: "<6>2026-...")
    std::istringstream words(line);
    std::string ts, level;
    words >> ts >> level;
    if (ts.size() < 20 || ts.find('T') == std::string::npos) continue;  // not a log line
    if (level == "info" || level == "warn" || level == "error" || level == "critical") ++n;
  }
  return n;
}

std::size_t StormMeter::loud_lines(const std::string& path) const { return count_loud_lines(read_file(path)); }

void StormMeter::start() {
  c0_.clear();
  n0_.clear();
  l0_.clear();
  // Each node's rate is divided by its own window, from its INFO to its INFO, both timed as
  // the INFO returns (the redis-cli's start-up cancels out). One window for all undercut
  // each node's: the other nodes' INFOs (a redis-cli each, tens of ms on a loaded machine)
  // and the logs' reading fell inside what a node counted but outside the divisor
  // (measured with MONITOR: 2.02-2.06 s of commands counted over a "2.00 s" window).
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    c0_.push_back(commands(i));
    n0_.push_back(std::chrono::steady_clock::now());
  }
  for (const auto& log : logs_) l0_.push_back(loud_lines(log));
  t0_ = std::chrono::steady_clock::now();
}

StormMeter::Figures StormMeter::stop() {
  Figures f;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const long long c1 = commands(i);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - n0_[i]).count();
    // The INFO that opened the window is counted by the one that closes it.
    const long long used = (c1 < 0 || c0_[i] < 0 || c1 < c0_[i]) ? 0 : c1 - c0_[i] - 1;
    f.commands_per_s.push_back(static_cast<double>(used) / seconds);
  }
  for (std::size_t i = 0; i < logs_.size(); ++i) {
    const std::size_t n = loud_lines(logs_[i]);
    f.lines_per_s.push_back(static_cast<double>(n >= l0_[i] ? n - l0_[i] : 0) / f.seconds);
  }
  return f;
}

StormMeter::Figures StormMeter::measure(std::chrono::milliseconds window) {
  start();
  std::this_thread::sleep_for(window);  // the window itself: a duration, not a synchronisation
  Figures f = stop();
  expect_bounds(f);
  return f;
}

void StormMeter::expect_bounds(const Figures& f) const {
  for (std::size_t i = 0; i < f.commands_per_s.size(); ++i) {
    EXPECT_LE(f.commands_per_s[i], kMaxCommandsPerDaemonPerNode * daemons_)
        << "node " << nodes_[i]->address() << ": " << f.commands_per_s[i] << " commands/s from " << daemons_
        << " daemon(s) over " << f.seconds << " s";
  }
  for (std::size_t i = 0; i < f.lines_per_s.size(); ++i) {
    EXPECT_LE(f.lines_per_s[i], kMaxLogLinesPerSecond)
        << logs_[i] << ": " << f.lines_per_s[i] << " log lines/s over " << f.seconds << " s";
  }
}

std::chrono::milliseconds cpu_time(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return std::chrono::milliseconds(-1);
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  long long utime = 0, stime = 0;
  // After "pid (comm) ": state(3) ... utime is field 14, stime 15 (1-based overall).
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return std::chrono::milliseconds((utime + stime) * 1000 / (ticks > 0 ? ticks : 100));
}

}  // namespace redisgo::testing
