#pragma once
/// The leader phase's driver (internal to daemon/; docs/DESIGN.md "The phases"): while the
/// lease is ours it runs the renewal thread and the child, feeds LeaderMachine what the event
/// loop saw (the renewer's wake, the keeper, the health check, signals, handover requests) and
/// carries out its actions; when the machine has an outcome, it releases and holds or exits.
///   leader_driver.cpp  the lease's life: the renewer, the claim, the release, what follows
///   leader_loop.cpp    the machine's loop: a turn's events in, the actions carried out

#include <memory>
#include <optional>
#include <vector>

#include "daemon/context.h"
#include "daemon/event_loop.h"
#include "daemon/hold.h"
#include "daemon/leader.h"
#include "daemon/notices.h"
#include "daemon/once_per.h"
#include "lock/renewer.h"
#include "util/interrupt.h"

namespace redisgo::daemon {

class LeaderDriver {
 public:
  LeaderDriver(Context& ctx, EventLoop& loop, Notices& notices, Hold& hold, OncePer& once)
      : ctx_(ctx), loop_(loop), notices_(notices), hold_(hold), once_(once) {}

  /// The leader phase of `acquired`: nullopt to contend again, else the run's exit status.
  std::optional<int> lead(const lock::Acquisition& acquired);

 private:
  struct Leading;  // the phase's live objects

  /// The renewal thread for this lease; nullptr (logged, released) when it cannot start.
  std::unique_ptr<lock::Renewer> start_renewer(const lock::Acquisition& acquired);
  /// The leader machine's loop, until it has an outcome.
  void run_leader(Leading& l);
  /// Polls the phase's fds until the next thing that could need doing.
  void wait_turn(Leading& l, const leader::ChildSeen& seen, std::vector<pollfd>& fds, std::size_t& first_control);
  /// One turn's events after poll: Woke, the control channels, the health check, Signals,
  /// ChildExited.
  void after_poll(Leading& l, const std::vector<pollfd>& fds, std::size_t first_control);
  /// Whether the child's tree is gone (reaped without blocking) and what its keeper did.
  leader::ChildSeen child_seen(Leading& l);
  /// Feeds `event` to the leader machine and carries out its actions. True when they
  /// started the child (the loop's turn then begins again).
  bool drive(Leading& l, const leader::Event& event);
  /// Hears handover requests on the control channels after poll.
  void service_control(Leading& l, const std::vector<pollfd>& fds, std::size_t first);
  /// After the machine's outcome: kill what is left, record, release, hold or wait.
  std::optional<int> end_lease(Leading& l);
  /// Starts the child; on failure logs why and returns the event for the machine.
  leader::Event spawn_child(Leading& l, Clock::time_point kill_at);
  /// Stops the renewals and releases, logging the outcome.
  void release_lease(lock::Renewer& renewer);

  Context& ctx_;
  EventLoop& loop_;
  Notices& notices_;
  Hold& hold_;
  OncePer& once_;
  Interrupt renewer_wake_;  ///< the renewer's word to the loop (a renewal, the lease lost)
};

}  // namespace redisgo::daemon
