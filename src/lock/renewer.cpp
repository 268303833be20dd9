#include "lock/renewer.h"

#include <algorithm>
#include <exception>

#include "util/strings.h"

namespace redisgo::lock {

Millis Renewer::retry_interval(Millis interval) { return RenewalMachine::retry_interval(interval); }

std::string describe_errors(const std::vector<NodeError>& errors) {
  std::vector<std::string> parts;
  parts.reserve(errors.size());
  for (const auto& e : errors) parts.push_back(e.message);
  return join(parts, "; ");
}

LeaseOptions Renewer::backend_options(const LeaseOptions& main, const Acquisition& acquired, Millis interval) {
  LeaseOptions o = main;
  o.slot = acquired.slot;
  o.token = acquired.token;
  o.lease_id = acquired.lease_id;
  o.granted_on = acquired.granted;
  // A Redis back from a restart within a second must get the next renewal, or the child is
  // stopped for nothing (the pace is still >= 100 ms).
  o.node_retry_max = std::min(o.node_retry_max, retry_interval(interval));
  o.node_retry_initial = std::min(o.node_retry_initial, o.node_retry_max);
  return o;
}

Renewer::Renewer(const BackendFactory& make_backend, Millis interval, Clock::time_point lease_start,
                 Clock::time_point initial, Interrupt& wake, const Clock& clock, Observer observer, Start start)
    : backend_(make_backend(stop_.fd())),
      machine_(interval, lease_start, initial),
      wake_(wake),
      clock_(clock),
      observer_(std::move(observer)),
      valid_until_ns_(initial.time_since_epoch().count()),
      renewed_at_ns_(lease_start.time_since_epoch().count()) {
  if (start == Start::kNow) thread_ = std::thread([this] { run(); });
}

void Renewer::start() noexcept {
  if (thread_.joinable() || stopped_.load()) return;
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::exception& e) {
    {
      std::lock_guard lk(mu_);
      lost_reason_ = std::string("cannot start the renewal thread: ") + e.what();
    }
    lost_.store(true);
    wake_.trigger();
  }
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

void Renewer::halt() noexcept {
  stopped_.store(true);
  const int was = phase_.exchange(kStopped);
  stop_.trigger();
  if (was == kInRound && thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Renewer::stop() noexcept {
  halt();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

Release Renewer::stop_and_release(LeaseBackend& fallback) noexcept {
  halt();  // from here on backend_ is ours: the thread begins no round
  const Release out = rounds_.load() > 0 ? backend_->release() : fallback.release();
  stop();
  return out;
}

void Renewer::run() {
  using Kind = RenewalMachine::Step::Kind;
  RenewalMachine::Step step = machine_.start();
  for (;;) {
    switch (step.kind) {
      case Kind::kWait:
        if (stop_.wait_for(until(step.until, clock_.now()))) return;
        step = machine_.due(clock_.now());
        if (step.kind == Kind::kLost) publish(step);
        break;
      case Kind::kRenew: {
        int idle = kIdle;
        if (!phase_.compare_exchange_strong(idle, kInRound)) return;  // stopped: the backend is the releaser's
        rounds_.store(machine_.rounds());
        const Renewal r = send_round();
        int in_round = kInRound;
        if (!phase_.compare_exchange_strong(in_round, kIdle) || stop_.triggered()) return;
        if (observer_) {
          try {
            observer_(r);
          } catch (...) {  // a logging failure must not end the renewals
          }
        }
        step = machine_.renewed(r, clock_.now());
        publish(step);
        break;
      }
      case Kind::kLost: return;
    }
  }
}

Renewal Renewer::send_round() {
  try {
    return backend_->renew();
  } catch (const std::exception& e) {
    Renewal r;
    r.errors.push_back({"", redis::Fault::kNone, e.what()});
    return r;
  } catch (...) {
    Renewal r;
    r.errors.push_back({"", redis::Fault::kNone, "unknown error during renewal"});
    return r;
  }
}

void Renewer::publish(const RenewalMachine::Step& step) {
  refused_.store(machine_.refused());
  {
    std::lock_guard lk(mu_);
    refusal_ = machine_.refusal();
    if (machine_.lost()) lost_reason_ = machine_.lost_reason();
  }
  // The send time first: whoever reads the new deadline reads its stamp or a later one
  // (a later stamp can only make the keeper stricter).
  renewed_at_ns_.store(machine_.renewed_at().time_since_epoch().count());
  valid_until_ns_.store(machine_.valid_until().time_since_epoch().count());
  renewals_.store(machine_.renewals());
  if (machine_.lost()) {
    lost_by_deadline_.store(machine_.lost_by_deadline());  // before lost_: whoever sees it lost sees why
    lost_.store(true);
  }
  if (step.wake) wake_.trigger();
}

}  // namespace redisgo::lock
