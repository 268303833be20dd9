#include "lock/renewal_machine.h"

#include <algorithm>

#include "lock/renewer.h"

namespace redisgo::lock {
namespace {

// After an unconfirmed (but not lost) round, retry sooner than the normal tick (the
// deadline is approaching), but never more often than every kMinRetry: a node that
// answers every renewal with an error must not get more requests for it
// (docs/DESIGN.md, invariant 7). A tick shorter than that is the operator's explicit choice.
constexpr Millis kMinRetry{100};

}  // namespace

Millis RenewalMachine::retry_interval(Millis interval) { return std::min(interval, std::max(kMinRetry, interval / 4)); }

RenewalMachine::RenewalMachine(Millis interval, Clock::time_point lease_start, Clock::time_point initial)
    : interval_(std::max(interval, Millis(1))),
      next_(lease_start + interval_),
      valid_until_(initial),
      renewed_at_(lease_start) {}

RenewalMachine::Step RenewalMachine::lose(std::string reason) {
  lost_reason_ = std::move(reason);
  lost_ = true;
  return {Step::Kind::kLost, {}, true};
}

RenewalMachine::Step RenewalMachine::deadline_passed() {
  // Refused up to the end (credentials, or a right the ACL user lacks): the cause is ours to fix,
  // and no run of this config would keep its lease (exit 77; a supervise leader steps down).
  std::string why = last_.refused_quorum ? "lease deadline passed: Redis refused the renewal on " +
                                               std::to_string(last_.refused) + " node(s)"
                                         : "lease deadline passed without a confirmed renewal";
  if (!last_.errors.empty()) why += " (" + describe_errors(last_.errors) + ")";
  lost_by_deadline_ = true;
  return lose(std::move(why));
}

RenewalMachine::Step RenewalMachine::due(Clock::time_point now) {
  if (lost_) return {Step::Kind::kLost, {}, false};
  // After a pause (SIGSTOP, a stalled VM) the deadline is checked before anything
  // else: a renewal that succeeds now would not undo the time the lease was unguarded.
  if (now >= valid_until_) return deadline_passed();
  round_start_ = now;
  ++rounds_;
  return {Step::Kind::kRenew, now, false};
}

RenewalMachine::Step RenewalMachine::renewed(const Renewal& r, Clock::time_point now) {
  refused_ = !r.confirmed && r.refused_quorum;
  if (refused_) {
    const auto e = std::find_if(r.errors.begin(), r.errors.end(), [](const NodeError& x) {
      return redis::is_refusal(x.fault);
    });
    if (e != r.errors.end()) refusal_ = *e;
  }
  if (r.confirmed && now >= valid_until_) {
    // Confirmed after the deadline had passed (sent before a stop, answered after it): the
    // keeper has stopped the child by now and another holder may have been granted the key in
    // between, so a late confirmation revives nothing (docs/DESIGN.md, invariant 2).
    lost_by_deadline_ = true;
    return lose("lease deadline passed before the renewal was confirmed (" +
                std::to_string(std::chrono::duration_cast<Millis>(now - valid_until_).count()) + " ms late)");
  }
  if (r.confirmed) {
    last_ = Renewal{};
    // Never move the deadline backwards (a slow round confirmed after a faster one).
    if (r.valid_until > valid_until_) {
      renewed_at_ = r.sent != Clock::time_point{} ? r.sent : round_start_;
      valid_until_ = r.valid_until;
    }
    ++renewals_;
    next_ = round_start_ + interval_;
    return {Step::Kind::kWait, next_, true};
  }
  if (r.lost) {
    std::string why = "the key is no longer ours on enough nodes for a quorum (" + std::to_string(r.votes) +
                      " node(s) renewed it)";
    if (!r.errors.empty()) why += "; " + describe_errors(r.errors);
    return lose(std::move(why));
  }
  last_ = r;
  if (now >= valid_until_) return deadline_passed();
  // Retry soon, but wake at the deadline at the latest to report it.
  next_ = std::min(now + retry_interval(interval_), valid_until_);
  return {Step::Kind::kWait, next_, false};
}

}  // namespace redisgo::lock
