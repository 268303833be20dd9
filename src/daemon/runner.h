#pragma once
/// The task runner (internal to daemon/): builds the parts one run is made of and runs the
/// phases in turn (docs/DESIGN.md "The phases"):
///   context.h         what every part shares (options, the lease's keys, metrics, the backend)
///   event_loop.h      poll, the boot-time timer, signals, the systemd watchdog, STATUS=
///   notices.h         what is said of the lease: the log, STATUS=, the metrics, said once
///   standby_driver.h  the standby phase: attempts, waits, wakes (StandbyMachine)
///   leader_driver.h   the leader phase: renewals, the child (LeaderMachine)
///   hold.h            the holds after a step-down, and while renewals are refused
///   once_per.h        once_per: the read before contending, the claim under the lease
///
/// One thread runs the event loop over a signalfd, the keeper's pidfd, the renewer's wake
/// fd, a CLOCK_BOOTTIME timerfd for every deadline, and the release-channel subscribers;
/// the renewer and the systemd watchdog have their own threads. The lease deadline is
/// enforced here from an atomic read of the renewer's deadline, so no Redis call can
/// delay it, and nothing in the loop blocks on Redis.

#include <memory>
#include <optional>

#include "backoff/backoff.h"
#include "daemon/context.h"
#include "daemon/daemon.h"
#include "daemon/event_loop.h"
#include "daemon/hold.h"
#include "daemon/leader_driver.h"
#include "daemon/notices.h"
#include "daemon/once_per.h"
#include "daemon/standby_driver.h"

namespace redisgo::daemon {

/// How long the undo of a last failed attempt may take to reach its nodes before a
/// oneshot run that gives up exits.
inline constexpr Millis kSettleBeforeExit{200};

class Runner {
 public:
  Runner(const TaskOptions& options, const Dependencies& deps);
  int run();

 private:
  /// run() up to its exit status.
  int run_phases();
  /// The main loop's backend, the standby driver and what they need, before the first attempt.
  void start();
  void log_start() const;

  Context ctx_;
  EventLoop loop_;
  Notices notices_;
  Hold hold_;
  OncePer once_;
  LeaderDriver leader_;
  std::unique_ptr<backoff::Backoff> backoff_;
  std::optional<StandbyDriver> standby_;
};

}  // namespace redisgo::daemon
