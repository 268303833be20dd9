#pragma once
/// The renewals of one lease as a machine that is stepped (docs/DESIGN.md "Processes and
/// threads"): time in, a renewal round to send out, each round's outcome in. It holds the
/// local lease deadline and decides when the next round goes and when the lease is lost; the
/// renewal thread (renewer.h) only waits, sends the rounds and publishes what it holds. A test
/// or a simulator steps it on a clock of its own.
///
/// The rules:
///  - the first round goes at lease_start + interval, then `interval` after each confirmed
///    round's own send (start to start: a slow round trip does not stretch the cadence);
///  - only a quorum-confirmed round moves the deadline, never backwards, stamped with when
///    that round was sent (renewed_at);
///  - an unconfirmed round is retried after retry_interval(), but at the deadline at the latest;
///  - the deadline is checked before anything else when the time comes (after a pause, a
///    renewal that succeeds now would not undo the time the lease was unguarded), and after
///    every unconfirmed round: past it, the lease is lost; a round that finds the key no
///    longer ours on a quorum loses it at once.

#include <string>

#include "lock/lease.h"
#include "util/clock.h"

namespace redisgo::lock {

class RenewalMachine {
 public:
  /// What the driver does next.
  struct Step {
    enum class Kind {
      kWait,   ///< until `until`, then due()
      kRenew,  ///< send a round now (LeaseBackend::renew), then renewed()
      kLost,   ///< the lease is lost (lost_reason()); nothing more to do
    } kind = Kind::kWait;
    Clock::time_point until{};
    /// The deadline moved or the lease was lost: the main loop must look (Renewer's wake).
    bool wake = false;
  };

  /// `initial`: the deadline from the acquisition; `lease_start`: when the acquisition was sent.
  RenewalMachine(Millis interval, Clock::time_point lease_start, Clock::time_point initial);

  /// How soon a round is retried after one that was not confirmed (but not lost): a
  /// quarter of `interval`, at least 100 ms, at most `interval`.
  static Millis retry_interval(Millis interval);

  /// The first step: wait for the first round's time.
  Step start() const { return {Step::Kind::kWait, next_, false}; }
  /// The wait ended at `now` (its time came, as the driver's own timer says): a round to
  /// send, or the deadline passed.
  Step due(Clock::time_point now);
  /// The round sent by due() came back at `now` with `r`.
  Step renewed(const Renewal& r, Clock::time_point now);

  Clock::time_point valid_until() const { return valid_until_; }
  /// When the acquisition or the renewal that set valid_until() was sent.
  Clock::time_point renewed_at() const { return renewed_at_; }
  bool lost() const { return lost_; }
  /// Lost because the local deadline passed without a confirmed renewal (else a round found
  /// the key no longer ours on a quorum): the child was due to stop before the lease could
  /// end, so a later holder of the key is the expected sequel, not an overlap.
  bool lost_by_deadline() const { return lost_by_deadline_; }
  const std::string& lost_reason() const { return lost_reason_; }
  /// The last round was refused by so many nodes that no quorum could confirm it.
  bool refused() const { return refused_; }
  /// The node that refused the last round refused by a quorum, with what it answered.
  const NodeError& refusal() const { return refusal_; }
  std::uint64_t renewals() const { return renewals_; }
  std::uint64_t rounds() const { return rounds_; }

 private:
  Step lose(std::string reason);
  /// The deadline passed without a confirmed renewal: said with the last round's errors.
  Step deadline_passed();

  Millis interval_;
  Clock::time_point next_;
  Clock::time_point valid_until_;
  Clock::time_point renewed_at_;
  Clock::time_point round_start_{};
  Renewal last_;  ///< the last round, unconfirmed: what the deadline is said to have ended on
  bool lost_ = false;
  bool lost_by_deadline_ = false;
  std::string lost_reason_;
  bool refused_ = false;
  NodeError refusal_;
  std::uint64_t renewals_ = 0;
  std::uint64_t rounds_ = 0;
};

}  // namespace redisgo::lock
