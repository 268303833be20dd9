#include "lock/renewer.h"

#include <algorithm>
#include <exception>

#include "util/strings.h"

namespace redisgo::lock {
namespace {

// After an unconfirmed (but not lost) round, retry sooner than the normal tick (the
// deadline is approaching), but never more often than every kMinRetry: a node that
// answers every renewal with an error must not get more requests for it
// (docs/DESIGN.md, invariant 7). A tick shorter than that is the operator's explicit choice.
constexpr Millis kMinRetry{100};

}  // namespace

Millis Renewer::retry_interval(Millis interval) { return std::min(interval, std::max(kMinRetry, interval / 4)); }

std::string describe_errors(const std::vector<NodeError>& errors) {
  std::vector<std::string> parts;
  parts.reserve(errors.size());
  for (const auto& e : errors) parts.push_back(e.message);
  return join(parts, "; ");
}

Renewer::Renewer(const BackendFactory& make_backend, Millis interval, Clock::time_point lease_start,
                 Clock::time_point initial, Interrupt& wake, const Clock& clock, Observer observer)
    : backend_(make_backend(stop_.fd())),
      interval_(std::max(interval, Millis(1))),
      first_(lease_start + interval_),
      wake_(wake),
      clock_(clock),
      observer_(std::move(observer)),
      valid_until_ns_(initial.time_since_epoch().count()),
      renewed_at_ns_(lease_start.time_since_epoch().count()) {
  thread_ = std::thread([this] { run(); });
}

Renewer::~Renewer() { stop(); }

Clock::time_point Renewer::valid_until() const noexcept {
  return Clock::time_point(Clock::duration(valid_until_ns_.load()));
}

Clock::time_point Renewer::renewed_at() const noexcept {
  return Clock::time_point(Clock::duration(renewed_at_ns_.load()));
}

std::string Renewer::lost_reason() const {
  std::lock_guard lk(mu_);
  return lost_reason_;
}

NodeError Renewer::refusal() const {
  std::lock_guard lk(mu_);
  return refusal_;
}

void Renewer::stop() noexcept {
  stop_.trigger();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

Release Renewer::stop_and_release() noexcept {
  stop();
  return backend_->release();
}

void Renewer::run() {
  Clock::time_point next = first_;
  auto declare_lost = [&](std::string reason) {
    {
      std::lock_guard lk(mu_);
      lost_reason_ = std::move(reason);
    }
    lost_.store(true);
    wake_.trigger();
  };
  Renewal last;  // the last round, unconfirmed: what the deadline is said to have ended on
  // Refused up to the end (credentials, or a right the ACL user lacks): the cause is ours to fix,
  // and no run of this config would keep its lease (exit 77; a supervise leader steps down).
  auto deadline_passed = [&] {
    std::string why = last.refused_quorum ? "lease deadline passed: Redis refused the renewal on " +
                                                std::to_string(last.refused) + " node(s)"
                                          : "lease deadline passed without a confirmed renewal";
    if (!last.errors.empty()) why += " (" + describe_errors(last.errors) + ")";
    declare_lost(std::move(why));
  };
  for (;;) {
    if (stop_.wait_for(until(next, clock_.now()))) return;
    // After a pause (SIGSTOP, a stalled VM) the deadline is checked before anything
    // else: a renewal that succeeds now would not undo the time the lease was unguarded.
    if (clock_.now() >= valid_until()) {
      deadline_passed();
      return;
    }
    const auto round_start = clock_.now();
    Renewal r;
    rounds_.fetch_add(1);
    try {
      r = backend_->renew();
    } catch (const std::exception& e) {
      r = Renewal{};
      r.errors.push_back({"", redis::Fault::kNone, e.what()});
    } catch (...) {
      r = Renewal{};
      r.errors.push_back({"", redis::Fault::kNone, "unknown error during renewal"});
    }
    if (stop_.triggered()) return;
    if (observer_) {
      try {
        observer_(r);
      } catch (...) {  // a logging failure must not end the renewals
      }
    }
    refused_.store(!r.confirmed && r.refused_quorum);
    if (!r.confirmed && r.refused_quorum) {
      const auto e = std::find_if(r.errors.begin(), r.errors.end(), [](const NodeError& x) {
        return redis::is_refusal(x.fault);
      });
      std::lock_guard lk(mu_);
      if (e != r.errors.end()) refusal_ = *e;
    }
    if (r.confirmed) {
      last = Renewal{};
      // Never move the deadline backwards (a slow round confirmed after a faster one).
      // The send time first: whoever reads the new deadline reads its stamp or a later one
      // (a later stamp can only make the keeper stricter).
      if (r.valid_until > valid_until()) {
        const auto sent = r.sent != Clock::time_point{} ? r.sent : round_start;
        renewed_at_ns_.store(sent.time_since_epoch().count());
        valid_until_ns_.store(r.valid_until.time_since_epoch().count());
      }
      renewals_.fetch_add(1);
      wake_.trigger();
      next = round_start + interval_;
      continue;
    }
    if (r.lost) {
      std::string why = "the key is no longer ours on enough nodes for a quorum (" + std::to_string(r.votes) +
                        " node(s) renewed it)";
      if (!r.errors.empty()) why += "; " + describe_errors(r.errors);
      declare_lost(std::move(why));
      return;
    }
    last = r;
    const auto now = clock_.now();
    if (now >= valid_until()) {
      deadline_passed();
      return;
    }
    // Retry soon, but wake at the deadline at the latest to report it.
    next = std::min(now + retry_interval(interval_), valid_until());
  }
}

}  // namespace redisgo::lock
