// The leader phase's rules (redisgo_task(1) "Modes", "Stepping down", signals, the lease
// deadline; docs/DESIGN.md invariants 2 and 7) as table tests of LeaderMachine: a fake
// clock, a lease view set by hand, no process.
#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

#include "daemon/leader.h"
#include "util/exit_status.h"

namespace daemon_leader_test {

using namespace std::chrono_literals;
using namespace redisgo::daemon;
using namespace redisgo::daemon::leader;
using redisgo::Clock;
using redisgo::FakeClock;
using redisgo::kExitTempFail;
using redisgo::kExitTimeout;
using redisgo::config::Mode;
using redisgo::config::Restart;

namespace {

constexpr auto kTtl = 5000ms;
constexpr auto kGrace = 2000ms;

LeaderSettings settings(Mode mode) {
  LeaderSettings s;
  s.mode = mode;
  s.restart = Restart::kOnFailure;
  s.restart_delay = 1000ms;
  s.restart_window = 60'000ms;
  s.restart_limit = 3;
  s.kill_grace = kGrace;
  s.ttl = kTtl;
  s.kill_signal = SIGTERM;
  s.control_channel = "k:control";
  return s;
}

/// A leader phase under test: its machine, a fake clock and the lease as the renewer
/// would report it.
struct Rig {
  explicit Rig(LeaderSettings s)
      : restarts(s.restart_limit, s.restart_window, s.restart_delay), machine(s, restarts) {
    lease.valid_until = clock.now() + kTtl;
  }
  Actions step(const Event& e) { return last = machine.step(e, clock.now(), lease); }
  /// Starts the phase and reports the child started.
  void run_child() {
    step(Start{});
    ASSERT_EQ(machine.state(), LeaderState::kStarting);
    step(Spawned{100, 99});
    ASSERT_EQ(machine.state(), LeaderState::kRunning);
  }
  void renew() { lease.valid_until = clock.now() + kTtl; }
  void advance(Clock::duration d) { clock.advance(d); }

  FakeClock clock;
  RestartTracker restarts;
  LeaderMachine machine;
  LeaseView lease;
  Actions last;
};

template <class T>
std::vector<T> all(const Actions& actions) {
  std::vector<T> out;
  for (const auto& a : actions) {
    if (const auto* t = std::get_if<T>(&a)) out.push_back(*t);
  }
  return out;
}

std::vector<int> signals(const Actions& actions) {
  std::vector<int> out;
  for (const auto& s : all<SignalGroup>(actions)) out.push_back(s.sig);
  return out;
}

bool said(const Actions& actions, const std::string& part, Level level) {
  for (const auto& s : all<Say>(actions)) {
    if (s.level == level && s.text.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST(Leader, TheChildStartsUnderTheLeaseWithTheKeeperHoldingItsKillDeadline) {
  Rig r(settings(Mode::kOneshot));
  r.step(Start{});
  const auto spawns = all<Spawn>(r.last);
  ASSERT_EQ(spawns.size(), 1u);
  EXPECT_EQ(spawns[0].kill_at, stop_schedule(r.lease.valid_until, kGrace, kTtl).kill_at);
  r.step(Spawned{100, 99});
  EXPECT_EQ(r.machine.state(), LeaderState::kRunning);
  EXPECT_EQ(all<ArmHealth>(r.last).size(), 1u);
  EXPECT_TRUE(r.machine.serving());
}

// A lease that is lost, or too short to stop a child in time, starts no child.
TEST(Leader, NoChildStartsWithoutEnoughLease) {
  struct Row {
    Mode mode;
    bool lost;
    Clock::duration left;
    LeaderOutcome want;
  };
  const LeaderOutcome exit75{AfterExit::Kind::kExit, kExitTempFail, 0ms, "", StepDown::kNone};
  const LeaderOutcome recontend{AfterExit::Kind::kRecontend, 0, 1000ms, "", StepDown::kNone};
  const std::vector<Row> rows = {
      {Mode::kOneshot, true, kTtl, exit75},
      {Mode::kOneshot, false, kGrace, exit75},  // kill_grace left: the stop could not finish in time
      {Mode::kSupervise, true, kTtl, recontend},
      {Mode::kSupervise, false, 1ms, recontend},
  };
  for (const auto& row : rows) {
    Rig r(settings(row.mode));
    r.lease.lost = row.lost;
    r.lease.lost_reason = "taken by another holder";
    r.lease.valid_until = r.clock.now() + row.left;
    r.step(Start{});
    EXPECT_TRUE(all<Spawn>(r.last).empty());
    EXPECT_TRUE(said(r.last, "not starting the child", Level::kWarn));
    ASSERT_TRUE(r.machine.done());
    EXPECT_EQ(*r.machine.outcome(), row.want);
  }
}

TEST(Leader, ACommandThatCannotStartEndsOneshotWithItsStatusAndStepsASuperviseLeaderDown) {
  struct Row {
    Mode mode;
    int code;
    LeaderOutcome want;
  };
  const std::vector<Row> rows = {
      {Mode::kOneshot, 127, {AfterExit::Kind::kExit, 127, 0ms, "", StepDown::kNone}},
      {Mode::kOneshot, 126, {AfterExit::Kind::kExit, 126, 0ms, "", StepDown::kNone}},
      {Mode::kOneshot, kExitTempFail, {AfterExit::Kind::kExit, kExitTempFail, 0ms, "", StepDown::kNone}},
      {Mode::kSupervise, 127, {AfterExit::Kind::kRecontend, 0, 0ms, "cannot start the command: nope", StepDown::kCannotStart}},
      {Mode::kSupervise, kExitTempFail, {AfterExit::Kind::kRecontend, 0, 1000ms, "", StepDown::kNone}},
  };
  for (const auto& row : rows) {
    Rig r(settings(row.mode));
    r.step(Start{});
    r.step(SpawnFailed{row.code, "nope"});
    ASSERT_TRUE(r.machine.done());
    EXPECT_EQ(*r.machine.outcome(), row.want) << row.code;
  }
}

// The deadline rule (invariant 2): without a confirmed renewal, kill_signal goes at
// deadline - kill_grace - margin, SIGKILL at deadline - margin, and a tree that survives
// SIGKILL 200 ms has its keeper killed from the daemon. The run then counts as lost (75).
TEST(Leader, WithoutRenewalsTheChildIsStoppedThenKilledBeforeTheDeadline) {
  Rig r(settings(Mode::kOneshot));
  r.run_child();
  const auto sched = stop_schedule(r.lease.valid_until, kGrace, kTtl);
  EXPECT_EQ(r.machine.next_wakeup(r.lease), sched.term_at);
  r.clock.advance(sched.term_at - r.clock.now() - 1ms);
  r.step(Tick{});
  EXPECT_TRUE(signals(r.last).empty());
  r.advance(1ms);
  r.step(Tick{});
  EXPECT_EQ(signals(r.last), (std::vector<int>{SIGTERM, SIGCONT}));
  EXPECT_TRUE(said(r.last, "no confirmed renewal", Level::kWarn));
  EXPECT_EQ(all<Status>(r.last).size(), 1u);
  EXPECT_EQ(r.machine.state(), LeaderState::kStopping);
  EXPECT_EQ(r.machine.next_wakeup(r.lease), sched.kill_at);
  r.clock.advance(sched.kill_at - r.clock.now());
  r.step(Tick{});
  EXPECT_EQ(signals(r.last), std::vector<int>{SIGKILL});
  EXPECT_EQ(r.machine.state(), LeaderState::kKilling);
  EXPECT_TRUE(r.machine.killing());
  r.advance(kForceKillAfter - 1ms);
  r.step(Tick{});
  EXPECT_TRUE(all<ForceKill>(r.last).empty());
  r.advance(1ms);
  r.step(Tick{});
  EXPECT_EQ(all<ForceKill>(r.last).size(), 1u);
  EXPECT_EQ(r.machine.state(), LeaderState::kForced);
  r.step(ChildExited{137});
  ASSERT_TRUE(r.machine.done());
  EXPECT_EQ(r.machine.outcome()->exit_code, kExitTempFail);
  EXPECT_EQ(r.machine.cause(), StopCause::kDeadline);
}

TEST(Leader, RenewalsKeepTheChildRunningAndMoveTheKeepersDeadline) {
  Rig r(settings(Mode::kSupervise));
  r.run_child();
  for (int i = 0; i < 20; ++i) {
    r.advance(1000ms);
    r.renew();
    r.step(Tick{});
    EXPECT_TRUE(signals(r.last).empty());
    const auto moved = all<MoveDeadline>(r.last);
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_EQ(moved[0].kill_at, stop_schedule(r.lease.valid_until, kGrace, kTtl).kill_at);
  }
  r.step(Tick{});
  EXPECT_TRUE(all<MoveDeadline>(r.last).empty());  // said once per move
  EXPECT_EQ(r.machine.state(), LeaderState::kRunning);
}

// After a pause (SIGSTOP, a VM freeze) the lease is checked before the child's exit is
// taken: a child that ended while the lease ran out did not run to its end under it.
TEST(Leader, AChildThatEndedDuringAPausePastTheDeadlineCountsAsLost) {
  Rig r(settings(Mode::kOneshot));
  r.run_child();
  r.advance(kTtl);
  r.step(Woke{});
  EXPECT_EQ(r.machine.cause(), StopCause::kDeadline);
  r.step(Signals{});
  r.step(ChildExited{0});
  EXPECT_EQ(r.machine.outcome()->exit_code, kExitTempFail);
}

TEST(Leader, ALostLeaseStopsTheChildWithinKillGrace) {
  for (Mode mode : {Mode::kOneshot, Mode::kSupervise}) {
    Rig r(settings(mode));
    r.run_child();
    r.lease.lost = true;
    r.lease.lost_reason = "the key holds another holder's value";
    r.step(Woke{});
    EXPECT_EQ(signals(r.last), (std::vector<int>{SIGTERM, SIGCONT}));
    EXPECT_TRUE(said(r.last, "another holder's value", Level::kWarn));
    EXPECT_EQ(r.machine.next_wakeup(r.lease), r.clock.now() + kGrace);
    r.step(ChildExited{143});
    ASSERT_TRUE(r.machine.done());
    if (mode == Mode::kOneshot) {
      EXPECT_EQ(r.machine.outcome()->exit_code, kExitTempFail);
    } else {
      EXPECT_EQ(r.machine.outcome()->kind, AfterExit::Kind::kRecontend);
    }
  }
}

// Lost because Redis refused the renewals (ACL): a oneshot exits 77, and a supervise leader
// steps down (the driver then holds back until the right is there) instead of taking the
// lease back every restart_delay (attack round: a lease and a killed child every 2 s, forever).
TEST(Leader, ALeaseLostToRefusedRenewalsIs77OrAStepDown) {
  for (Mode mode : {Mode::kOneshot, Mode::kSupervise}) {
    Rig r(settings(mode));
    r.run_child();
    r.lease.lost = true;
    r.lease.refused = true;
    r.lease.lost_reason = "Redis refused the renewal on 1 node(s)";
    r.step(Woke{});
    EXPECT_EQ(signals(r.last), (std::vector<int>{SIGTERM, SIGCONT}));
    r.step(ChildExited{143});
    ASSERT_TRUE(r.machine.done());
    if (mode == Mode::kOneshot) {
      EXPECT_EQ(r.machine.outcome()->exit_code, redisgo::kExitNoPerm);
    } else {
      EXPECT_EQ(r.machine.outcome()->kind, AfterExit::Kind::kRecontend);
      EXPECT_EQ(r.machine.outcome()->cause, StepDown::kRenewalRefused);
      EXPECT_NE(r.machine.outcome()->step_down.find("refused the renewals"), std::string::npos);
    }
  }
}

TEST(Leader, OneshotPassesTheChildsStatusOnAndStopsItAtItsTimeout) {
  for (int code : {0, 1, 42, 143}) {
    Rig r(settings(Mode::kOneshot));
    r.run_child();
    r.step(ChildExited{code});
    EXPECT_EQ(*r.machine.outcome(), (LeaderOutcome{AfterExit::Kind::kExit, code, 0ms, "", StepDown::kNone}));
  }
  auto s = settings(Mode::kOneshot);
  s.timeout = 2000ms;
  Rig r(s);
  r.run_child();
  EXPECT_EQ(r.machine.next_wakeup(r.lease), r.clock.now() + 2000ms);
  r.advance(2000ms);
  r.renew();
  r.step(Tick{});
  EXPECT_TRUE(said(r.last, "ran past timeout 2s", Level::kWarn));
  r.step(ChildExited{143});
  EXPECT_EQ(r.machine.outcome()->exit_code, kExitTimeout);
}

// Signals: others are forwarded to the child's group; TERM/INT stop it: oneshot forwards
// the signal received, supervise uses kill_signal; the first stop names it.
TEST(Leader, SignalsAreForwardedAndAStopEndsThePhaseAsEachModeSays) {
  struct Row {
    Mode mode;
    int stop;
    int child_code;
    std::vector<int> sent;
    int want;
  };
  const std::vector<Row> rows = {
      {Mode::kOneshot, SIGINT, 130, {SIGINT, SIGCONT}, 130},
      {Mode::kOneshot, SIGTERM, 0, {SIGTERM, SIGCONT}, 0},
      {Mode::kSupervise, SIGINT, 143, {SIGTERM, SIGCONT}, 0},
  };
  for (const auto& row : rows) {
    Rig r(settings(row.mode));
    r.run_child();
    r.step(Signals{{SIGHUP}, false, SIGTERM});
    EXPECT_EQ(signals(r.last), std::vector<int>{SIGHUP});
    EXPECT_TRUE(said(r.last, "forwarding SIGHUP", Level::kInfo));
    r.step(Signals{{}, true, row.stop});
    EXPECT_EQ(signals(r.last), row.sent);
    EXPECT_TRUE(said(r.last, "shutdown requested", Level::kInfo));  // a planned stop is no warning
    r.step(Signals{{}, true, SIGTERM});                               // a second does not signal again
    EXPECT_TRUE(signals(r.last).empty());
    r.step(ChildExited{row.child_code});
    EXPECT_EQ(r.machine.outcome()->exit_code, row.want);
  }
}

// A flood of forwarded signals (a terminal resized in a loop, a HUP storm) reaches the child
// every time but is said once per 30 s per signal, with how many went unsaid (invariant 7).
TEST(Leader, AFloodOfForwardedSignalsIsSaidOncePerIntervalAndAllAreForwarded) {
  Rig r(settings(Mode::kSupervise));
  r.run_child();
  int said_lines = 0, forwarded = 0;
  for (int i = 0; i < 1000; ++i) {
    r.step(Signals{{SIGWINCH}, false, SIGTERM});
    forwarded += static_cast<int>(signals(r.last).size());
    said_lines += said(r.last, "forwarding SIGWINCH", Level::kInfo) ? 1 : 0;
    r.clock.advance(1ms);
  }
  EXPECT_EQ(forwarded, 1000);
  EXPECT_EQ(said_lines, 1);
  r.clock.advance(kForwardSummary);
  r.step(Signals{{SIGWINCH}, false, SIGTERM});
  EXPECT_TRUE(said(r.last, "forwarding SIGWINCH to child pid=", Level::kInfo));
  EXPECT_TRUE(said(r.last, "(and 999 more forwarded since the last line)", Level::kInfo));
  // Another signal has its own line.
  r.step(Signals{{SIGHUP}, false, SIGTERM});
  EXPECT_TRUE(said(r.last, "forwarding SIGHUP", Level::kInfo));
}

// supervise: the child is restarted per `restart` after its delay while the lease holds;
// otherwise the leader releases and contends again after restart_delay.
TEST(Leader, SuperviseRestartsPerRestartPolicy) {
  struct Row {
    Restart restart;
    int code;
    bool restarts;
  };
  const std::vector<Row> rows = {
      {Restart::kAlways, 0, true},    {Restart::kAlways, 1, true},  {Restart::kOnFailure, 0, false},
      {Restart::kOnFailure, 1, true}, {Restart::kNever, 1, false},
  };
  for (const auto& row : rows) {
    auto s = settings(Mode::kSupervise);
    s.restart = row.restart;
    Rig r(s);
    r.run_child();
    r.step(ChildExited{row.code});
    if (!row.restarts) {
      ASSERT_TRUE(r.machine.done());
      EXPECT_EQ(r.machine.outcome()->kind, AfterExit::Kind::kRecontend);
      continue;
    }
    EXPECT_EQ(r.machine.state(), LeaderState::kRestarting);
    EXPECT_TRUE(said(r.last, "restarting child in 1s", Level::kInfo));
    EXPECT_EQ(r.machine.next_wakeup(r.lease), r.clock.now() + 1000ms);
    r.advance(999ms);
    r.renew();
    r.step(Tick{});
    EXPECT_TRUE(all<Spawn>(r.last).empty());
    r.advance(1ms);
    r.step(Tick{});
    EXPECT_EQ(all<Spawn>(r.last).size(), 1u);
  }
}

// A worker pool of short jobs (issue 19's semaphore: `restart = "never"`, 200 ms jobs): a job
// that ended with status 0 and is not restarted hands the lease on. That is no crash loop:
// every such exit contends again after restart_delay (at least RestartTracker::kRestartStep),
// never a growing delay, and never a step-down however many jobs a window holds. A failing
// job still counts, as a crash loop must.
TEST(Leader, CleanExitsThatAreNotRestartedNeitherGrowTheDelayNorStepDown) {
  for (Restart restart : {Restart::kNever, Restart::kOnFailure}) {
    auto s = settings(Mode::kSupervise);  // restart_limit 3 within 60 s
    s.restart = restart;
    s.restart_delay = 0ms;
    RestartTracker restarts(s.restart_limit, s.restart_window, s.restart_delay);
    FakeClock clock;
    for (int job = 1; job <= 10; ++job) {  // ten leases in 10 s, each a job of 200 ms
      LeaderMachine m(s, restarts);
      LeaseView lease;
      lease.valid_until = clock.now() + kTtl;
      m.step(Start{}, clock.now(), lease);
      m.step(Spawned{100, 99}, clock.now(), lease);
      clock.advance(200ms);
      m.step(ChildExited{0}, clock.now(), lease);
      ASSERT_TRUE(m.done()) << job;
      EXPECT_EQ(m.outcome()->kind, AfterExit::Kind::kRecontend) << job;
      EXPECT_EQ(m.outcome()->step_down, "") << job;
      EXPECT_EQ(m.outcome()->delay, RestartTracker::kRestartStep) << job;
      clock.advance(800ms);
    }
  }
  // restart = "never" with failing jobs: the delay grows and the leader steps down.
  auto s = settings(Mode::kSupervise);
  s.restart = Restart::kNever;
  RestartTracker restarts(s.restart_limit, s.restart_window, s.restart_delay);
  FakeClock clock;
  std::vector<Millis> delays;
  std::string step_down;
  for (int job = 1; job <= 4; ++job) {
    LeaderMachine m(s, restarts);
    LeaseView lease;
    lease.valid_until = clock.now() + kTtl;
    m.step(Start{}, clock.now(), lease);
    m.step(Spawned{100, 99}, clock.now(), lease);
    m.step(ChildExited{1}, clock.now(), lease);
    ASSERT_TRUE(m.done());
    delays.push_back(m.outcome()->delay);
    step_down = m.outcome()->step_down;
    clock.advance(100ms);
  }
  EXPECT_EQ(delays[0], 1000ms);
  EXPECT_EQ(delays[1], 2000ms);
  EXPECT_NE(step_down.find("exited 4 times within 1m"), std::string::npos) << step_down;
}

TEST(Leader, ACrashLoopStepsTheLeaderDownAfterRestartLimitExits) {
  Rig r(settings(Mode::kSupervise));  // restart_limit 3 within 60 s
  r.run_child();
  for (int exits = 1; exits <= 3; ++exits) {
    r.step(ChildExited{1});
    ASSERT_EQ(r.machine.state(), LeaderState::kRestarting) << exits;
    r.lease.valid_until = r.clock.now() + 1h;  // the delays grow past one lease
    r.advance(r.machine.next_wakeup(r.lease) - r.clock.now());
    r.step(Tick{});
    r.step(Spawned{100 + exits, 99});
  }
  r.step(ChildExited{1});
  ASSERT_TRUE(r.machine.done());
  EXPECT_EQ(r.machine.outcome()->cause, StepDown::kRestartLimit);
  EXPECT_NE(r.machine.outcome()->step_down.find("exited 4 times within 1m"), std::string::npos)
      << r.machine.outcome()->step_down;
}

TEST(Leader, AHandoverStopsTheChildAsPlannedAndStepsDown) {
  Rig r(settings(Mode::kSupervise));
  r.run_child();
  r.step(HandoverAsked{});
  EXPECT_TRUE(said(r.last, "handover requested (a control message on k:control)", Level::kInfo));
  r.step(HandoverAsked{});
  EXPECT_TRUE(r.last.empty());  // heard once
  r.step(Woke{});
  EXPECT_EQ(signals(r.last), (std::vector<int>{SIGTERM, SIGCONT}));
  EXPECT_TRUE(said(r.last, "stepping down: handover requested", Level::kInfo));
  r.step(ChildExited{143});
  EXPECT_EQ(*r.machine.outcome(),
            (LeaderOutcome{AfterExit::Kind::kRecontend, 0, 0ms, "handover requested", StepDown::kHandover}));
}

TEST(Leader, AHandoverBetweenTwoRunsStepsDownWithoutStartingTheChild) {
  Rig r(settings(Mode::kSupervise));
  r.run_child();
  r.step(ChildExited{1});
  ASSERT_EQ(r.machine.state(), LeaderState::kRestarting);
  r.step(HandoverAsked{});
  r.step(Tick{});
  EXPECT_TRUE(all<Spawn>(r.last).empty());
  EXPECT_EQ(r.machine.outcome()->cause, StepDown::kHandover);
}

TEST(Leader, AFailingHealthCheckStopsTheChildWithAWarningAndStepsDown) {
  Rig r(settings(Mode::kSupervise));
  r.run_child();
  r.step(HealthFailed{"health check failed 3 times in a row"});
  r.step(Woke{});
  EXPECT_TRUE(said(r.last, "stepping down: health check failed", Level::kWarn));
  r.step(ChildExited{143});
  EXPECT_EQ(r.machine.outcome()->cause, StepDown::kHealth);
}

TEST(Leader, DuringTheRestartDelayAStopExitsAndALostLeaseContendsAgain) {
  {
    Rig r(settings(Mode::kSupervise));
    r.run_child();
    r.step(ChildExited{1});
    r.step(Signals{{}, true, SIGTERM});
    r.step(Tick{});
    EXPECT_EQ(*r.machine.outcome(), (LeaderOutcome{AfterExit::Kind::kExit, 0, 0ms, "", StepDown::kNone}));
  }
  {
    Rig r(settings(Mode::kSupervise));
    r.run_child();
    r.step(ChildExited{1});
    r.lease.lost = true;
    r.lease.lost_reason = "gone";
    r.step(Tick{});
    EXPECT_EQ(all<Status>(r.last).at(0).text, "lease lost: gone");
    EXPECT_EQ(*r.machine.outcome(), (LeaderOutcome{AfterExit::Kind::kRecontend, 0, 1000ms, "", StepDown::kNone}));
  }
}

// The first cause names the stop: a lease lost while a timeout's stop runs changes nothing.
TEST(Leader, TheFirstStopCauseWins) {
  auto s = settings(Mode::kOneshot);
  s.timeout = 100ms;
  Rig r(s);
  r.run_child();
  r.advance(100ms);
  r.step(Tick{});
  ASSERT_EQ(r.machine.cause(), StopCause::kTimeout);
  r.lease.lost = true;
  r.step(Woke{});
  EXPECT_TRUE(signals(r.last).empty());
  EXPECT_EQ(r.machine.cause(), StopCause::kTimeout);
}

TEST(Leader, NothingHappensAfterTheOutcome) {
  Rig r(settings(Mode::kOneshot));
  r.run_child();
  r.step(ChildExited{0});
  ASSERT_TRUE(r.machine.done());
  for (const Event& e : std::vector<Event>{Tick{}, Woke{}, Signals{{SIGHUP}, true, SIGTERM}, ChildExited{1},
                                           HandoverAsked{}, Start{}}) {
    EXPECT_TRUE(r.step(e).empty());
  }
  EXPECT_EQ(r.machine.state(), LeaderState::kDone);
}

// The keeper holds every deadline the daemon decides (docs/DESIGN.md, invariant 2): a
// renewal's, stamped with when the renewal was sent, and a stop's earlier one, stamped with
// when the stop began; a lost lease used to move no keeper deadline at all.
TEST(Leader, TheKeeperIsToldEveryDeadlineWithWhenItWasDecided) {
  Rig r(settings(Mode::kSupervise));
  r.run_child();
  r.advance(800ms);
  r.lease.renewed_at = r.clock.now() - 30ms;  // the renewal went out 30 ms before its answer
  r.lease.valid_until = r.lease.renewed_at + kTtl;
  r.step(Tick{});
  auto moved = all<MoveDeadline>(r.last);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].kill_at, stop_schedule(r.lease.valid_until, kGrace, kTtl).kill_at);
  EXPECT_EQ(moved[0].decided, r.lease.renewed_at);
  r.advance(100ms);
  r.lease.lost = true;
  r.lease.lost_reason = "the key holds another holder's value";
  r.step(Woke{});
  moved = all<MoveDeadline>(r.last);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].kill_at, r.clock.now() + kGrace);  // the cut
  EXPECT_EQ(moved[0].decided, r.clock.now());
  // Told before anything else of the stop is done: a daemon stopped right after its log
  // line or its kill_signal leaves the keeper holding the cut.
  ASSERT_FALSE(r.last.empty());
  EXPECT_TRUE(std::holds_alternative<MoveDeadline>(r.last.front()));
  // A renewal answered late changes nothing for the keeper: the stop's cut stands.
  r.lease.lost = false;
  r.renew();
  r.step(Tick{});
  EXPECT_TRUE(all<MoveDeadline>(r.last).empty());
  // A shutdown's stop cuts it as well.
  Rig s(settings(Mode::kSupervise));
  s.run_child();
  s.step(Signals{{}, true, SIGTERM});
  moved = all<MoveDeadline>(s.last);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].kill_at, s.clock.now() + kGrace);
}

// While the child runs, the keeper hears from the daemon at least every half tick, the
// same deadline again (its stamp unchanged): a keeper that hears nothing for a tick takes
// the daemon as frozen and sends kill_signal itself. No word is due once the child is gone.
TEST(Leader, TheKeeperHearsFromTheDaemonEveryHalfTick) {
  auto set = settings(Mode::kSupervise);
  set.tick = 1000ms;
  Rig r(set);
  r.run_child();
  EXPECT_EQ(r.machine.keeper_due(), r.clock.now() + 500ms);
  r.advance(499ms);
  r.step(Tick{});
  EXPECT_TRUE(all<MoveDeadline>(r.last).empty());
  r.advance(1ms);
  r.step(Tick{});
  auto moved = all<MoveDeadline>(r.last);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].kill_at, stop_schedule(r.lease.valid_until, kGrace, kTtl).kill_at);
  EXPECT_EQ(moved[0].decided, r.lease.renewed_at);
  EXPECT_EQ(r.machine.keeper_due(), r.clock.now() + 500ms);
  // Through a stop too, until SIGKILL.
  r.advance(2500ms);
  r.step(Tick{});
  ASSERT_EQ(r.machine.state(), LeaderState::kStopping);
  EXPECT_EQ(all<MoveDeadline>(r.last).size(), 1u);
  r.step(ChildExited{143});
  EXPECT_EQ(r.machine.keeper_due(), Clock::time_point::max());
}

// A daemon and its keeper frozen together past the lease (a paused VM) with the child
// running: on waking the daemon says so at error (how long past the deadline, the token),
// counts it, and kills the child at once. Before: only "stopping child ... with SIGTERM".
TEST(Leader, ADaemonFrozenPastItsLeaseWithTheChildAliveSaysSoCountsItAndKillsAtOnce) {
  for (bool woke : {true, false}) {  // the wake-up after poll, or the loop's next turn
    auto set = settings(Mode::kOneshot);
    set.token = 1795602556497048;
    Rig r(set);
    r.run_child();
    r.advance(kTtl + 3800ms);
    if (woke) {
      r.step(Woke{});
    } else {
      r.step(Tick{});
    }
    EXPECT_TRUE(said(r.last, "this host was frozen 3800ms past its lease", Level::kError)) << woke;
    EXPECT_TRUE(said(r.last, "token 1795602556497048 may have overlapped the next holder", Level::kError));
    EXPECT_EQ(all<FrozenPastLease>(r.last).size(), 1u);
    EXPECT_EQ(signals(r.last), std::vector<int>{SIGKILL});
    EXPECT_FALSE(said(r.last, "stopping child", Level::kWarn));
    EXPECT_EQ(r.machine.state(), LeaderState::kKilling);
    r.step(Signals{});
    r.step(ChildExited{137});
    ASSERT_TRUE(r.machine.done());
    EXPECT_EQ(r.machine.outcome()->exit_code, kExitTempFail);  // lost to the deadline (75)
  }
  // Within the kill margin of the deadline it is the ordinary stop, not a freeze.
  Rig r(settings(Mode::kOneshot));
  r.run_child();
  r.advance(kTtl);
  r.step(Woke{});
  EXPECT_TRUE(all<FrozenPastLease>(r.last).empty());
  // A child whose keeper killed it only as it woke too (frozen as well) lived past the
  // lease all the same.
  Rig k(settings(Mode::kSupervise));
  k.run_child();
  const auto deadline = k.lease.valid_until;
  k.advance(kTtl + 2s);
  k.step(Woke{ChildSeen{true, SIGKILL, deadline + 1900ms}});
  EXPECT_TRUE(said(k.last, "this host was frozen 1900ms past its lease", Level::kError));
  EXPECT_EQ(all<FrozenPastLease>(k.last).size(), 1u);
  EXPECT_TRUE(signals(k.last).empty());
}

// Only the daemon was stopped: its keeper stopped the child at the lease's stop time. On
// SIGCONT the daemon says so, and neither "stops" the child with SIGTERM nor forwards the
// SIGCONT it got to a child that is gone (before: both, seconds after the child died).
TEST(Leader, AChildItsKeeperStoppedWhileTheDaemonCouldNotRunIsSaidNotStoppedAgain) {
  for (Mode mode : {Mode::kOneshot, Mode::kSupervise}) {
    Rig r(settings(mode));
    r.run_child();
    const auto sched = stop_schedule(r.lease.valid_until, kGrace, kTtl);
    r.advance(kTtl + 5s);
    const ChildSeen gone{true, SIGTERM, sched.term_at + 1s};
    r.step(Tick{gone});  // the loop's turn saw it first
    EXPECT_TRUE(said(r.last, "was stopped by its keeper with SIGTERM", Level::kWarn));
    EXPECT_TRUE(said(r.last, "while this daemon could not run", Level::kWarn));
    EXPECT_FALSE(said(r.last, "stopping child", Level::kWarn));
    EXPECT_TRUE(signals(r.last).empty());
    EXPECT_TRUE(all<FrozenPastLease>(r.last).empty());
    EXPECT_TRUE(all<MoveDeadline>(r.last).empty());
    r.step(Woke{gone});  // said once
    EXPECT_TRUE(r.last.empty());
    r.step(Signals{{SIGCONT}, false, SIGTERM});
    EXPECT_TRUE(signals(r.last).empty());
    EXPECT_FALSE(said(r.last, "forwarding", Level::kInfo));
    r.step(ChildExited{143});
    ASSERT_TRUE(r.machine.done());
    if (mode == Mode::kOneshot) {
      EXPECT_EQ(r.machine.outcome()->exit_code, kExitTempFail);
    } else {
      EXPECT_EQ(r.machine.outcome()->kind, AfterExit::Kind::kRecontend);
    }
  }
  // A child that ended on its own before its stop time is no such case.
  Rig r(settings(Mode::kOneshot));
  r.run_child();
  r.advance(1s);
  r.step(Woke{ChildSeen{true, 0, {}}});
  EXPECT_TRUE(r.last.empty());
  r.step(ChildExited{0});
  EXPECT_EQ(r.machine.outcome()->exit_code, 0);
}

// A daemon that runs on time and meets its keeper's SIGKILL of the same instant (a stop's
// kill time, which both hold) had no pause: the escalation is said as the daemon's own is,
// naming the keeper (the line used to go missing: the keeper's report woke the daemon first).
TEST(Leader, AKeepersKillAtTheSameInstantIsNoPause) {
  Rig r(settings(Mode::kSupervise));
  r.run_child();
  r.step(Signals{{}, true, SIGTERM});
  const auto kill_at = r.clock.now() + kGrace;
  for (int i = 0; i < 3; ++i) {  // turns every half tick, as the keeper's word makes them
    r.advance(500ms);
    r.step(Tick{});
  }
  r.advance(500ms);
  ASSERT_EQ(r.clock.now(), kill_at);
  r.step(Tick{ChildSeen{true, SIGKILL, kill_at}});
  EXPECT_TRUE(said(r.last, "still running 2s after SIGTERM; its keeper sent SIGKILL to its tree", Level::kWarn));
  EXPECT_FALSE(said(r.last, "sending SIGKILL", Level::kWarn));
  EXPECT_FALSE(said(r.last, "could not run", Level::kWarn));
  EXPECT_TRUE(signals(r.last).empty());
  r.step(ChildExited{137});
  EXPECT_EQ(*r.machine.outcome(), (LeaderOutcome{AfterExit::Kind::kExit, 0, 0ms, "", StepDown::kNone}));
}

// A keeper killed from outside (the OOM killer, kill -9) takes the job with it: said at
// error, status 71 (EX_OSERR) in oneshot, a child failure for supervise's restart policy.
TEST(Leader, AKeeperKilledFromOutsideIsSaidAndIsAChildFailure) {
  Rig o(settings(Mode::kOneshot));
  o.run_child();
  o.step(ChildExited{redisgo::kExitOsError, SIGKILL});
  EXPECT_TRUE(said(o.last, "the keeper process pid=99 was killed from outside by SIGKILL (the OOM killer?): the job "
                           "was killed with it",
                   Level::kError));
  EXPECT_EQ(o.machine.outcome()->exit_code, 71);
  Rig s(settings(Mode::kSupervise));  // restart on-failure
  s.run_child();
  s.step(ChildExited{redisgo::kExitOsError, SIGKILL});
  EXPECT_EQ(s.machine.state(), LeaderState::kRestarting);
  EXPECT_TRUE(said(s.last, "child exited status=71", Level::kWarn));
}

}  // namespace daemon_leader_test
