// The renewal thread against a scripted fake backend and a FakeClock: when the local
// deadline moves, when the lease is reported lost, and that stop() is prompt.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <atomic>

#include "lock/renewer.h"
#include "support/lease_stub.h"
#include "support/redis_server.h"
#include "util/clock.h"
#include "util/interrupt.h"

namespace lock_renewer_test {

using namespace std::chrono_literals;
using redisgo::Clock;
using redisgo::FakeClock;
using redisgo::Interrupt;
using redisgo::lock::Acquisition;
using redisgo::lock::LeaseBackend;
using redisgo::lock::NodeView;
using redisgo::lock::Renewal;
using redisgo::lock::Renewer;
using redisgo::testing::wait_until;

namespace {

// How long before its answer the fake says a confirmed round was sent.
constexpr auto kSentBefore = 7ms;

// What the fake does on one renew() call.
enum class Step { kConfirm, kUnconfirmed, kLost, kThrow };

struct Script {
  std::mutex mu;
  std::deque<Step> steps;   // consumed in order; when empty, `then` repeats
  Step then = Step::kConfirm;
  int calls = 0;
};

class FakeBackend final : public redisgo::testing::LeaseStub {
 public:
  FakeBackend(Script& script, const FakeClock& clock, Clock::duration ttl) : s_(script), clock_(clock), ttl_(ttl) {}
  Acquisition acquire() override { return {}; }
  Renewal renew() override {
    Step step;
    {
      std::lock_guard lk(s_.mu);
      ++s_.calls;
      if (s_.steps.empty()) {
        step = s_.then;
      } else {
        step = s_.steps.front();
        s_.steps.pop_front();
      }
    }
    Renewal r;
    switch (step) {
      case Step::kConfirm:
        r.confirmed = true;
        r.votes = 1;
        r.valid_until = clock_.now() + ttl_;
        r.sent = clock_.now() - kSentBefore;  // as a backend measures it: the round's send
        break;
      case Step::kUnconfirmed:
        r.errors.push_back({"127.0.0.1:1", redisgo::redis::Fault::kTimeout, "redis 127.0.0.1:1: no reply within 5 ms"});
        break;
      case Step::kLost:
        r.lost = true;
        break;
      case Step::kThrow:
        throw std::runtime_error("boom");
    }
    return r;
  }
  redisgo::lock::Release release() noexcept override { return {}; }
  int node_count() const override { return 1; }

 private:
  Script& s_;
  const FakeClock& clock_;
  Clock::duration ttl_;
};

/// A renewer's backend factory that hands out one FakeBackend.
Renewer::BackendFactory fake(Script& script, const FakeClock& clock, Clock::duration ttl) {
  return [&script, &clock, ttl](int) { return std::make_unique<FakeBackend>(script, clock, ttl); };
}

int calls(Script& s) {
  std::lock_guard lk(s.mu);
  return s.calls;
}

}  // namespace

TEST(Renewer, ConfirmedRenewalsMoveTheDeadline) {
  FakeClock clock;
  Script script;
  Interrupt wake;
  const auto initial = clock.now() + 100ms;
  Renewer r(fake(script, clock, 1s), 2ms, clock.now(), initial, wake, clock);
  ASSERT_TRUE(wait_until([&] { return r.renewals() >= 3; }, 5s));
  EXPECT_EQ(r.valid_until(), clock.now() + 1s);  // FakeClock did not move: now + ttl
  EXPECT_TRUE(wake.triggered());
  EXPECT_FALSE(r.lost());
}

// The deadline comes with when it was decided: the acquisition's start, then each moving
// renewal's send (the keeper weighs a new deadline by it: process/deadline_rule.h).
TEST(Renewer, TheDeadlineComesWithWhenItsRenewalWasSent) {
  FakeClock clock;
  Script script;
  script.then = Step::kUnconfirmed;
  Interrupt wake;
  const auto started = clock.now() - 20ms;
  Renewer r(fake(script, clock, 1s), 2ms, started, clock.now() + 100ms, wake, clock);
  ASSERT_TRUE(wait_until([&] { return calls(script) >= 2; }, 5s));
  EXPECT_EQ(r.renewed_at(), started);  // unconfirmed rounds decide nothing
  {
    std::lock_guard lk(script.mu);
    script.then = Step::kConfirm;
  }
  ASSERT_TRUE(wait_until([&] { return r.renewals() >= 1; }, 5s));
  EXPECT_EQ(r.valid_until(), clock.now() + 1s);
  EXPECT_EQ(r.renewed_at(), clock.now() - kSentBefore);
}

TEST(Renewer, LostIsReportedOnceAndRenewingStops) {
  FakeClock clock;
  Script script;
  script.steps = {Step::kConfirm, Step::kLost};
  Interrupt wake;
  Renewer r(fake(script, clock, 1s), 2ms, clock.now(), clock.now() + 1s, wake, clock);
  ASSERT_TRUE(wait_until([&] { return r.lost(); }, 5s));
  // The renewer marks the lease lost, then wakes the main loop: a moment apart.
  EXPECT_TRUE(wait_until([&] { return wake.triggered(); }, 5s));
  EXPECT_NE(r.lost_reason().find("no longer ours"), std::string::npos) << r.lost_reason();
  EXPECT_FALSE(r.lost_by_deadline());
  EXPECT_EQ(r.renewals(), 1u);
  // The thread has ended: no further renew() calls, however long we look.
  EXPECT_FALSE(wait_until([&] { return calls(script) > 2; }, 50ms));
}

TEST(Renewer, UnconfirmedRetriesFasterThenDeadlinePasses) {
  FakeClock clock;
  Script script;
  script.then = Step::kUnconfirmed;
  Interrupt wake;
  const auto initial = clock.now() + 500ms;
  // After a failed round it retries, bounded below (no storm) and by the tick.
  Renewer r(fake(script, clock, 1s), 40ms, clock.now(), initial, wake, clock);
  ASSERT_TRUE(wait_until([&] { return calls(script) >= 4; }, 5s));
  EXPECT_FALSE(r.lost());             // the deadline has not passed on the FakeClock
  EXPECT_EQ(r.valid_until(), initial);  // unconfirmed rounds never move it
  EXPECT_FALSE(wake.triggered());
  clock.advance(500ms);
  ASSERT_TRUE(wait_until([&] { return r.lost(); }, 5s));
  // The renewer marks the lease lost, then wakes the main loop: a moment apart.
  EXPECT_TRUE(wait_until([&] { return wake.triggered(); }, 5s));
  EXPECT_NE(r.lost_reason().find("deadline passed"), std::string::npos) << r.lost_reason();
  EXPECT_TRUE(r.lost_by_deadline());
}

TEST(Renewer, ThrowingBackendCountsAsUnconfirmedAndRecovers) {
  FakeClock clock;
  Script script;
  script.steps = {Step::kThrow, Step::kThrow};
  script.then = Step::kConfirm;
  Interrupt wake;
  Renewer r(fake(script, clock, 2s), 2ms, clock.now(), clock.now() + 1s, wake, clock);
  ASSERT_TRUE(wait_until([&] { return r.renewals() >= 1; }, 5s));
  EXPECT_FALSE(r.lost());
  EXPECT_EQ(r.valid_until(), clock.now() + 2s);
}

TEST(Renewer, DeadlineCheckedBeforeRenewingAfterAPause) {
  FakeClock clock;
  Script script;
  Interrupt wake;
  const auto initial = clock.now() + 100ms;
  clock.advance(200ms);  // as if the process was stopped past its deadline
  Renewer r(fake(script, clock, 1s), 2ms, clock.now(), initial, wake, clock);
  ASSERT_TRUE(wait_until([&] { return r.lost(); }, 5s));
  EXPECT_EQ(calls(script), 0);  // it did not try to renew a lease whose deadline passed
  EXPECT_EQ(r.renewals(), 0u);
}

TEST(Renewer, StopIsPromptWithALongInterval) {
  FakeClock clock;
  Script script;
  Interrupt wake;
  auto r = std::make_unique<Renewer>(fake(script, clock, 1s), 1h, clock.now(), clock.now() + 1h, wake,
                                     clock);
  const auto t0 = std::chrono::steady_clock::now();
  r->stop();
  r->stop();  // idempotent
  r.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);  // not the 1 h tick
  EXPECT_EQ(calls(script), 0);
}

// Start::kLater (a leader forks its child first): nothing goes out before start(); a round
// already due when it starts (a cron after the acquisition's send) goes at once.
TEST(Renewer, ALaterStartRenewsNothingUntilStartedThenWhatIsDueAtOnce) {
  FakeClock clock;
  Script script;
  Interrupt wake;
  const auto acquired = clock.now();
  Renewer r(fake(script, clock, 1s), 100ms, acquired, acquired + 1s, wake, clock, nullptr, Renewer::Start::kLater);
  clock.advance(150ms);  // the child's start took longer than the cron
  EXPECT_EQ(calls(script), 0);
  EXPECT_EQ(r.valid_until(), acquired + 1s);  // the acquisition's deadline stands meanwhile
  r.start();
  r.start();  // idempotent
  ASSERT_TRUE(wait_until([&] { return r.renewals() >= 1; }, 5s));
  EXPECT_EQ(r.valid_until(), clock.now() + 1s);
}

// A leader that stops before its child started (a stop signal, a claim refused) never
// starts the thread, and a start after the stop starts nothing.
TEST(Renewer, AStartAfterStopStartsNothing) {
  FakeClock clock;
  Script script;
  Interrupt wake;
  Renewer r(fake(script, clock, 1s), 1ms, clock.now(), clock.now() + 1s, wake, clock, nullptr, Renewer::Start::kLater);
  r.stop();
  r.start();
  clock.advance(10ms);
  r.stop();  // joins whatever start() could have started
  EXPECT_EQ(calls(script), 0);
  EXPECT_FALSE(r.lost());
}

TEST(Renewer, CadenceIsStartToStartNotStretchedByTheRoundTrip) {
  // Round 8, #11: renewals went out every cron + round trip; with a 600 ms round trip a
  // valid configuration lost every lease.
  struct Slow final : redisgo::testing::LeaseStub {
    std::atomic<int> calls{0};
    Acquisition acquire() override { return {}; }
    Renewal renew() override {
      ++calls;
      std::this_thread::sleep_for(60ms);
      Renewal r;
      r.confirmed = true;
      r.valid_until = redisgo::SystemClock::instance().now() + 10s;
      return r;
    }
    redisgo::lock::Release release() noexcept override { return {}; }
    int node_count() const override { return 1; }
  };
  Slow* slow = nullptr;
  Interrupt wake;
  const auto& clock = redisgo::SystemClock::instance();
  {
    Renewer r([&](int) {
      auto b = std::make_unique<Slow>();
      slow = b.get();
      return b;
    }, 100ms, clock.now(), clock.now() + 10s, wake);
    std::this_thread::sleep_for(1050ms);  // the window measured
    r.stop();
    // Start to start every 100 ms: ~10 rounds; stretched by the round trip: ~6.
    EXPECT_GE(slow->calls.load(), 9);
  }
}

// The machine the renewal thread drives (lock/renewal_machine.h), stepped by hand on made-up
// instants: no thread, no clock.
namespace {

using redisgo::lock::NodeError;
using redisgo::lock::RenewalMachine;
using Kind = RenewalMachine::Step::Kind;

const Clock::time_point kT0 = Clock::time_point(std::chrono::seconds(1000));

Renewal confirmed(Clock::time_point valid_until, Clock::time_point sent) {
  Renewal r;
  r.confirmed = true;
  r.votes = 1;
  r.valid_until = valid_until;
  r.sent = sent;
  return r;
}

Renewal unconfirmed() {
  Renewal r;
  r.errors.push_back({"n1", redisgo::redis::Fault::kTimeout, "redis n1: no reply within 5 ms"});
  return r;
}

}  // namespace

TEST(RenewerMachine, RoundsGoStartToStartAndOnlyAConfirmedOneMovesTheDeadline) {
  RenewalMachine m(100ms, kT0, kT0 + 1s);
  EXPECT_EQ(m.start().kind, Kind::kWait);
  EXPECT_EQ(m.start().until, kT0 + 100ms);
  auto step = m.due(kT0 + 100ms);
  ASSERT_EQ(step.kind, Kind::kRenew);
  EXPECT_EQ(m.rounds(), 1u);
  // Answered 60 ms later: the next round goes 100 ms after this one's send, not its answer.
  step = m.renewed(confirmed(kT0 + 1100ms, kT0 + 95ms), kT0 + 160ms);
  EXPECT_EQ(step.kind, Kind::kWait);
  EXPECT_EQ(step.until, kT0 + 200ms);
  EXPECT_TRUE(step.wake);
  EXPECT_EQ(m.valid_until(), kT0 + 1100ms);
  EXPECT_EQ(m.renewed_at(), kT0 + 95ms);  // the round's own send, as the backend measured it
  EXPECT_EQ(m.renewals(), 1u);
  // A slower round confirmed after a faster one never moves the deadline back.
  ASSERT_EQ(m.due(kT0 + 200ms).kind, Kind::kRenew);
  step = m.renewed(confirmed(kT0 + 1050ms, kT0 + 200ms), kT0 + 210ms);
  EXPECT_EQ(m.valid_until(), kT0 + 1100ms);
  EXPECT_EQ(m.renewed_at(), kT0 + 95ms);
  EXPECT_EQ(m.renewals(), 2u);
  // Unconfirmed: retried a quarter interval on (at least 100 ms), the deadline untouched.
  ASSERT_EQ(m.due(kT0 + 300ms).kind, Kind::kRenew);
  step = m.renewed(unconfirmed(), kT0 + 320ms);
  EXPECT_EQ(step.kind, Kind::kWait);
  EXPECT_EQ(step.until, kT0 + 420ms);
  EXPECT_FALSE(step.wake);
  EXPECT_EQ(m.valid_until(), kT0 + 1100ms);
}

TEST(RenewerMachine, UnconfirmedRoundsRetryUpToTheDeadlineThenTheLeaseIsLost) {
  RenewalMachine m(1s, kT0, kT0 + 1300ms);
  ASSERT_EQ(m.due(kT0 + 1s).kind, Kind::kRenew);
  auto step = m.renewed(unconfirmed(), kT0 + 1250ms);
  EXPECT_EQ(step.kind, Kind::kWait);
  EXPECT_EQ(step.until, kT0 + 1300ms);  // the retry would come after the deadline: woken at it
  step = m.due(kT0 + 1300ms);
  EXPECT_EQ(step.kind, Kind::kLost);
  EXPECT_TRUE(step.wake);
  EXPECT_TRUE(m.lost());
  EXPECT_EQ(m.lost_reason(), "lease deadline passed without a confirmed renewal (redis n1: no reply within 5 ms)");
  EXPECT_TRUE(m.lost_by_deadline());
  EXPECT_EQ(m.rounds(), 1u);  // no round went out once the deadline had passed
}

// Found by the simulator (seeds 344, 1027, 7382): a round sent before a SIGSTOP and confirmed
// after the deadline had passed moved the deadline forward again, and the holder went on beside
// the one granted the key while it was stopped.
TEST(RenewerMachine, ARoundConfirmedAfterTheDeadlinePassedRevivesNothing) {
  RenewalMachine m(1s, kT0, kT0 + 1300ms);
  ASSERT_EQ(m.due(kT0 + 1s).kind, Kind::kRenew);
  // Sent at 1 s, answered while the process was stopped, read at 2 s: past 1.3 s.
  const auto step = m.renewed(confirmed(kT0 + 2300ms, kT0 + 1s), kT0 + 2s);
  EXPECT_EQ(step.kind, Kind::kLost);
  EXPECT_TRUE(step.wake);
  EXPECT_EQ(m.valid_until(), kT0 + 1300ms) << "the deadline never moves once it has passed";
  EXPECT_TRUE(m.lost_by_deadline());
  EXPECT_EQ(m.lost_reason(), "lease deadline passed before the renewal was confirmed (700 ms late)");
  EXPECT_EQ(m.renewals(), 0u);
  EXPECT_EQ(m.due(kT0 + 3s).kind, Kind::kLost);
}

TEST(RenewerMachine, ARoundThatFindsTheKeyGoneLosesTheLeaseAtOnce) {
  RenewalMachine m(100ms, kT0, kT0 + 1s);
  ASSERT_EQ(m.due(kT0 + 100ms).kind, Kind::kRenew);
  Renewal r;
  r.lost = true;
  r.votes = 0;
  const auto step = m.renewed(r, kT0 + 110ms);
  EXPECT_EQ(step.kind, Kind::kLost);
  EXPECT_TRUE(step.wake);
  EXPECT_NE(m.lost_reason().find("no longer ours"), std::string::npos) << m.lost_reason();
  EXPECT_FALSE(m.lost_by_deadline()) << "Redis said so: the key may be another's while the child ran";
  EXPECT_EQ(m.due(kT0 + 200ms).kind, Kind::kLost);  // nothing more goes out
  EXPECT_EQ(m.rounds(), 1u);
}

TEST(RenewerMachine, RoundsRefusedByAQuorumNameTheRefusalAndTheDeadlineSaysSo) {
  RenewalMachine m(1s, kT0, kT0 + 1500ms);
  ASSERT_EQ(m.due(kT0 + 1s).kind, Kind::kRenew);
  Renewal r;
  r.refused_quorum = true;
  r.refused = 1;
  r.errors.push_back({"n1", redisgo::redis::Fault::kAuth, "redis n1: NOPERM this user has no permissions"});
  m.renewed(r, kT0 + 1010ms);
  EXPECT_TRUE(m.refused());
  EXPECT_EQ(m.refusal().fault, redisgo::redis::Fault::kAuth);
  EXPECT_EQ(m.due(kT0 + 1500ms).kind, Kind::kLost);
  EXPECT_NE(m.lost_reason().find("Redis refused the renewal on 1 node(s)"), std::string::npos) << m.lost_reason();
  // A confirmed round clears refused(), and keeps the refusal last named.
  RenewalMachine k(1s, kT0, kT0 + 5s);
  ASSERT_EQ(k.due(kT0 + 1s).kind, Kind::kRenew);
  k.renewed(r, kT0 + 1010ms);
  ASSERT_EQ(k.due(kT0 + 1260ms).kind, Kind::kRenew);
  k.renewed(confirmed(kT0 + 6s, kT0 + 1260ms), kT0 + 1270ms);
  EXPECT_FALSE(k.refused());
  EXPECT_EQ(k.refusal().node, "n1");
}

TEST(RenewerMachine, TheDeadlineIsCheckedBeforeARoundAfterAPause) {
  RenewalMachine m(100ms, kT0, kT0 + 1s);
  const auto step = m.due(kT0 + 1200ms);  // woken long after its time: stopped, suspended
  EXPECT_EQ(step.kind, Kind::kLost);
  EXPECT_EQ(m.rounds(), 0u);
}

}  // namespace lock_renewer_test
