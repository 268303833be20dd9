#pragma once
// A spawner whose jobs are no processes: they record the signals sent to them and end
// when a test says so or when a signal that stops them arrives. For the daemon's driver
// in-process (daemon::Dependencies); the keeper itself is tested with real processes.

#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "process/child.h"

namespace redisgo::testing {

class FakeSpawner final : public process::Spawner {
 public:
  std::unique_ptr<process::Job> spawn(const process::SpawnOptions& options) override;

  /// Runs inside spawn(), before the job exists, on the daemon's thread: a slow fork, a
  /// signal between the fork and what follows, or a fork that fails (it throws).
  void set_spawn_hook(std::function<void()> hook);
  /// Signals that end a job (as 128 + N); others are only recorded. Default TERM, INT, KILL.
  void set_fatal(std::vector<int> signals);
  /// Ends the running job with `code`.
  void finish(int code);
  /// Ends the running job with `code`, as its keeper did on its own at the deadline.
  void finish_by_keeper(int code, process::KeeperAct act);
  /// Ends the running job as a keeper killed from outside does (71, SIGKILL).
  void kill_keeper();
  /// The deadlines the running job's keeper was told: (kill_at, decided), CLOCK_BOOTTIME ns.
  std::vector<std::pair<std::int64_t, std::int64_t>> deadlines() const;

  int spawned() const;
  bool running() const;
  /// The signals every job received, in order.
  std::vector<int> signals() const;
  /// The environment the last job was given.
  std::map<std::string, std::string> last_env() const;

 private:
  class Job;
  mutable std::mutex mu_;
  std::function<void()> hook_;
  std::vector<int> fatal_{SIGTERM, SIGINT, SIGKILL};
  std::vector<int> signals_;
  std::map<std::string, std::string> env_;
  std::optional<int> code_;  // the running job's end, once decided
  process::KeeperAct keeper_act_;
  int keeper_killed_by_ = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> deadlines_;
  bool running_ = false;
  int spawned_ = 0;
};

}  // namespace redisgo::testing
