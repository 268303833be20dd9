#include <gtest/gtest.h>

#include "daemon/rules.h"
#include "util/exit_status.h"

namespace daemon_rules_test {

using namespace std::chrono_literals;
using namespace redisgo::daemon;
using redisgo::Clock;
using redisgo::kExitNoPerm;
using redisgo::kExitTempFail;
using redisgo::kExitTimeout;
using redisgo::kExitUnavailable;
using redisgo::config::Mode;
using redisgo::config::Restart;

namespace {

MissContext miss(Mode mode, int attempts) {
  MissContext c;
  c.mode = mode;
  c.attempts = attempts;
  c.backoff = 30ms;
  return c;
}

}  // namespace

TEST(AfterMiss, NoWaitTriesOnce) {
  auto c = miss(Mode::kOneshot, 1);
  c.wait_flag = false;
  EXPECT_TRUE(after_miss(c).give_up);
}

TEST(AfterMiss, RetriesCountBoundsOneshotWithoutMonitor) {
  auto c = miss(Mode::kOneshot, 3);
  c.monitor_try_all = false;
  c.retries_count = 4;
  EXPECT_FALSE(after_miss(c).give_up);
  c.attempts = 4;
  EXPECT_TRUE(after_miss(c).give_up);
  c.monitor_try_all = true;  // contend forever
  c.attempts = 1000;
  EXPECT_FALSE(after_miss(c).give_up);
}

TEST(AfterMiss, SuperviseNeverGivesUp) {
  auto c = miss(Mode::kSupervise, 1000);
  c.wait_flag = false;
  c.monitor_try_all = false;
  c.backoff = std::nullopt;  // "stop" strategy
  c.backoff_max = 700ms;
  auto next = after_miss(c);
  EXPECT_FALSE(next.give_up);
  EXPECT_EQ(next.wait, 700ms);
}

TEST(AfterMiss, TheRestartGuardsWaitIsWaitedOutWhateverCountsTheAttempts) {
  for (const bool subscribed : {true, false}) {
    for (const bool monitor_try_all : {true, false}) {
      auto c = miss(Mode::kOneshot, 1);
      c.subscribed = subscribed;
      c.monitor_try_all = monitor_try_all;
      c.guard_ms = 2500;
      auto next = after_miss(c);
      EXPECT_FALSE(next.give_up);
      EXPECT_EQ(next.wait, 2501ms) << subscribed << monitor_try_all;
    }
  }
  // A holder known comes first: its TTL paces the wait as before.
  auto c = miss(Mode::kSupervise, 1);
  c.subscribed = true;
  c.holder_ttl_ms = 900;
  c.guard_ms = 2500;
  EXPECT_EQ(after_miss(c).wait, 901ms);
  // --no-wait still tries once.
  c = miss(Mode::kOneshot, 1);
  c.wait_flag = false;
  c.guard_ms = 2500;
  EXPECT_TRUE(after_miss(c).give_up);
}

TEST(AfterMiss, StopStrategyGivesUpInOneshot) {
  auto c = miss(Mode::kOneshot, 1);
  c.backoff = std::nullopt;
  EXPECT_TRUE(after_miss(c).give_up);
}

TEST(AfterMiss, SubscribedWaiterSleepsUntilTheLeaseCouldExpire) {
  auto c = miss(Mode::kSupervise, 1);
  c.holder_ttl_ms = 4200;
  c.subscribed = true;
  EXPECT_EQ(after_miss(c).wait, 4201ms);
  c.subscribed = false;  // no release message will come: keep polling at the backoff
  EXPECT_EQ(after_miss(c).wait, 30ms);
  c.holder_ttl_ms = 5;  // but never past the holder's expiry
  EXPECT_EQ(after_miss(c).wait, 6ms);
  c.holder_ttl_ms = -1;  // unknown (errors): backoff
  c.subscribed = true;
  EXPECT_EQ(after_miss(c).wait, 30ms);
}

// In line behind others, a waiter sleeps past the holder's TTL by a window per waiter ahead
// (the fallback for heads that are dead or frozen too); a turn it met, it outwaits only:
// when the turn ends unused, the next head must be woken by someone.
TEST(AfterMiss, AWaiterInLineOutwaitsATurnOnlyNotAWindowPerWaiterAhead) {
  auto c = miss(Mode::kSupervise, 1);
  c.subscribed = true;
  c.position = 5;
  c.turn_window = 1000ms;
  c.holder_ttl_ms = 4200;
  EXPECT_EQ(after_miss(c).wait, 4201ms + 4 * 1000ms);
  c.holder_ttl_ms = 800;
  c.turn = true;
  EXPECT_EQ(after_miss(c).wait, 801ms);
}

TEST(AfterExit, OneshotExitCodes) {
  ExitContext c;
  c.mode = Mode::kOneshot;
  c.child_code = 3;
  EXPECT_EQ(after_exit(c).kind, AfterExit::Kind::kExit);
  EXPECT_EQ(after_exit(c).exit_code, 3);
  EXPECT_FALSE(after_exit(c).lease_ended);
  c.cause = StopCause::kLeaseLost;
  EXPECT_EQ(after_exit(c).exit_code, kExitTempFail);
  EXPECT_TRUE(after_exit(c).lease_ended) << "the last line says the lease ended the run";
  c.cause = StopCause::kDeadline;
  EXPECT_EQ(after_exit(c).exit_code, kExitTempFail);
  EXPECT_TRUE(after_exit(c).lease_ended);
  c.cause = StopCause::kTimeout;
  EXPECT_EQ(after_exit(c).exit_code, kExitTimeout);
  EXPECT_FALSE(after_exit(c).lease_ended);
  c.cause = StopCause::kShutdown;
  c.child_code = 143;
  EXPECT_EQ(after_exit(c).exit_code, 143);
  // Lost because Redis refused the renewal (ACL): our credentials' rights, loud (77).
  c.cause = StopCause::kLeaseLost;
  c.refused = true;
  EXPECT_EQ(after_exit(c).exit_code, kExitNoPerm);
  EXPECT_FALSE(after_exit(c).lease_ended) << "refused renewals have their own last line";
}

TEST(AfterExit, SuperviseRestartPolicy) {
  ExitContext c;
  c.mode = Mode::kSupervise;
  c.restart_delay = 1500ms;
  struct Row {
    Restart restart;
    int code;
    AfterExit::Kind expected;
  };
  for (const Row& row : {Row{Restart::kAlways, 0, AfterExit::Kind::kRestart},
                         Row{Restart::kAlways, 1, AfterExit::Kind::kRestart},
                         Row{Restart::kOnFailure, 0, AfterExit::Kind::kRecontend},
                         Row{Restart::kOnFailure, 2, AfterExit::Kind::kRestart},
                         Row{Restart::kOnFailure, 137, AfterExit::Kind::kRestart},
                         Row{Restart::kNever, 2, AfterExit::Kind::kRecontend}}) {
    c.restart = row.restart;
    c.child_code = row.code;
    auto next = after_exit(c);
    EXPECT_EQ(next.kind, row.expected) << redisgo::config::to_string(row.restart) << " code " << row.code;
    EXPECT_EQ(next.delay, 1500ms);
  }
}

TEST(AfterExit, SuperviseShutdownExitsZeroAndLostLeaseRecontends) {
  ExitContext c;
  c.mode = Mode::kSupervise;
  c.restart = Restart::kAlways;
  c.child_code = 143;
  c.cause = StopCause::kShutdown;
  EXPECT_EQ(after_exit(c).kind, AfterExit::Kind::kExit);
  EXPECT_EQ(after_exit(c).exit_code, 0);
  c.cause = StopCause::kLeaseLost;
  EXPECT_EQ(after_exit(c).kind, AfterExit::Kind::kRecontend);
}

TEST(StopSchedule, ChildIsKilledBeforeTheDeadline) {
  redisgo::FakeClock clock;
  auto deadline = clock.now() + 4950ms;
  auto s = stop_schedule(deadline, 2000ms, 5000ms);
  EXPECT_EQ(kill_margin(5000ms), 100ms);
  EXPECT_EQ(s.kill_at, deadline - 100ms);
  EXPECT_EQ(s.term_at, deadline - 2100ms);
  EXPECT_LT(s.kill_at, deadline);
  EXPECT_EQ(kill_margin(60ms), 5ms);
  EXPECT_EQ(kill_margin(1000ms), 50ms);
}

TEST(StopSchedule, NoChildStartsPastTheStopTime) {
  redisgo::FakeClock clock;
  auto deadline = clock.now() + 3000ms;
  EXPECT_TRUE(can_start_child(clock.now(), deadline, 1000ms, 5000ms));
  clock.advance(1800ms);
  EXPECT_TRUE(can_start_child(clock.now(), deadline, 1000ms, 5000ms));
  clock.advance(100ms);  // 1100 ms before the deadline: within grace + margin
  EXPECT_FALSE(can_start_child(clock.now(), deadline, 1000ms, 5000ms));
}

TEST(AfterMiss, CountedRetriesAreSpacedByTheBackoff) {
  auto c = miss(Mode::kOneshot, 1);
  c.monitor_try_all = false;
  c.subscribed = true;
  c.holder_ttl_ms = 60'000;
  EXPECT_EQ(after_miss(c).wait, 30ms);
}

TEST(GiveUpCode, BusyBeatsEverythingThenAuthThenUnreachable) {
  EXPECT_EQ(give_up_code(1, true, 0, 2), kExitTempFail);   // someone holds it: busy
  EXPECT_EQ(give_up_code(0, true, 1, 2), kExitNoPerm);     // credentials refused
  EXPECT_EQ(give_up_code(0, false, 1, 2), kExitUnavailable);  // no quorum answered
  EXPECT_EQ(give_up_code(0, false, 3, 2), kExitTempFail);  // split vote, too late
}

TEST(RestartTracker, GrowingDelayThenStepDown) {
  redisgo::FakeClock clock;
  RestartTracker t(4, 60s, 0ms);
  t.on_start(clock.now());
  EXPECT_EQ(t.on_exit(clock.now()), 0ms);  // restart_delay for the first
  EXPECT_EQ(t.on_exit(clock.now()), 200ms);
  EXPECT_EQ(t.on_exit(clock.now()), 400ms);
  EXPECT_EQ(t.on_exit(clock.now()), 800ms);
  EXPECT_EQ(t.on_exit(clock.now()), std::nullopt);  // the 5th exit within the window
  EXPECT_EQ(t.recent(clock.now()), 5);
}

TEST(RestartTracker, ExitsOutsideTheWindowAreForgottenAndAStableRunResetsTheDelay) {
  redisgo::FakeClock clock;
  RestartTracker t(2, 10s, 1s);
  t.on_start(clock.now());
  EXPECT_EQ(t.on_exit(clock.now()), 1s);
  clock.advance(11s);
  EXPECT_EQ(t.on_exit(clock.now()), 2s);  // out of the window, but the streak goes on
  t.on_start(clock.now());
  clock.advance(31s);  // ran stably
  EXPECT_EQ(t.on_exit(clock.now()), 1s);
  EXPECT_EQ(t.on_exit(clock.now()), 2s);
  EXPECT_EQ(t.on_exit(clock.now()), std::nullopt);  // 3 exits within 10 s
}

TEST(RestartTracker, ATinyWindowStillGrowsTheDelay) {
  // Round 8, #5: restart_window = "1ms" never counted two exits, so the delay never grew
  // and a crash loop forked ~1,800 times/s.
  redisgo::FakeClock clock;
  RestartTracker t(5, 1ms, 0ms);
  std::vector<Millis> delays;
  for (int i = 0; i < 6; ++i) {
    t.on_start(clock.now());
    clock.advance(1ms);
    delays.push_back(*t.on_exit(clock.now()));
    clock.advance(delays.back());
  }
  EXPECT_EQ(delays, (std::vector<Millis>{0ms, 200ms, 400ms, 800ms, 1600ms, 3200ms}));
}

TEST(RestartTracker, StepDownHoldsGrowUntilAStableRun) {
  // Round 8, #5 and #8: step_down_hold = "0s" re-took the lease at fork speed.
  redisgo::FakeClock clock;
  RestartTracker t(0, 1min, 0ms);
  EXPECT_EQ(t.on_step_down(0ms, 2s), 2s);  // at least the TTL
  EXPECT_EQ(t.on_step_down(0ms, 2s), 4s);
  EXPECT_EQ(t.on_step_down(0ms, 2s), 8s);
  for (int i = 0; i < 30; ++i) t.on_step_down(0ms, 2s);
  EXPECT_EQ(t.on_step_down(0ms, 2s), RestartTracker::kHoldMax);
  t.on_start(clock.now());
  clock.advance(RestartTracker::kStableRun);
  t.on_exit(clock.now());
  EXPECT_EQ(t.on_step_down(10s, 2s), 10s);  // back to the configured hold
}

TEST(RestartTracker, DelayIsCappedAndALongBaseIsKept) {
  redisgo::FakeClock clock;
  RestartTracker t(100, 1h, 0ms);
  Millis last{0};
  for (int i = 0; i < 20; ++i) last = *t.on_exit(clock.now());
  EXPECT_EQ(last, RestartTracker::kRestartDelayMax);
  RestartTracker slow(100, 1h, 2min);
  EXPECT_EQ(slow.on_exit(clock.now()), 2min);
  EXPECT_EQ(slow.on_exit(clock.now()), 2min);  // never below restart_delay
}

TEST(AfterExit, StepDownStopRecontends) {
  ExitContext c{Mode::kSupervise, Restart::kAlways, 1000ms, 143, StopCause::kStepDown};
  EXPECT_EQ(after_exit(c).kind, AfterExit::Kind::kRecontend);
}

// Renewals refused: the probes of the right go 5 s apart at first, twice as far each time, and
// never further apart than a minute (recovery within a minute of the grant) nor closer than 5 s
// (no storm); the note outlives three of them.
TEST(RefusedProbe, GapsGrowFromFiveSecondsToAMinute) {
  EXPECT_EQ(refused_probe_gap(1), 5s);
  EXPECT_EQ(refused_probe_gap(2), 10s);
  EXPECT_EQ(refused_probe_gap(3), 20s);
  EXPECT_EQ(refused_probe_gap(4), 40s);
  EXPECT_EQ(refused_probe_gap(5), 60s);
  EXPECT_EQ(refused_probe_gap(1000), 60s);
  EXPECT_EQ(refused_probe_gap(0), 5s);
  EXPECT_EQ(refused_note_ttl(refused_probe_gap(1000)), 180s);
}

// The one rule after the child's end, with the step-down causes and the crash-loop count that
// used to be the leader machine's own overrides of it.
TEST(AfterExit, SuperviseStepDownsAndTheCrashLoopAreOneRule) {
  ExitContext c{Mode::kSupervise, Restart::kAlways, 1000ms, 143, StopCause::kStepDown};
  c.step_down = StepDown::kHandover;
  c.step_down_reason = "handover requested";
  auto next = after_exit(c);
  EXPECT_EQ(next.kind, AfterExit::Kind::kRecontend);
  EXPECT_EQ(next.cause, StepDown::kHandover);
  EXPECT_EQ(next.step_down, "handover requested");
  EXPECT_EQ(next.delay, 0ms);
  // A lease lost to refused renewals: step down and hold back until the right is granted.
  c.cause = StopCause::kDeadline;
  c.refused = true;
  next = after_exit(c);
  EXPECT_EQ(next.cause, StepDown::kRenewalRefused);
  EXPECT_EQ(next.step_down, "Redis refused the renewals");
  c.refused = false;
  EXPECT_EQ(after_exit(c).cause, StepDown::kNone);
  EXPECT_EQ(after_exit(c).delay, 1000ms);
  // A stop asked for while the child ended by itself: the run ends (0).
  c.cause = StopCause::kNone;
  c.stop_requested = true;
  EXPECT_EQ(after_exit(c).kind, AfterExit::Kind::kExit);
  EXPECT_EQ(after_exit(c).exit_code, 0);
  // A restart never goes on under a lost lease.
  c.stop_requested = false;
  c.lease_lost = true;
  EXPECT_EQ(after_exit(c).kind, AfterExit::Kind::kRecontend);
  // A job done and not restarted is paced at kRestartStep at least, and not counted.
  ExitContext done{Mode::kSupervise, Restart::kNever, 0ms, 0, StopCause::kNone};
  RestartTracker tracker(1, 60s, 0ms);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(after_exit(done, &tracker, Clock::time_point{} + i * 1ms).delay, RestartTracker::kRestartStep);
  }
  // A crash loop: counted, then a step-down at restart_limit.
  ExitContext crash{Mode::kSupervise, Restart::kOnFailure, 0ms, 1, StopCause::kNone};
  crash.restart_limit = 1;
  crash.restart_window = 60s;
  EXPECT_EQ(after_exit(crash, &tracker).kind, AfterExit::Kind::kRestart);
  next = after_exit(crash, &tracker);
  EXPECT_EQ(next.cause, StepDown::kRestartLimit);
  EXPECT_EQ(next.step_down, "the child exited 2 times within 1m (restart_limit 1)");
}

TEST(StepDown, NamesAndWhichAreAskedFor) {
  EXPECT_STREQ(to_string(StepDown::kRenewalRefused), "renewal_refused");
  EXPECT_STREQ(to_string(StepDown::kCannotStart), "cannot_start");
  EXPECT_TRUE(planned(StepDown::kHandover));
  EXPECT_TRUE(planned(StepDown::kPause));
  EXPECT_FALSE(planned(StepDown::kHealth));
  EXPECT_FALSE(planned(StepDown::kRestartLimit));
}

}  // namespace daemon_rules_test
