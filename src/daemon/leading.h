#pragma once
/// The leader phase's live objects (internal to the leader driver: leader_driver.cpp,
/// leader_loop.cpp): its machine and what the driver acts through.

#include <memory>
#include <utility>
#include <vector>

#include "daemon/health.h"
#include "daemon/leader.h"
#include "daemon/leader_driver.h"
#include "lock/renewer.h"
#include "log/logging.h"
#include "process/child.h"
#include "redis/subscriber.h"

namespace redisgo::daemon {

/// The leader phase's live objects: its machine and what the driver acts through.
struct LeaderDriver::Leading {
  Leading(LeaderSettings s, RestartTracker& restarts, lock::Renewer& r, process::SpawnOptions spawn,
          const config::TaskConfig& task, const Clock& clock)
      : machine(std::move(s), restarts), renewer(r), spawn_base(std::move(spawn)),
        health(task, log::get("health"), clock) {}
  LeaderMachine machine;
  lock::Renewer& renewer;
  const process::SpawnOptions spawn_base;
  HealthCheck health;
  std::unique_ptr<process::Job> child;
  /// supervise: a handover (a control message naming this holder, or "any") is heard on
  /// every node's control channel while this lease lasts.
  std::vector<std::unique_ptr<redis::Subscription>> control;
  std::vector<int> control_failures;
  std::uint64_t renewals_seen = 0;
};

/// What the leader machine reads of the renewer.
LeaseView view(const lock::Renewer& r);

}  // namespace redisgo::daemon
