#pragma once
/// The children's own records of their lives (tests/soak/soak_child.cpp writes them:
/// "start|beat|stop <CLOCK_REALTIME ns> <token> <pid> <holder> <slot>", a beat every 10 ms)
/// and the checker that reads them (issue 9): an overlap is a child writing while another
/// child (another pid) of the same semaphore slot that started before that write has not
/// yet stopped — two alive at once on one lease; a later child of a slot with a lower token
/// is a fencing failure; a slot outside 0..limit-1 is a failure too (issue 12).

#include <sys/types.h>

#include <string>
#include <vector>

namespace redisgo::testing {

/// A daemon's whole tree was frozen (SIGSTOP) from..to (realtime ns; to = 0: not yet
/// thawed). docs/DESIGN.md, invariant 1: no daemon can prevent an overlap then; its stale child's
/// writes are excused until 100 ms after the thaw.
struct Freeze {
  pid_t daemon_pid = -1;
  long long from_ns = 0, to_ns = 0;
};

struct ChildLife {
  long long token = 0;
  pid_t pid = -1;
  std::string holder;
  int slot = 0;  ///< REDISGO_TASK_SLOT
  long long start = -1, stop = -1, last = -1;  ///< stop -1: never wrote one (killed)
  std::vector<long long> writes;
  long long end() const { return stop >= 0 ? stop : last; }
  /// The daemon's pid, from the holder id "<prefix>:<pid>:<random>".
  pid_t daemon_pid() const;
};

struct RecordCheck {
  std::vector<ChildLife> children;  ///< in start order
  int overlaps = 0;                 ///< overlaps and tokens out of order
  std::vector<std::string> problems;
  long long max_gap_ns = 0;         ///< longest time with no child alive, between the first start and the last end
};

/// Reads the records file and checks it; `limit` is the semaphore's (1: the plain lease).
RecordCheck check_records(const std::string& path, const std::vector<Freeze>& freezes = {}, int limit = 1);

/// The soak child binary (redisgo_soak_child).
std::string recorder_binary();

}  // namespace redisgo::testing
