#include "backoff/backoff.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

#include "util/clock.h"
#include "util/interrupt.h"

namespace backoff_test {

using namespace std::chrono_literals;
using redisgo::FakeClock;
using redisgo::Interrupt;
using redisgo::SystemClock;
using redisgo::backoff::Backoff;
using redisgo::backoff::Millis;
using redisgo::backoff::Observation;
using redisgo::backoff::retry;
using redisgo::backoff::RetryOptions;
using redisgo::backoff::RetryOutcome;
using redisgo::config::BackoffConfig;
using redisgo::config::Jitter;
using redisgo::config::Strategy;

namespace {

BackoffConfig cfg(Strategy s, Jitter j = Jitter::kNone, Millis initial = 30ms, Millis max = 1000ms,
                  double factor = 2.0) {
  BackoffConfig c;
  c.strategy = s;
  c.jitter = j;
  c.initial = initial;
  c.max = max;
  c.factor = factor;
  return c;
}

std::vector<long> take(Backoff& b, int n) {
  std::vector<long> out;
  for (int i = 0; i < n; ++i) {
    auto w = b.next();
    EXPECT_TRUE(w.has_value());
    out.push_back(w ? static_cast<long>(w->count()) : -1);
  }
  return out;
}

constexpr int kDraws = 10000;

}  // namespace

// ---------------------------------------------------------------- strategies

TEST(Backoff, ZeroIsAlwaysZero) {
  auto b = redisgo::backoff::make(cfg(Strategy::kZero, Jitter::kFull), 1);
  EXPECT_EQ(take(*b, 5), (std::vector<long>{0, 0, 0, 0, 0}));
}

TEST(Backoff, StopGivesUpAtOnce) {
  auto b = redisgo::backoff::make(cfg(Strategy::kStop), 1);
  EXPECT_FALSE(b->next().has_value());
  b->reset();
  EXPECT_FALSE(b->next().has_value());
}

TEST(Backoff, ConstantWithoutJitter) {
  auto b = redisgo::backoff::make(cfg(Strategy::kConstant, Jitter::kNone, 250ms), 1);
  EXPECT_EQ(take(*b, 4), (std::vector<long>{250, 250, 250, 250}));
}

TEST(Backoff, ConstantWithFullJitterStaysInRange) {
  auto b = redisgo::backoff::make(cfg(Strategy::kConstant, Jitter::kFull, 200ms), 7);
  double sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    auto w = b->next()->count();
    ASSERT_GE(w, 0);
    ASSERT_LE(w, 200);
    sum += static_cast<double>(w);
  }
  EXPECT_NEAR(sum / kDraws, 100.0, 10.0);
}

TEST(Backoff, ExponentialExactSequenceCappedAtMax) {
  auto b = redisgo::backoff::make(cfg(Strategy::kExponential), 1);
  EXPECT_EQ(take(*b, 10),
            (std::vector<long>{30, 60, 120, 240, 480, 960, 1000, 1000, 1000, 1000}));
}

TEST(Backoff, ExponentialFactorOneAndAHalf) {
  auto b = redisgo::backoff::make(cfg(Strategy::kExponential, Jitter::kNone, 30ms, 1000ms, 1.5), 1);
  // 30 * 1.5^n rounded to the nearest millisecond; 30 * 1.5^9 = 1153 is capped.
  EXPECT_EQ(take(*b, 11),
            (std::vector<long>{30, 45, 68, 101, 152, 228, 342, 513, 769, 1000, 1000}));
}

TEST(Backoff, ExponentialHugeAttemptCountsSaturateAtMax) {
  // A max of ~292 years is as large as milliseconds go in int64 nanosecond clocks; the
  // sequence must climb to it and stay there without wrapping negative.
  const Millis max(std::chrono::duration_cast<Millis>(std::chrono::nanoseconds::max()));
  auto b = redisgo::backoff::make(cfg(Strategy::kExponential, Jitter::kNone, 1ms, max, 10.0), 1);
  long prev = 0;
  for (int i = 0; i < 100000; ++i) {
    auto w = b->next()->count();
    ASSERT_GE(w, prev) << "at n=" << i;
    ASSERT_LE(w, max.count());
    prev = w;
  }
  EXPECT_EQ(prev, max.count());
  // Every jitter, and max at the very limit of the type: never negative, never above max
  // (run under UBSan this also catches a signed overflow on the way).
  for (auto limit : {max, Millis::max()}) {
    for (auto j : {Jitter::kFull, Jitter::kEqual, Jitter::kDecorrelated}) {
      for (auto s : {Strategy::kExponential, Strategy::kAdaptive}) {
        auto b2 = redisgo::backoff::make(cfg(s, j, 1ms, limit, 10.0), 1);
        for (int i = 0; i < 1000; ++i) {
          b2->observe(Observation{true, -1});
          auto w = b2->next()->count();
          ASSERT_GE(w, 0);
          ASSERT_LE(w, limit.count());
        }
      }
    }
    auto n = redisgo::backoff::make(cfg(Strategy::kExponential, Jitter::kNone, 1ms, limit, 2.0), 1);
    for (int i = 0; i < 200; ++i) n->next();
    EXPECT_EQ(n->next()->count(), limit.count());
  }
}

TEST(Backoff, ExponentialFullJitterWithinZeroAndBase) {
  auto b = redisgo::backoff::make(cfg(Strategy::kExponential, Jitter::kFull, 30ms, 1000ms), 42);
  const std::vector<long> bases{30, 60, 120, 240, 480, 960};
  double capped_sum = 0;
  int capped = 0;
  for (int i = 0; i < kDraws; ++i) {
    long base = i < static_cast<int>(bases.size()) ? bases[static_cast<std::size_t>(i)] : 1000;
    auto w = b->next()->count();
    ASSERT_GE(w, 0) << "draw " << i;
    ASSERT_LE(w, base) << "draw " << i;
    if (base == 1000) {
      capped_sum += static_cast<double>(w);
      ++capped;
    }
  }
  // uniform[0, 1000]: mean 500.
  EXPECT_NEAR(capped_sum / capped, 500.0, 50.0);
}

TEST(Backoff, ExponentialEqualJitterWithinHalfAndBase) {
  auto b = redisgo::backoff::make(cfg(Strategy::kExponential, Jitter::kEqual, 30ms, 1000ms), 42);
  const std::vector<long> bases{30, 60, 120, 240, 480, 960};
  double capped_sum = 0;
  int capped = 0;
  for (int i = 0; i < kDraws; ++i) {
    long base = i < static_cast<int>(bases.size()) ? bases[static_cast<std::size_t>(i)] : 1000;
    auto w = b->next()->count();
    ASSERT_GE(w, base / 2) << "draw " << i;
    ASSERT_LE(w, base) << "draw " << i;
    if (base == 1000) {
      capped_sum += static_cast<double>(w);
      ++capped;
    }
  }
  // 500 + uniform[0, 500]: mean 750.
  EXPECT_NEAR(capped_sum / capped, 750.0, 75.0);
}

TEST(Backoff, ExponentialDecorrelatedFollowsRecurrence) {
  auto b = redisgo::backoff::make(
      cfg(Strategy::kExponential, Jitter::kDecorrelated, 30ms, 1000ms), 42);
  long prev = 30;
  long seen_min = 1000000, seen_max = 0;
  double sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    auto w = b->next()->count();
    // min(max, uniform[initial, 3 * prev])
    ASSERT_GE(w, 30) << "draw " << i;
    ASSERT_LE(w, std::min(1000L, 3 * prev)) << "draw " << i;
    prev = w;
    seen_min = std::min(seen_min, w);
    seen_max = std::max(seen_max, w);
    sum += static_cast<double>(w);
  }
  // Spread over the whole range, not stuck at either end.
  EXPECT_LT(seen_min, 40);
  EXPECT_EQ(seen_max, 1000);
  const double mean = sum / kDraws;
  EXPECT_GT(mean, 200.0);
  EXPECT_LT(mean, 900.0);
  // After reset the first draw is again within [initial, 3 * initial].
  b->reset();
  auto first = b->next()->count();
  EXPECT_GE(first, 30);
  EXPECT_LE(first, 90);
}

TEST(Backoff, SimpleSequenceRepeatsLastInterval) {
  auto c = cfg(Strategy::kSimple);
  c.intervals = {10ms, 50ms, 200ms};
  auto b = redisgo::backoff::make(c, 1);
  EXPECT_EQ(take(*b, 6), (std::vector<long>{10, 50, 200, 200, 200, 200}));
  b->reset();
  EXPECT_EQ(take(*b, 2), (std::vector<long>{10, 50}));
}

TEST(Backoff, SimpleJitterWithinFiftyPercent) {
  auto c = cfg(Strategy::kSimple, Jitter::kFull);
  c.intervals = {100ms, 1000ms};
  auto b = redisgo::backoff::make(c, 9);
  auto first = b->next()->count();
  EXPECT_GE(first, 50);
  EXPECT_LE(first, 150);
  double sum = 0;
  long lo = 100000, hi = 0;
  for (int i = 0; i < kDraws; ++i) {
    auto w = b->next()->count();
    ASSERT_GE(w, 500);
    ASSERT_LE(w, 1500);
    sum += static_cast<double>(w);
    lo = std::min(lo, w);
    hi = std::max(hi, w);
  }
  EXPECT_NEAR(sum / kDraws, 1000.0, 100.0);
  EXPECT_LT(lo, 600);
  EXPECT_GT(hi, 1400);
}

TEST(Backoff, ResetReturnsToFirstInterval) {
  auto b = redisgo::backoff::make(cfg(Strategy::kExponential), 1);
  take(*b, 8);
  b->reset();
  EXPECT_EQ(take(*b, 3), (std::vector<long>{30, 60, 120}));
}

TEST(Backoff, SameSeedSameSequenceOtherSeedDiffers) {
  // Only the config structs are used here, not config.cpp (built in parallel).
  for (auto j : {Jitter::kFull, Jitter::kEqual, Jitter::kDecorrelated}) {
    auto a = redisgo::backoff::make(cfg(Strategy::kExponential, j), 1234);
    auto b = redisgo::backoff::make(cfg(Strategy::kExponential, j), 1234);
    auto c = redisgo::backoff::make(cfg(Strategy::kExponential, j), 4321);
    auto sa = take(*a, 50);
    EXPECT_EQ(sa, take(*b, 50)) << static_cast<int>(j);
    EXPECT_NE(sa, take(*c, 50)) << static_cast<int>(j);
  }
}

// ---------------------------------------------------------------- adaptive

namespace {
/// The documented rule, recomputed independently of the implementation.
long adaptive_expected(double c, long initial, long max) {
  return initial + std::lround(static_cast<double>(max - initial) * c);
}
}  // namespace

TEST(Backoff, AdaptiveWidensUnderContentionAndNarrowsAfter) {
  auto b = redisgo::backoff::make(cfg(Strategy::kAdaptive, Jitter::kNone, 30ms, 1000ms), 1);
  const double a = redisgo::backoff::kAdaptiveSmoothing;
  // No observation yet: initial.
  EXPECT_EQ(b->next()->count(), 30);

  double c = 0;
  long prev = 30;
  for (int i = 0; i < 12; ++i) {
    b->observe(Observation{true, -1});
    c += a * (1 - c);
    auto w = b->next()->count();
    EXPECT_EQ(w, adaptive_expected(c, 30, 1000)) << "contended step " << i;
    EXPECT_GT(w, prev) << "must widen at step " << i;
    EXPECT_LE(w, 1000);
    prev = w;
  }
  EXPECT_GT(prev, 900);  // close to max after sustained contention

  for (int i = 0; i < 12; ++i) {
    b->observe(Observation{false, -1});
    c += a * (0 - c);
    auto w = b->next()->count();
    EXPECT_EQ(w, adaptive_expected(c, 30, 1000)) << "uncontended step " << i;
    EXPECT_LT(w, prev) << "must narrow at step " << i;
    prev = w;
  }
  EXPECT_LT(prev, 100);  // back near initial

  // Mixed: the estimate tracks the contended fraction, so half contended settles midway.
  for (int i = 0; i < 200; ++i) {
    b->observe(Observation{i % 2 == 0, -1});
    b->next();
  }
  b->observe(Observation{true, -1});
  auto mid = b->next()->count();
  EXPECT_GT(mid, 300);
  EXPECT_LT(mid, 800);

  b->reset();
  EXPECT_EQ(b->next()->count(), 30);
}

TEST(Backoff, AdaptiveNeverWaitsPastHolderTtl) {
  auto b = redisgo::backoff::make(cfg(Strategy::kAdaptive, Jitter::kNone, 30ms, 1000ms), 1);
  const long slack = redisgo::backoff::kAdaptiveTtlSlack.count();
  for (int i = 0; i < 20; ++i) b->observe(Observation{true, -1});
  EXPECT_GT(b->next()->count(), 900);
  // The holder's lease ends in 120 ms: no point sleeping longer than that.
  b->observe(Observation{true, 120});
  EXPECT_EQ(b->next()->count(), 120 + slack);
  // A TTL longer than the contention interval does not lengthen it.
  b->observe(Observation{true, 60000});
  auto w = b->next()->count();
  EXPECT_GT(w, 900);
  EXPECT_LE(w, 1000);
  // The TTL applies to the next wait only, not forever.
  b->observe(Observation{true, 5});
  EXPECT_EQ(b->next()->count(), 5 + slack);
  EXPECT_GT(b->next()->count(), 900);
  // With jitter the cap still holds for every draw.
  auto j = redisgo::backoff::make(cfg(Strategy::kAdaptive, Jitter::kEqual, 30ms, 1000ms), 3);
  for (int i = 0; i < 1000; ++i) {
    j->observe(Observation{true, 200});
    auto v = j->next()->count();
    ASSERT_LE(v, 200 + slack);
    ASSERT_GE(v, 0);
  }
}

// ---------------------------------------------------------------- retry

TEST(Retry, SucceedsOnThirdAttemptAndNotifiesEachWait) {
  auto b = redisgo::backoff::make(cfg(Strategy::kExponential, Jitter::kNone, 1ms, 10ms), 1);
  Interrupt cancel;
  int calls = 0;
  std::vector<std::pair<int, long>> notes;
  auto outcome = retry(
      *b, [&](Observation&) { return ++calls == 3; },
      [&](int n, Millis w) { notes.emplace_back(n, static_cast<long>(w.count())); }, cancel);
  EXPECT_EQ(outcome, RetryOutcome::kSucceeded);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(notes, (std::vector<std::pair<int, long>>{{1, 1}, {2, 2}}));
  // Success reset the strategy.
  EXPECT_EQ(b->next()->count(), 1);
}

TEST(Retry, GivesUpAfterMaxAttempts) {
  auto b = redisgo::backoff::make(cfg(Strategy::kZero), 1);
  Interrupt cancel;
  int calls = 0;
  int notes = 0;
  RetryOptions opts;
  opts.max_attempts = 4;
  auto outcome = retry(
      *b, [&](Observation&) { ++calls; return false; }, [&](int, Millis) { ++notes; }, cancel,
      opts);
  EXPECT_EQ(outcome, RetryOutcome::kGaveUp);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(notes, 3);  // 4 attempts, 3 waits
}

TEST(Retry, StopStrategyGivesUpAfterOneAttempt) {
  auto b = redisgo::backoff::make(cfg(Strategy::kStop), 1);
  Interrupt cancel;
  int calls = 0;
  int notes = 0;
  auto outcome = retry(
      *b, [&](Observation&) { ++calls; return false; }, [&](int, Millis) { ++notes; }, cancel);
  EXPECT_EQ(outcome, RetryOutcome::kGaveUp);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(notes, 0);
}

TEST(Retry, PassesObservationsToStrategy) {
  auto b = redisgo::backoff::make(cfg(Strategy::kAdaptive, Jitter::kNone, 1ms, 1000ms), 1);
  Interrupt cancel;
  std::vector<long> waits;
  RetryOptions opts;
  opts.max_attempts = 3;
  retry(
      *b,
      [&](Observation& o) {
        o.contended = true;
        o.holder_ttl_ms = 3;
        return false;
      },
      [&](int, Millis w) { waits.push_back(static_cast<long>(w.count())); }, cancel, opts);
  // The holder's TTL (3 ms + slack) capped each wait the adaptive strategy chose.
  EXPECT_EQ(waits, (std::vector<long>{3 + redisgo::backoff::kAdaptiveTtlSlack.count(),
                                      3 + redisgo::backoff::kAdaptiveTtlSlack.count()}));
}

TEST(Retry, CancelWakesSleepingWaiterAtOnce) {
  auto b = redisgo::backoff::make(cfg(Strategy::kConstant, Jitter::kNone, 10000ms, 10000ms), 1);
  Interrupt cancel;
  std::atomic<bool> waiting{false};
  std::thread trigger([&] {
    // Wait (bounded) until retry has chosen its 10 s wait, then give it 20 ms to fall
    // asleep; an early trigger would still be caught, only less interestingly.
    for (int i = 0; i < 5000 && !waiting.load(); ++i) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(20ms);
    cancel.trigger();
  });
  int calls = 0;
  std::chrono::steady_clock::time_point asleep;
  auto outcome = retry(
      *b, [&](Observation&) { ++calls; return false; },
      [&](int, Millis) {
        asleep = std::chrono::steady_clock::now();
        waiting = true;
      },
      cancel);
  auto woke = std::chrono::steady_clock::now();
  trigger.join();
  EXPECT_EQ(outcome, RetryOutcome::kCancelled);
  EXPECT_EQ(calls, 1);
  auto slept = std::chrono::duration_cast<std::chrono::microseconds>(woke - asleep);
  // ~20 ms until the trigger plus the wake-up latency; far below the 10 s wait.
  std::cout << "[ latency  ] retry cancelled after " << slept.count()
            << " us asleep (trigger at ~20 ms)\n";
  RecordProperty("cancel_after_us", static_cast<int>(slept.count()));
  EXPECT_LT(slept, 2s);
}

TEST(Retry, AlreadyCancelledMakesNoAttempt) {
  auto b = redisgo::backoff::make(cfg(Strategy::kZero), 1);
  Interrupt cancel;
  cancel.trigger();
  int calls = 0;
  auto outcome = retry(
      *b, [&](Observation&) { ++calls; return true; }, nullptr, cancel);
  EXPECT_EQ(outcome, RetryOutcome::kCancelled);
  EXPECT_EQ(calls, 0);
}

TEST(Retry, CancelBetweenAttemptsStopsBeforeNextAttempt) {
  auto b = redisgo::backoff::make(cfg(Strategy::kZero), 1);
  Interrupt cancel;
  int calls = 0;
  auto outcome = retry(
      *b,
      [&](Observation&) {
        if (++calls == 2) cancel.trigger();
        return false;
      },
      nullptr, cancel);
  EXPECT_EQ(outcome, RetryOutcome::kCancelled);
  EXPECT_EQ(calls, 2);
}

TEST(Retry, DeadlineStopsAttemptsOnFakeClock) {
  // Each attempt takes 40 ms of fake time; waits are 10 ms (real, and not on the fake
  // clock). Deadline at +100 ms: attempts start at 0, 40, 80; the next would be at 120.
  FakeClock clock;
  auto b = redisgo::backoff::make(cfg(Strategy::kConstant, Jitter::kNone, 10ms, 10ms), 1);
  Interrupt cancel;
  RetryOptions opts;
  opts.deadline = clock.now() + 100ms;
  std::vector<redisgo::Clock::time_point> starts;
  auto outcome = retry(
      *b,
      [&](Observation&) {
        starts.push_back(clock.now());
        clock.advance(40ms);
        return false;
      },
      nullptr, cancel, opts, clock);
  EXPECT_EQ(outcome, RetryOutcome::kDeadline);
  ASSERT_EQ(starts.size(), 3u);
  for (auto t : starts) EXPECT_LT(t, *opts.deadline);

  // Deadline inside a wait: at +85 the second attempt ends at 80 and a 10 ms wait would
  // reach 90, so retry waits only the 5 ms left and stops without a third attempt.
  b->reset();
  starts.clear();
  opts.deadline = clock.now() + 85ms;
  outcome = retry(
      *b,
      [&](Observation&) {
        starts.push_back(clock.now());
        clock.advance(40ms);
        return false;
      },
      nullptr, cancel, opts, clock);
  EXPECT_EQ(outcome, RetryOutcome::kDeadline);
  EXPECT_EQ(starts.size(), 2u);

  // A deadline already past: no attempt.
  int calls = 0;
  opts.deadline = clock.now();
  EXPECT_EQ(retry(*b, [&](Observation&) { ++calls; return true; }, nullptr, cancel, opts, clock),
            RetryOutcome::kDeadline);
  EXPECT_EQ(calls, 0);
}

TEST(Retry, DeadlineCutsLongWaitShortInRealTime) {
  const auto& clock = SystemClock::instance();
  auto b = redisgo::backoff::make(cfg(Strategy::kConstant, Jitter::kNone, 10000ms, 10000ms), 1);
  Interrupt cancel;
  RetryOptions opts;
  const auto start = clock.now();
  opts.deadline = start + 50ms;
  int calls = 0;
  auto outcome = retry(
      *b, [&](Observation&) { ++calls; return false; }, nullptr, cancel, opts, clock);
  const auto end = clock.now();
  EXPECT_EQ(outcome, RetryOutcome::kDeadline);
  EXPECT_EQ(calls, 1);
  // Slept until the deadline (not less), and nowhere near the 10 s wait.
  EXPECT_GE(end, *opts.deadline);
  EXPECT_LT(end - start, 5s);
}

TEST(Retry, OutcomeNames) {
  EXPECT_STREQ(redisgo::backoff::to_string(RetryOutcome::kSucceeded), "succeeded");
  EXPECT_STREQ(redisgo::backoff::to_string(RetryOutcome::kGaveUp), "gave up");
  EXPECT_STREQ(redisgo::backoff::to_string(RetryOutcome::kCancelled), "cancelled");
  EXPECT_STREQ(redisgo::backoff::to_string(RetryOutcome::kDeadline), "deadline");
}

// ---------------------------------------------------------------- Interrupt + poll

TEST(Interrupt, WakesPollOnFdFromAnotherThread) {
  Interrupt interrupt;
  std::atomic<int> rc{-2};
  std::atomic<short> revents{0};
  std::atomic<bool> polling{false};
  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point woke;
  std::thread poller([&] {
    pollfd p{interrupt.fd(), POLLIN, 0};
    polling = true;
    rc = ::poll(&p, 1, 10000);
    woke = std::chrono::steady_clock::now();
    revents = p.revents;
  });
  for (int i = 0; i < 5000 && !polling.load(); ++i) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);  // let it block in poll(); a trigger before is fine too
  interrupt.trigger();
  poller.join();
  EXPECT_EQ(rc.load(), 1);
  EXPECT_TRUE(revents.load() & POLLIN);
  EXPECT_LT(woke - start, 2s);  // woken, not timed out after 10 s
  // Stays readable until cleared, so a second poller does not miss it.
  pollfd again{interrupt.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&again, 1, 0), 1);
  interrupt.clear();
  again.revents = 0;
  EXPECT_EQ(::poll(&again, 1, 0), 0);
}

}  // namespace backoff_test
