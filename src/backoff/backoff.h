#pragma once
/// Backoff strategies between lock acquisition attempts, and a cancellable retry loop.
/// Pure logic apart from the retry loop's wait; randomness comes from a seeded engine
/// so sequences are reproducible in tests.
///
/// Strategies (config::Strategy), n counting next() calls since reset() from 0:
///  - zero:        always 0 ms.
///  - stop:        next() is nullopt at once: give up after the first failure.
///  - constant:    `initial` every time; jitter none/full/equal as below (decorrelated
///                 has no meaning for a constant and behaves as full).
///  - exponential: base_n = min(max, initial * factor^n), saturating (no overflow).
///                 Jitter none: base_n; full: uniform[0, base_n]; equal: base_n/2 +
///                 uniform[0, base_n/2]; decorrelated: min(max, uniform[initial, 3*prev]).
///  - simple:      intervals[n], n capped at the last entry; any jitter other than none
///                 means uniform within ±50% of the entry. No intervals: `initial`.
///  - adaptive:    widens with an estimate of contention and narrows as it falls, never
///                 waits much past the holder's remaining TTL; rule in backoff.cpp and
///                 below (kAdaptive*). Jitter as for constant.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "config/config.h"
#include "util/clock.h"
#include "util/interrupt.h"

namespace redisgo::backoff {

using Millis = std::chrono::milliseconds;

/// What the caller learnt from a failed attempt; strategies may use it (adaptive does).
struct Observation {
  bool contended = true;          ///< the lock was held by someone else (vs. an error)
  std::int64_t holder_ttl_ms = -1;///< remaining TTL of the holder's lease, -1 unknown
};

class Backoff {
 public:
  virtual ~Backoff() = default;
  /// The wait before the next attempt, or nullopt to give up (strategy "stop").
  virtual std::optional<Millis> next() = 0;
  /// Feeds the outcome of the attempt that just failed (before next()).
  virtual void observe(const Observation&) {}
  /// Back to the first interval (after a success).
  virtual void reset() = 0;
};

/// Adaptive rule parameters. The contention estimate c in [0, 1] is an exponentially
/// weighted moving average of observations (1 = contended, 0 = not: an error),
/// c += kAdaptiveSmoothing * (sample - c); the base interval is
/// initial + (max - initial) * c, capped at holder_ttl_ms + kAdaptiveTtlSlack when the
/// last observation was contended with a known TTL, and at max.
inline constexpr double kAdaptiveSmoothing = 0.25;
inline constexpr Millis kAdaptiveTtlSlack{1};

/// Builds the strategy of `config`. `seed` drives jitter; same seed, same sequence.
std::unique_ptr<Backoff> make(const config::BackoffConfig& config, std::uint64_t seed);

/// Result of retry().
enum class RetryOutcome { kSucceeded, kGaveUp, kCancelled, kDeadline };

/// For logs: "succeeded", "gave up", "cancelled", "deadline".
const char* to_string(RetryOutcome);

struct RetryOptions {
  /// Maximum attempts (not waits: 4 means 4 attempts, 3 waits); 0 (or less) = unlimited.
  int max_attempts = 0;
  /// Absolute deadline on `clock`; nullopt = none. No attempt starts at or after it; a
  /// wait that would reach it is cut short there and retry() returns kDeadline.
  std::optional<Clock::time_point> deadline;
};

/// Calls `attempt` until it returns true, waiting per `strategy` in between. `attempt`
/// fills in the Observation (default: contended, TTL unknown), which is passed to
/// strategy.observe() after a failure. `notify` is called after each failed attempt
/// that is followed by a wait, with (attempt number from 1, the wait chosen) — for
/// logging; it is not called when retry() gives up. A trigger of `cancel` wakes the
/// waiter at once and returns kCancelled; `cancel` is also checked before each attempt
/// (already triggered: no attempt is made). On success strategy.reset() is called.
/// The waits themselves are real time (cancel.wait_for); `clock` is only read for the
/// deadline. Exceptions from `attempt`/`notify` propagate.
RetryOutcome retry(Backoff& strategy, const std::function<bool(Observation&)>& attempt,
                   const std::function<void(int, Millis)>& notify, const Interrupt& cancel,
                   const RetryOptions& options = {}, const Clock& clock = SystemClock::instance());

}  // namespace redisgo::backoff
