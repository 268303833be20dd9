#include "backoff/backoff.h"

#include <algorithm>
#include <limits>

#include "util/rounding.h"

namespace redisgo::backoff {
namespace {

using config::Jitter;
using Rng = std::mt19937_64;
using Rep = Millis::rep;

constexpr Rep kRepMax = std::numeric_limits<Rep>::max();

/// Uniform integer in [lo, hi] (hi < lo is treated as lo).
Rep uniform(Rng& rng, Rep lo, Rep hi) {
  if (hi <= lo) return lo;
  return std::uniform_int_distribution<Rep>(lo, hi)(rng);
}

/// a * 3 without overflow: a lease backoff has no business near the limit, but a
/// configured `max` of years must not wrap into a negative wait.
Rep saturating_triple(Rep a) { return a > kRepMax / 3 ? kRepMax : a * 3; }

/// Jitter for strategies whose base interval does not depend on the previous wait.
/// Decorrelated only makes sense as a recurrence over the previous wait (exponential
/// implements it); elsewhere it spreads like full jitter.
Millis apply_jitter(Millis base, Jitter jitter, Rng& rng) {
  const Rep b = std::max<Rep>(0, base.count());
  switch (jitter) {
    case Jitter::kNone:
      return Millis(b);
    case Jitter::kEqual: {
      // Half fixed, half random: keeps a floor so contenders never retry back to back.
      const Rep half = b / 2;
      return Millis(half + uniform(rng, 0, b - half));
    }
    case Jitter::kFull:
    case Jitter::kDecorrelated:
      break;
  }
  return Millis(uniform(rng, 0, b));
}

class Zero final : public Backoff {
 public:
  std::optional<Millis> next() override { return Millis(0); }
  void reset() override {}
};

class Stop final : public Backoff {
 public:
  std::optional<Millis> next() override { return std::nullopt; }
  void reset() override {}
};

class Constant final : public Backoff {
 public:
  Constant(const config::BackoffConfig& c, std::uint64_t seed)
      : interval_(c.initial), jitter_(c.jitter), rng_(seed) {}
  std::optional<Millis> next() override { return apply_jitter(interval_, jitter_, rng_); }
  void reset() override {}

 private:
  Millis interval_;
  Jitter jitter_;
  Rng rng_;
};

class Exponential final : public Backoff {
 public:
  Exponential(const config::BackoffConfig& c, std::uint64_t seed)
      : initial_(c.initial), max_(c.max), factor_(c.factor), jitter_(c.jitter), rng_(seed) {
    reset();
  }

  std::optional<Millis> next() override {
    if (jitter_ == Jitter::kDecorrelated) {
      // "Decorrelated jitter" from the AWS Architecture Blog post "Exponential Backoff
      // and Jitter" (Brooker, 2015): sleep = min(cap, random_between(base, sleep * 3)).
      // Each wait grows from the previous one rather than from the attempt count, so
      // contenders that collided once drift apart instead of staying in step.
      const Rep lo = initial_.count();
      const Rep hi = std::max(lo, saturating_triple(prev_.count()));
      prev_ = std::min(max_, Millis(uniform(rng_, lo, hi)));
      return prev_;
    }
    const Millis base = base_at(n_);
    // n only needs to get past the point where base_n reaches max; stopping there
    // keeps the counter from ever overflowing however long we retry.
    if (base < max_) ++n_;
    return apply_jitter(base, jitter_, rng_);
  }

  void reset() override {
    n_ = 0;
    prev_ = initial_;
  }

 private:
  /// min(max, initial * factor^n), computed in double so a huge power saturates to
  /// infinity (and then to max) instead of wrapping.
  Millis base_at(std::uint64_t n) const {
    const double b = static_cast<double>(initial_.count()) * power(factor_, n);
    // !(b < max) also catches inf and NaN.
    if (!(b < static_cast<double>(max_.count()))) return max_;
    return std::min(max_, Millis(std::max<Rep>(0, round_to_int(b))));
  }

  Millis initial_;
  Millis max_;
  double factor_;
  Jitter jitter_;
  Rng rng_;
  std::uint64_t n_ = 0;
  Millis prev_{0};  ///< last decorrelated wait
};

class Simple final : public Backoff {
 public:
  Simple(const config::BackoffConfig& c, std::uint64_t seed)
      : intervals_(c.intervals), jitter_(c.jitter), rng_(seed) {
    // Validation rejects an empty list; fall back to a constant rather than crash.
    if (intervals_.empty()) intervals_.push_back(c.initial);
  }

  std::optional<Millis> next() override {
    const Rep v = std::max<Rep>(0, intervals_[i_].count());
    if (i_ + 1 < intervals_.size()) ++i_;
    if (jitter_ == Jitter::kNone) return Millis(v);
    const Rep spread = v / 2;  // ±50%
    return Millis(uniform(rng_, v - spread, v + spread));
  }

  void reset() override { i_ = 0; }

 private:
  std::vector<Millis> intervals_;
  Jitter jitter_;
  Rng rng_;
  std::size_t i_ = 0;
};

/// Adaptive rule.
///
/// Contention estimate c in [0, 1]: an EWMA over the observations of failed attempts,
/// sample 1 when the lock was held by someone else and 0 when the attempt failed for
/// another reason (an error says nothing about other contenders; once the holder is
/// gone the estimate decays and we retry sooner):
///     c <- c + kAdaptiveSmoothing * (sample - c)
/// Base interval: linear between initial (c = 0) and max (c = 1):
///     base = initial + (max - initial) * c
/// Sustained contention drives c towards 1 geometrically (1 - 0.75^k after k contended
/// observations), so the interval widens towards max and Redis sees fewer doomed SETs;
/// failures of another kind pull it back towards initial.
/// Holder TTL cap: when the last observation was contended and reported the holder's
/// remaining TTL, waiting past it is pointless — the lease may expire then and a
/// standby should be there to take it — so base = min(base, ttl + kAdaptiveTtlSlack).
/// The TTL only applies to the next() right after it was observed.
/// Finally base <= max, then jitter as for constant.
class Adaptive final : public Backoff {
 public:
  Adaptive(const config::BackoffConfig& c, std::uint64_t seed)
      : initial_(c.initial), max_(std::max(c.initial, c.max)), jitter_(c.jitter), rng_(seed) {}

  void observe(const Observation& o) override {
    const double sample = o.contended ? 1.0 : 0.0;
    estimate_ += kAdaptiveSmoothing * (sample - estimate_);
    estimate_ = std::clamp(estimate_, 0.0, 1.0);
    ttl_cap_.reset();
    if (o.contended && o.holder_ttl_ms >= 0) {
      const Rep slack = kAdaptiveTtlSlack.count();
      ttl_cap_ = Millis(o.holder_ttl_ms > kRepMax - slack ? kRepMax : o.holder_ttl_ms + slack);
    }
  }

  std::optional<Millis> next() override {
    // In double, like exponential, so a max near the limit of Rep cannot overflow.
    const double span = static_cast<double>(max_.count()) - static_cast<double>(initial_.count());
    const double b = static_cast<double>(initial_.count()) + span * estimate_;
    Millis base = b < static_cast<double>(max_.count()) ? Millis(round_to_int(b)) : max_;
    if (ttl_cap_) base = std::min(base, *ttl_cap_);
    ttl_cap_.reset();
    base = std::min(base, max_);
    return apply_jitter(base, jitter_, rng_);
  }

  void reset() override {
    estimate_ = 0.0;
    ttl_cap_.reset();
  }

 private:
  Millis initial_;
  Millis max_;
  Jitter jitter_;
  Rng rng_;
  double estimate_ = 0.0;
  std::optional<Millis> ttl_cap_;
};

/// Interrupt::wait_for takes an int of milliseconds inside poll(); sleep in slices so
/// a wait of more than ~24 days cannot overflow it.
constexpr Millis kMaxSlice = std::chrono::hours(24);

/// Waits `d` unless `cancel` fires; true if cancelled.
bool cancellable_wait(const Interrupt& cancel, Millis d) {
  while (d > kMaxSlice) {
    if (cancel.wait_for(kMaxSlice)) return true;
    d -= kMaxSlice;
  }
  return cancel.wait_for(d);
}

}  // namespace

std::unique_ptr<Backoff> make(const config::BackoffConfig& config, std::uint64_t seed) {
  using config::Strategy;
  switch (config.strategy) {
    case Strategy::kZero:
      return std::make_unique<Zero>();
    case Strategy::kStop:
      return std::make_unique<Stop>();
    case Strategy::kConstant:
      return std::make_unique<Constant>(config, seed);
    case Strategy::kSimple:
      return std::make_unique<Simple>(config, seed);
    case Strategy::kAdaptive:
      return std::make_unique<Adaptive>(config, seed);
    case Strategy::kExponential:
      break;
  }
  return std::make_unique<Exponential>(config, seed);
}

const char* to_string(RetryOutcome outcome) {
  switch (outcome) {
    case RetryOutcome::kSucceeded:
      return "succeeded";
    case RetryOutcome::kGaveUp:
      return "gave up";
    case RetryOutcome::kCancelled:
      return "cancelled";
    case RetryOutcome::kDeadline:
      return "deadline";
  }
  return "unknown";
}

RetryOutcome retry(Backoff& strategy, const std::function<bool(Observation&)>& attempt,
                   const std::function<void(int, Millis)>& notify, const Interrupt& cancel,
                   const RetryOptions& options, const Clock& clock) {
  for (int n = 1;; ++n) {
    if (cancel.triggered()) return RetryOutcome::kCancelled;
    if (options.deadline && clock.now() >= *options.deadline) return RetryOutcome::kDeadline;

    Observation observation;
    if (attempt(observation)) {
      strategy.reset();
      return RetryOutcome::kSucceeded;
    }
    strategy.observe(observation);
    if (options.max_attempts > 0 && n >= options.max_attempts) return RetryOutcome::kGaveUp;

    const std::optional<Millis> wait = strategy.next();
    if (!wait) return RetryOutcome::kGaveUp;
    if (notify) notify(n, *wait);

    if (options.deadline) {
      // Compared as durations: now + wait could overflow for an absurd `max`.
      const Millis left = until(*options.deadline, clock.now());
      if (*wait >= left) {
        // The next attempt would start at or after the deadline: sleep out only what is
        // left of it (so the caller's time budget is honoured, not exceeded) and stop.
        if (cancellable_wait(cancel, left)) {
          return RetryOutcome::kCancelled;
        }
        return RetryOutcome::kDeadline;
      }
    }
    if (cancellable_wait(cancel, *wait)) return RetryOutcome::kCancelled;
  }
}

}  // namespace redisgo::backoff
