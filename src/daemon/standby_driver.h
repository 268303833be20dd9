#pragma once
/// The standby phase's driver (internal to daemon/; docs/DESIGN.md "The phases"): carries out
/// StandbyMachine's actions (an attempt, a wait on the event loop woken by the release
/// channels, a report) and feeds their outcomes back, until the lease is ours or the run ends.

#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "backoff/backoff.h"
#include "daemon/context.h"
#include "daemon/event_loop.h"
#include "daemon/notices.h"
#include "daemon/standby.h"
#include "redis/subscriber.h"

namespace redisgo::daemon {

class StandbyDriver {
 public:
  /// Subscribes to the release channel (fair: our own wake channel) on every node; the
  /// subscriptions are kept up across waits.
  StandbyDriver(Context& ctx, EventLoop& loop, Notices& notices, StandbySettings settings, backoff::Backoff& backoff);

  /// Waits for the lease: the acquisition when it is ours, else the run's exit status.
  std::variant<lock::Acquisition, int> contend();

 private:
  /// Carries out one attempt: the request, then what the machine makes of it.
  standby::Actions attempt();
  /// Carries out a Wait, redrawing `shown` (the miss on show) every second meanwhile.
  standby::WaitEnded wait_for(const standby::Wait& w, const std::optional<standby::ShowMiss>& shown);
  /// Waits until `until` (on the boot-time clock), ended early by a stop request and by
  /// another holder's release message, a message of the waiting line or a subscription that
  /// became active. Keeps the subscriptions up meanwhile.
  standby::WaitEnded wait_until(Clock::time_point until);
  /// What the subscriptions heard after poll (`fds[1..]` are theirs).
  std::optional<standby::WaitEnded> heard(const std::vector<pollfd>& fds);
  /// Reads and discards what the subscriptions received while nobody listened.
  void drain_subscriptions();

  Context& ctx_;
  EventLoop& loop_;
  Notices& notices_;
  StandbyMachine machine_;  ///< built once: it keeps the stray-signal pacing
  std::vector<std::unique_ptr<redis::Subscription>> subscribers_;
  std::vector<int> subscriber_failures_;  // per subscriber, failures already logged
  std::vector<bool> turned_;  ///< the nodes that woke us with a turn since our last attempt
};

}  // namespace redisgo::daemon
