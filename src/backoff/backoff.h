#pragma once
/// Backoff strategies between lock acquisition attempts, and a cancellable retry loop.
/// Pure logic apart from the retry loop's wait; randomness comes from a seeded engine
/// so sequences are reproducible in tests.

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

/// Builds the strategy of `config`. `seed` drives jitter; same seed, same sequence.
std::unique_ptr<Backoff> make(const config::BackoffConfig& config, std::uint64_t seed);

/// Result of retry().
enum class RetryOutcome { kSucceeded, kGaveUp, kCancelled, kDeadline };

struct RetryOptions {
  /// Maximum attempts; 0 means unlimited.
  int max_attempts = 0;
  /// Absolute deadline on `clock`; nullopt = none.
  std::optional<Clock::time_point> deadline;
};

/// Calls `attempt` until it returns true, waiting per `strategy` in between. `notify` is
/// called after each failed attempt with (attempt number from 1, the wait chosen) — for
/// logging. A trigger of `cancel` wakes the waiter at once and returns kCancelled.
RetryOutcome retry(Backoff& strategy, const std::function<bool(Observation&)>& attempt,
                   const std::function<void(int, Millis)>& notify, const Interrupt& cancel,
                   const RetryOptions& options = {}, const Clock& clock = SystemClock::instance());

}  // namespace redisgo::backoff
