#pragma once
/// The task runner: contend for the lease, run the child while holding it, stop it before
/// the lease can expire, release (redisgo_task(1), MODES, SAFETY).
///
/// One thread runs the event loop over a signalfd, the keeper's pidfd, the renewer's wake
/// fd, a CLOCK_BOOTTIME timerfd for every deadline, and the release-channel subscribers;
/// the renewer and the systemd watchdog have their own threads. The lease deadline is
/// enforced here from an atomic read of the renewer's deadline, so no Redis call can
/// delay it, and nothing in the loop blocks on Redis.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "config/config.h"
#include "lock/lease.h"
#include "process/child.h"
#include "redis/subscriber.h"
#include "util/clock.h"

namespace redisgo::daemon {

struct TaskOptions {
  /// Validated configuration; config.task.command is the effective argv (non-empty).
  config::Config config;
  /// --wait (default) / --no-wait: oneshot tries once with --no-wait.
  bool wait = true;
  /// This holder's id (the value stored in the lock key): wiring::default_holder_id().
  std::string holder;
};

/// What the daemon works through, given rather than built inside (docs/DESIGN.md
/// "Dependencies"): the real ones by default, fakes in tests (tests/support).
struct Dependencies {
  /// The boot-time clock every deadline is read from.
  const Clock* clock = &SystemClock::instance();
  /// Builds a lease backend (the main loop's, and the renewal thread's own).
  std::function<std::unique_ptr<lock::LeaseBackend>(const lock::LeaseOptions&, const Clock&)> make_backend =
      [](const lock::LeaseOptions& o, const Clock& c) { return lock::make_redis_backend(o, c); };
  /// Subscribes to `channel` on a node (the release or wake channel of a standby, the control
  /// channel of a leader); the subscription is kept up by the event loop.
  std::function<std::unique_ptr<redis::Subscription>(const redis::ConnectionOptions&, const std::string&)>
      make_subscriber = [](const redis::ConnectionOptions& node, const std::string& channel) {
        return std::make_unique<redis::Subscriber>(node, channel);
      };
  /// Starts the child (the keeper and the job).
  process::Spawner* spawner = &process::keeper_spawner();
};

/// Runs until the task ends and returns the exit status of redisgo_task(1), EXIT STATUS. The handled signals
/// must already be blocked in every thread (process::block_handled_signals in main).
int run_task(const TaskOptions& options, const Dependencies& deps = {});

/// How the child is started from `config` (argv, workdir, env, what is removed from the
/// daemon's environment); the caller adds the REDISGO_TASK_* variables and the deadline.
process::SpawnOptions spawn_options(const config::Config& config);

/// Adds the REDISGO_TASK_* variables of a lease (redisgo_task(1), ENVIRONMENT) to `spawn`:
/// what the child and its health check get.
void add_task_env(process::SpawnOptions& spawn, const config::Config& config, const std::string& holder,
                  std::uint64_t token, int slot);

}  // namespace redisgo::daemon
