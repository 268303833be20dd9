#include "support/records.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace redisgo::testing {

pid_t ChildLife::daemon_pid() const {
  auto a = holder.find(':');
  auto b = a == std::string::npos ? a : holder.find(':', a + 1);
  if (a == std::string::npos || b == std::string::npos) return -1;
  try {
    return static_cast<pid_t>(std::stoi(holder.substr(a + 1, b - a - 1)));
  } catch (...) {
    return -1;
  }
}

std::string recorder_binary() {
  std::string path = REDISGO_BINARY_DIR;  // appended, not `+`: GCC 12 at -O2 warns falsely of the temporary
  path += "/tests/redisgo_soak_child";
  return path;
}

RecordCheck check_records(const std::string& path, const std::vector<Freeze>& freezes, int limit) {
  std::map<std::pair<long long, pid_t>, ChildLife> by_child;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string kind, holder;
    long long t = 0, token = 0;
    pid_t pid = 0;
    if (!(l >> kind >> t >> token >> pid >> holder)) continue;
    int slot = 0;
    if (!(l >> slot)) slot = 0;  // written by a child of a daemon without slots
    auto& c = by_child[{token, pid}];
    c.slot = slot;
    c.token = token;
    c.pid = pid;
    c.holder = holder;
    if (kind == "start") c.start = t;
    if (kind == "stop") c.stop = t;
    c.last = std::max(c.last, t);
    c.writes.push_back(t);
  }
  RecordCheck out;
  for (auto& [k, c] : by_child) {
    if (c.start >= 0) out.children.push_back(std::move(c));
  }
  std::sort(out.children.begin(), out.children.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  auto excused = [&](const ChildLife& c, long long t) {
    for (const auto& f : freezes) {
      if (f.daemon_pid == c.daemon_pid() && t >= f.from_ns && (f.to_ns == 0 || t <= f.to_ns + 100'000'000LL)) return true;
    }
    return false;
  };
  auto name = [](const ChildLife& c) {
    return "child " + std::to_string(c.pid) + " (token " + std::to_string(c.token) + ", holder " + c.holder + ")";
  };
  long long prev_end = -1;
  for (std::size_t i = 0; i < out.children.size(); ++i) {
    const ChildLife& b = out.children[i];
    if (b.slot < 0 || b.slot >= limit) {
      ++out.overlaps;
      out.problems.push_back("slot " + std::to_string(b.slot) + " outside 0.." + std::to_string(limit - 1) + ": " + name(b));
    }
    for (std::size_t j = 0; j < i; ++j) {
      const ChildLife& a = out.children[j];
      if (a.slot != b.slot) continue;  // each slot is a lease of its own
      for (long long t : a.writes) {
        if (t > b.start && t < b.end() && !excused(a, t)) {
          ++out.overlaps;
          out.problems.push_back("overlap: " + name(a) + " wrote at " + std::to_string(t) + ", " +
                                 std::to_string((t - b.start) / 1'000'000) + " ms after " + name(b) + " started at " +
                                 std::to_string(b.start));
          break;
        }
      }
      // A later lease has a higher token (a restart under the same lease keeps its token).
      if (a.token > b.token) {
        ++out.overlaps;
        out.problems.push_back("token order: " + name(b) + " started after " + name(a));
      }
    }
    if (prev_end >= 0) out.max_gap_ns = std::max(out.max_gap_ns, b.start - prev_end);
    prev_end = std::max(prev_end, b.end());
  }
  return out;
}

}  // namespace redisgo::testing
