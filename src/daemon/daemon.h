#pragma once
/// The task runner: contend for the lease, run the child while holding it, stop it before
/// the lease can expire, release (SPEC.md "Modes", "Safety invariants").
///
/// One thread runs the event loop over a signalfd, the child's pidfd, the renewer's wake
/// fd and the release channel's socket; the renewer and the systemd watchdog have their
/// own threads. The lease deadline is enforced here from an atomic read of the renewer's
/// deadline, so no Redis call can delay it.

#include <string>

#include "config/config.h"
#include "lock/lease.h"

namespace redisgo::daemon {

struct TaskOptions {
  /// Validated configuration; config.task.command is the effective argv (non-empty).
  config::Config config;
  /// --wait (default) / --no-wait: oneshot tries once with --no-wait.
  bool wait = true;
  /// This holder's id (the value stored in the lock key).
  std::string holder;
};

/// Runs until the task ends and returns the exit status of SPEC.md. The handled signals
/// must already be blocked in every thread (process::block_handled_signals in main).
int run_task(const TaskOptions& options);

/// "<hostname>:<pid>:<32 hex digits from getrandom>": unique across hosts and restarts.
std::string default_holder_id();

/// The lock module's options from the configuration.
lock::LeaseOptions lease_options(const config::Config& config, const std::string& holder);

}  // namespace redisgo::daemon
