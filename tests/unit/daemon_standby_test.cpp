// The standby phase's rules (redisgo_task(1) "Modes"; docs/DESIGN.md invariant 7, the
// restart guard) as table tests of StandbyMachine: a fake clock, attempts made up by hand.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "daemon/standby.h"
#include "util/exit_status.h"

namespace daemon_standby_test {

using namespace std::chrono_literals;
using namespace redisgo::daemon;
using namespace redisgo::daemon::standby;
using redisgo::Clock;
using redisgo::FakeClock;
using redisgo::Millis;
using redisgo::config::Mode;
using redisgo::lock::Acquisition;

namespace {

/// A strategy that always says the same.
class FixedBackoff final : public redisgo::backoff::Backoff {
 public:
  explicit FixedBackoff(std::optional<Millis> d) : d_(d) {}
  std::optional<Millis> next() override { return d_; }
  void reset() override { ++resets; }
  int resets = 0;

 private:
  std::optional<Millis> d_;
};

struct Rig {
  explicit Rig(StandbySettings s, std::optional<Millis> strategy = 50ms) : backoff(strategy), machine(s, backoff) {}
  Actions step(const Event& e) { return last = machine.step(e, clock.now()); }
  /// An attempt sent now that came back `took` later with `acq`.
  Actions attempted(Acquisition acq, Clock::duration took = 1ms, bool subscribed = true, bool stop = false) {
    const auto started = clock.now();
    clock.advance(took);
    return step(Attempted{std::move(acq), started, stop, subscribed});
  }
  FakeClock clock;
  FixedBackoff backoff;
  StandbyMachine machine;
  Actions last;
};

StandbySettings settings(Mode mode) {
  StandbySettings s;
  s.mode = mode;
  return s;
}

Acquisition held(std::int64_t ttl_ms) {
  Acquisition a;
  a.holder = "other";
  a.holder_ttl_ms = ttl_ms;
  a.busy = 1;
  a.answered = {"node"};
  return a;
}

Acquisition granted() {
  Acquisition a;
  a.acquired = true;
  a.token = 7;
  return a;
}

template <class T>
std::optional<T> first(const Actions& actions) {
  for (const auto& a : actions) {
    if (const auto* t = std::get_if<T>(&a)) return *t;
  }
  return std::nullopt;
}

template <class T>
bool has(const Actions& actions) {
  return first<T>(actions).has_value();
}

}  // namespace

TEST(Standby, AGrantedAttemptIsReportedThenLeads) {
  Rig r(settings(Mode::kSupervise));
  r.step(Begin{});
  EXPECT_TRUE(has<Attempt>(r.last));
  EXPECT_EQ(r.backoff.resets, 1);
  r.attempted(granted());
  ASSERT_EQ(r.last.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<Report>(r.last[0]));
  EXPECT_TRUE(std::holds_alternative<Lead>(r.last[1]));
  EXPECT_EQ(r.machine.state(), StandbyState::kLeading);
  EXPECT_EQ(r.machine.last().token, 7u);
}

// How long a miss waits (after_miss, then the pacing floor), and when oneshot gives up.
TEST(Standby, AMissWaitsAsTheModeAndTheHolderSay) {
  struct Row {
    const char* name;
    Mode mode;
    bool wait_flag;
    bool monitor_try_all;
    std::int64_t ttl_ms;
    bool subscribed;
    std::optional<Millis> want_wait;  // from the attempt's end; nullopt = gives up
  };
  const std::vector<Row> rows = {
      {"--no-wait gives up", Mode::kOneshot, false, true, 3000, true, std::nullopt},
      {"subscribed: sleep until the lease could expire", Mode::kSupervise, true, true, 3000, true, 3001ms},
      {"not subscribed: the backoff", Mode::kSupervise, true, true, 3000, false, 99ms},  // floor: 100 ms from the start
      {"counted attempts: the backoff", Mode::kOneshot, true, false, 3000, true, 99ms},
      {"a lease about to end: at least the pacing gap", Mode::kSupervise, true, true, 10, true, 99ms},
  };
  for (const auto& row : rows) {
    auto s = settings(row.mode);
    s.wait_flag = row.wait_flag;
    s.monitor_try_all = row.monitor_try_all;
    Rig r(s);
    r.step(Begin{});
    r.attempted(held(row.ttl_ms), 1ms, row.subscribed);
    const auto wait = first<Wait>(r.last);
    if (!row.want_wait) {
      EXPECT_FALSE(wait) << row.name;
      EXPECT_EQ(first<GiveUp>(r.last)->attempts, 1) << row.name;
      EXPECT_EQ(r.machine.state(), StandbyState::kGaveUp);
      continue;
    }
    ASSERT_TRUE(wait) << row.name;
    EXPECT_TRUE(wait->wake_on_release);
    EXPECT_EQ(wait->until - r.clock.now(), *row.want_wait) << row.name;
    EXPECT_TRUE(has<ShowMiss>(r.last));
  }
}

TEST(Standby, RetriesCountBoundsTheRequestsTheReCheckIncluded) {
  auto s = settings(Mode::kOneshot);
  s.monitor_try_all = false;
  s.retries_count = 3;
  Rig r(s);
  r.step(Begin{});
  r.attempted(held(3000));
  // A new subscription asks for a re-check: with counted attempts it counts too.
  r.step(WaitEnded{End::kSubscribed});
  r.clock.advance(first<Wait>(r.last)->until - r.clock.now());
  r.step(WaitEnded{End::kTimer});
  ASSERT_TRUE(has<Attempt>(r.last));
  r.attempted(held(3000));
  r.clock.advance(first<Wait>(r.last)->until - r.clock.now());
  r.step(WaitEnded{End::kTimer});
  r.attempted(held(3000));
  EXPECT_EQ(first<GiveUp>(r.last)->attempts, 3);
}

TEST(Standby, TheReCheckAfterANewSubscriptionIsNotCountedWhenWaitingForever) {
  Rig r(settings(Mode::kSupervise));
  r.step(Begin{});
  r.attempted(held(3000));
  r.step(WaitEnded{End::kSubscribed});
  const auto soon = first<Wait>(r.last)->until;
  EXPECT_EQ(soon, r.machine.attempt_started() + kMinAttemptGap);
  r.clock.advance(soon - r.clock.now());
  r.step(WaitEnded{End::kTimer});
  r.attempted(held(3000));
  EXPECT_EQ(r.machine.attempts(), 1);
}

// A release message wakes a waiter at once, but never sooner than kMinAttemptGap after
// its last attempt began: a flood of messages cannot drive it (invariant 7).
TEST(Standby, AReleaseWakesAtOnceButNeverFasterThanThePacingGap) {
  Rig r(settings(Mode::kSupervise));
  r.step(Begin{});
  r.attempted(held(3000), 1ms);
  r.clock.advance(20ms);
  r.step(WaitEnded{End::kReleased});
  const auto paced = first<Wait>(r.last);
  ASSERT_TRUE(paced);
  EXPECT_EQ(paced->until, r.machine.attempt_started() + kMinAttemptGap);
  EXPECT_EQ(first<Debug>(r.last)->text, "release message received; trying in 79ms");
  r.step(WaitEnded{End::kReleased});  // another message: no second line
  EXPECT_FALSE(has<Debug>(r.last));
  r.clock.advance(paced->until - r.clock.now());
  r.step(WaitEnded{End::kTimer});
  EXPECT_TRUE(has<Attempt>(r.last));

  Rig late(settings(Mode::kSupervise));
  late.step(Begin{});
  late.attempted(held(3000));
  late.clock.advance(500ms);
  late.step(WaitEnded{End::kReleased});
  EXPECT_TRUE(has<Attempt>(late.last));
  EXPECT_EQ(first<Debug>(late.last)->text, "release message received; trying now");
}

// Whatever arrives, a waiter sends at most one attempt per kMinAttemptGap.
TEST(Standby, AFloodOfReleasesAndSubscriptionsNeverBreaksThePacing) {
  Rig r(settings(Mode::kSupervise));
  r.step(Begin{});
  std::vector<Clock::time_point> attempts;
  std::optional<Clock::time_point> wake;
  for (int ms = 0; ms < 10'000; ++ms) {
    if (has<Attempt>(r.last)) {
      attempts.push_back(r.clock.now());
      r.attempted(held(3000), 0ms);
    }
    if (auto w = first<Wait>(r.last)) wake = w->until;
    r.clock.advance(1ms);
    const End end = wake && r.clock.now() >= *wake ? End::kTimer : ms % 3 ? End::kReleased : End::kSubscribed;
    r.step(WaitEnded{end});
  }
  ASSERT_GE(attempts.size(), 50u);
  for (std::size_t i = 1; i < attempts.size(); ++i) EXPECT_GE(attempts[i] - attempts[i - 1], kMinAttemptGap);
}

// A split vote (TaskScenarios.PartialPartitionsOverThreeNodes): the holder reaches nodes 0
// and 2, this waiter 1 and 2. Node 1 grants (its key expired: the holder cannot reach it),
// node 2 is busy, node 0 is in its retry backoff: no quorum, no holder named (it holds one
// node of those we reach), the grant on node 1 undone. That cost node 1 up to 12 commands,
// not a miss's 4; paced at kMinAttemptGap by a short backoff, two such waiters sent it
// 117-148 commands/s. Split votes in a row are paced up to kSplitAttemptGap, whatever wakes
// the waiter; a single one (two contenders meeting) is retried as soon as before.
Acquisition split() {
  Acquisition a;
  a.votes = 1;
  a.busy = 1;
  a.holder = "other";
  a.position = 1;
  a.answered = {"node 1", "node 2"};
  a.errors.push_back({"node 0", redisgo::redis::Fault::kTimeout, "node 0: timeout (not retried until its retry time)"});
  return a;
}

StandbySettings three_nodes() {
  StandbySettings s = settings(Mode::kSupervise);
  s.quorum = 2;
  s.nodes = 3;
  return s;
}

// Split votes in a row pace a waiter's attempts up to 300 ms apart (below), but turns from a
// quorum of nodes are a lease handed to us by a quorum, no split that stays: tried
// kMinAttemptGap after the last attempt. A semaphore's node a step behind the others grants
// beside a held slot (a split vote); counted so, such misses kept a limit = 3 semaphore on
// three nodes idle 300 ms at a time after its quorum's turns.
TEST(Standby, TurnsFromAQuorumOfNodesAreNotHeldBackBySplitVotes) {
  Rig r(three_nodes(), 0ms);
  r.step(Begin{});
  for (int i = 0; i < 3; ++i) {
    r.attempted(split(), 1ms);
    r.clock.advance(r.machine.wake_at() - r.clock.now());
    r.step(WaitEnded{End::kTimer});
    ASSERT_TRUE(has<Attempt>(r.last)) << i;
  }
  r.attempted(split(), 1ms);
  EXPECT_EQ(first<Wait>(r.last)->until, r.machine.attempt_started() + kSplitAttemptGap);
  r.clock.advance(r.machine.attempt_started() + kMinAttemptGap - r.clock.now());
  r.step(WaitEnded{End::kTurn, 0ms, 1});  // one node's turn: waits for the others, and paced
  EXPECT_FALSE(has<Attempt>(r.last));
  r.step(WaitEnded{End::kTurn, 0ms, 2});
  EXPECT_TRUE(has<Attempt>(r.last));
}

TEST(Standby, SplitVotesInARowArePacedAsTheCommandsTheyCost) {
  EXPECT_EQ(attempt_gap(0), kMinAttemptGap);
  EXPECT_EQ(attempt_gap(1), kMinAttemptGap);
  EXPECT_EQ(attempt_gap(2), 2 * kMinAttemptGap);
  EXPECT_EQ(attempt_gap(3), kSplitAttemptGap);
  EXPECT_EQ(attempt_gap(1000), kSplitAttemptGap);
  for (End end : {End::kTimer, End::kReleased, End::kTurn, End::kSubscribed}) {
    SCOPED_TRACE(static_cast<int>(end));
    Rig r(three_nodes(), 0ms);  // a backoff that would try again at once
    r.step(Begin{});
    for (Millis gap : {kMinAttemptGap, 2 * kMinAttemptGap, kSplitAttemptGap, kSplitAttemptGap}) {
      r.attempted(split(), 1ms);
      EXPECT_EQ(first<Wait>(r.last)->until, r.machine.attempt_started() + gap);
      r.clock.advance(r.machine.attempt_started() + gap - r.clock.now());
      r.step(WaitEnded{End::kTimer});
      ASSERT_TRUE(has<Attempt>(r.last));
    }
    r.attempted(split(), 1ms);
    r.clock.advance(r.machine.attempt_started() + kMinAttemptGap - r.clock.now());  // a plain miss would go now
    r.step(WaitEnded{end});
    EXPECT_FALSE(has<Attempt>(r.last));
    r.clock.advance(r.machine.attempt_started() + kSplitAttemptGap - r.clock.now());
    r.step(WaitEnded{End::kTimer});
    EXPECT_TRUE(has<Attempt>(r.last));
    // A miss that is no split vote (the holder named by a quorum) starts the count again.
    r.attempted(held(3000), 1ms);
    r.clock.advance(r.machine.attempt_started() + kMinAttemptGap - r.clock.now());
    r.step(WaitEnded{End::kReleased});
    EXPECT_TRUE(has<Attempt>(r.last));
  }
  // A split vote against a turn (node-local lines that disagree for a moment) neither counts
  // nor starts the count again: the line settles it with quick retries.
  {
    Rig r(three_nodes(), 0ms);
    r.step(Begin{});
    Acquisition turn = split();
    turn.holder = std::string("\x01turn:") + "other";
    r.attempted(turn, 1ms);
    EXPECT_EQ(first<Wait>(r.last)->until, r.machine.attempt_started() + kMinAttemptGap);
    r.clock.advance(r.machine.wake_at() - r.clock.now());
    r.step(WaitEnded{End::kTimer});
    r.attempted(split(), 1ms);
    r.clock.advance(r.machine.wake_at() - r.clock.now());
    r.step(WaitEnded{End::kTimer});
    r.attempted(turn, 1ms);
    EXPECT_EQ(first<Wait>(r.last)->until, r.machine.attempt_started() + kMinAttemptGap);
    r.clock.advance(r.machine.wake_at() - r.clock.now());
    r.step(WaitEnded{End::kTimer});
    r.attempted(split(), 1ms);
    EXPECT_EQ(first<Wait>(r.last)->until, r.machine.attempt_started() + 2 * kMinAttemptGap);
  }
  // The grant's reply came after the vote was decided (busy on node 2, node 0 skipped: no
  // quorum possible) and was undone unseen: no vote, but the holder is on too few nodes to
  // be named, so the others had the key free. Counted the same.
  Rig late(three_nodes(), 0ms);
  late.step(Begin{});
  Acquisition unseen = split();
  unseen.votes = 0;
  late.attempted(unseen, 1ms);
  late.clock.advance(late.machine.attempt_started() + kMinAttemptGap - late.clock.now());
  late.step(WaitEnded{End::kTimer});
  late.attempted(unseen, 1ms);
  EXPECT_EQ(first<Wait>(late.last)->until, late.machine.attempt_started() + 2 * kMinAttemptGap);
  // Without the errors (every node answered): after one split vote a turn is answered at
  // once, as before; after two in a row, at the gap.
  for (int splits : {1, 2}) {
    Rig r(three_nodes(), 0ms);
    r.step(Begin{});
    Acquisition a = split();
    a.errors.clear();
    for (int i = 0; i < splits; ++i) {
      if (i > 0) {
        r.clock.advance(r.machine.wake_at() - r.clock.now());
        r.step(WaitEnded{End::kTimer});
        ASSERT_TRUE(has<Attempt>(r.last));
      }
      r.attempted(a, 1ms);
    }
    r.clock.advance(5ms);
    r.step(WaitEnded{End::kTurn});
    EXPECT_EQ(has<Attempt>(r.last), splits == 1) << splits;
    if (splits == 2) {
      EXPECT_EQ(first<Wait>(r.last)->until, r.machine.attempt_started() + 2 * kMinAttemptGap);
    }
  }
}

// Split votes under a flood of releases, turns and subscriptions: after the first few, one
// attempt per kSplitAttemptGap, so at most 12 commands per 300 ms (40/s) on a node that grants.
TEST(Standby, AFloodOfMessagesNeverBreaksThePacingOfSplitVotes) {
  Rig r(three_nodes(), 0ms);
  r.step(Begin{});
  std::vector<Clock::time_point> attempts;
  std::optional<Clock::time_point> wake;
  for (int ms = 0; ms < 10'000; ++ms) {
    if (has<Attempt>(r.last)) {
      attempts.push_back(r.clock.now());
      r.attempted(split(), 0ms);
    }
    if (auto w = first<Wait>(r.last)) wake = w->until;
    r.clock.advance(1ms);
    const End end = wake && r.clock.now() >= *wake ? End::kTimer
                    : ms % 3 == 0                  ? End::kTurn
                    : ms % 3 == 1                  ? End::kReleased
                                                   : End::kSubscribed;
    r.step(WaitEnded{end});
  }
  ASSERT_GE(attempts.size(), 30u);
  for (std::size_t i = 3; i < attempts.size(); ++i) EXPECT_GE(attempts[i] - attempts[i - 1], kSplitAttemptGap);
}

TEST(Standby, NoAttemptBeforeAQuorumOfNodesIsOutOfItsRetryBackoff) {
  Rig r(settings(Mode::kSupervise));
  r.step(Begin{});
  Acquisition a;
  a.errors.push_back({"127.0.0.1:1", redisgo::redis::Fault::kConnect, "refused"});
  a.not_before = r.clock.now() + 700ms;
  r.attempted(a, 1ms, false);
  EXPECT_EQ(first<Wait>(r.last)->until, r.clock.now() + 699ms);
  r.clock.advance(300ms);
  r.step(WaitEnded{End::kReleased});
  EXPECT_FALSE(has<Attempt>(r.last));
}

// The restart guard (docs/DESIGN.md "Restart guard"): with no holder known and the guard's
// wait known, the waiter asks exactly when the guard opens (+1 ms), not before.
TEST(Standby, TheRestartGuardsWaitIsWaitedExactly) {
  for (bool subscribed : {true, false}) {
    Rig r(settings(Mode::kSupervise));
    r.step(Begin{});
    Acquisition a;
    a.guard_wait_ms = 2500;
    r.attempted(a, 1ms, subscribed);
    EXPECT_EQ(first<Wait>(r.last)->until - r.clock.now(), 2501ms);
  }
}

// A signal that does not stop us (SIGHUP, SIGWINCH) cuts an attempt short; it is re-run,
// at most every 100 ms however many arrive, and it is never counted as a miss.
TEST(Standby, AStraySignalReRunsTheAttemptPaced) {
  auto s = settings(Mode::kOneshot);
  s.monitor_try_all = false;
  s.retries_count = 1;
  Rig r(s);
  r.step(Begin{});
  Acquisition cut;
  cut.cancelled = true;
  r.attempted(cut);
  EXPECT_TRUE(has<Attempt>(r.last));  // the first re-run goes at once
  r.attempted(cut, 10ms);
  const auto paced = first<Wait>(r.last);
  ASSERT_TRUE(paced);
  EXPECT_FALSE(paced->wake_on_release);
  EXPECT_EQ(r.machine.state(), StandbyState::kPacing);
  r.clock.advance(paced->until - r.clock.now());
  r.step(WaitEnded{End::kTimer});
  EXPECT_TRUE(has<Attempt>(r.last));
  EXPECT_EQ(r.machine.attempts(), 0);
}

TEST(Standby, AStopEndsTheWaitWhereverItIs) {
  {
    Rig r(settings(Mode::kSupervise));
    r.step(Begin{});
    r.step(StopAsked{});
    EXPECT_TRUE(has<Stopped>(r.last));
  }
  {
    Rig r(settings(Mode::kSupervise));
    r.step(Begin{});
    Acquisition cut;
    cut.cancelled = true;
    r.attempted(cut, 1ms, true, /*stop=*/true);
    EXPECT_TRUE(has<Stopped>(r.last));
  }
  {
    Rig r(settings(Mode::kSupervise));
    r.step(Begin{});
    r.attempted(held(3000));
    r.step(WaitEnded{End::kShutdown});
    EXPECT_TRUE(has<Stopped>(r.last));
    EXPECT_EQ(r.machine.state(), StandbyState::kStopped);
  }
}

TEST(Standby, ANewWaitStartsItsCountFromZero) {
  auto s = settings(Mode::kOneshot);
  s.monitor_try_all = false;
  s.retries_count = 2;
  Rig r(s);
  r.step(Begin{});
  r.attempted(held(3000));
  EXPECT_EQ(r.machine.attempts(), 1);
  r.step(Begin{});
  EXPECT_EQ(r.machine.attempts(), 0);
  EXPECT_EQ(r.machine.began(), r.clock.now());
}

// ---- oneshot: never silent on a fault that is not a busy lease ----

namespace {
Acquisition failed_on(std::vector<redisgo::redis::Fault> faults) {
  Acquisition a;
  for (std::size_t i = 0; i < faults.size(); ++i) {
    a.errors.push_back({"node " + std::to_string(i), faults[i], "node " + std::to_string(i) + ": failed"});
  }
  return a;
}
}  // namespace

// Refused credentials do not fix themselves mid-run: a oneshot run gives up at once (77),
// even with monitor_try_all; unless enough other nodes could still make a quorum.
TEST(Standby, OneshotGivesUpAtOnceOnRefusedCredentials) {
  using redisgo::redis::Fault;
  Rig r(settings(Mode::kOneshot));
  r.step(Begin{});
  r.attempted(failed_on({Fault::kAuth}), 1ms);
  EXPECT_TRUE(has<GiveUp>(r.last));
  StandbySettings three = settings(Mode::kOneshot);
  three.nodes = 3;
  three.quorum = 2;
  Rig one_of_three(three);
  one_of_three.step(Begin{});
  Acquisition a = failed_on({Fault::kAuth});
  a.answered = {"b", "c"};
  a.holder = "other";
  a.holder_ttl_ms = 3000;
  one_of_three.attempted(a, 1ms);
  EXPECT_FALSE(has<GiveUp>(one_of_three.last)) << "two good nodes still make a quorum";
  Rig two_of_three(three);
  two_of_three.step(Begin{});
  two_of_three.attempted(failed_on({Fault::kAuth, Fault::kTls}), 1ms);
  EXPECT_TRUE(has<GiveUp>(two_of_three.last));
  // supervise keeps trying (an operator may fix the password and the ACL).
  Rig sup(settings(Mode::kSupervise));
  sup.step(Begin{});
  sup.attempted(failed_on({Fault::kAuth}), 1ms);
  EXPECT_FALSE(has<GiveUp>(sup.last));
}

// What STATUS= and redisgo_task_state say while attempts reach no quorum: the
// refusal first (the operator's fix), then an error reply, then nodes down; nothing while a
// quorum answers, busy or not.
TEST(Standby, BlockedNamesTheCauseAnOperatorMustFixFirst) {
  using redisgo::redis::Fault;
  EXPECT_EQ(blocked_by(held(3000), 1, 1), std::nullopt) << "a busy lease is no fault";
  Acquisition won;
  won.acquired = true;
  EXPECT_EQ(blocked_by(won, 1, 1), std::nullopt);
  Acquisition two_of_three = failed_on({Fault::kAuth});
  two_of_three.answered = {"b", "c"};
  EXPECT_EQ(blocked_by(two_of_three, 3, 2), std::nullopt) << "two good nodes are a quorum";
  Acquisition one_down = failed_on({Fault::kConnect});
  one_down.answered = {"b"};  // the third node's answer had not come when the attempt was decided
  EXPECT_EQ(blocked_by(one_down, 3, 2), std::nullopt) << "one node down of three blocks nothing";

  auto refused = blocked_by(failed_on({Fault::kTimeout, Fault::kAuth}), 3, 2);
  ASSERT_TRUE(refused);
  EXPECT_STREQ(refused->cause, "credentials");
  EXPECT_EQ(refused->text, "this host cannot acquire: Redis refused its credentials (node 1: failed)");
  EXPECT_TRUE(refused->this_host);
  auto tls = blocked_by(failed_on({Fault::kReply, Fault::kTls}), 3, 2);
  ASSERT_TRUE(tls);
  EXPECT_STREQ(tls->cause, "tls");
  EXPECT_EQ(tls->text, "this host cannot acquire: TLS verification failed (node 1: failed)");
  auto reply = blocked_by(failed_on({Fault::kConnect, Fault::kReply}), 3, 2);
  ASSERT_TRUE(reply);
  EXPECT_STREQ(reply->cause, "error");
  EXPECT_TRUE(reply->every_host);
  EXPECT_FALSE(reply->this_host);
  Acquisition down = failed_on({Fault::kConnect, Fault::kTimeout});
  down.answered = {"c"};
  auto unreachable = blocked_by(down, 3, 2);
  ASSERT_TRUE(unreachable);
  EXPECT_STREQ(unreachable->cause, "unreachable");
  EXPECT_EQ(unreachable->text, "cannot acquire: no quorum of Redis nodes (1 of 3 answered, 2 needed; node 0: failed)");
}

// A host whose credentials a quorum of nodes refuses speaks of itself, not of the fleet (the
// nodes may serve every other host), names the right its ACL user lacks where Redis names it,
// and names the holder that a node which accepted it reported (attack round: a host with a
// wrong password said that no host could run the job and that no holder had a quorum, while
// another host led).
TEST(Standby, ARefusedHostSpeaksOfItselfAndNamesWhatANodeThatAcceptedItSaw) {
  using redisgo::redis::Fault;
  Acquisition wrong_password;
  wrong_password.errors = {{"a:1", Fault::kAuth, "redis a:1: AUTH failed: WRONGPASS invalid username-password pair"},
                           {"b:1", Fault::kAuth, "redis b:1: AUTH failed: WRONGPASS invalid username-password pair"}};
  wrong_password.answered = {"c:1"};
  wrong_password.busy = 1;
  wrong_password.holder = "host2:77:abc";
  wrong_password.holder_node = "c:1";
  auto b = blocked_by(wrong_password, 3, 2);
  ASSERT_TRUE(b);
  EXPECT_STREQ(b->cause, "credentials");
  EXPECT_TRUE(b->this_host);
  EXPECT_FALSE(b->every_host);
  EXPECT_EQ(b->text, "this host cannot acquire: Redis refused its credentials (redis a:1: AUTH failed: WRONGPASS "
                     "invalid username-password pair); the key is held by host2:77:abc (as c:1 says)");
  // A right, named where Redis names it (7.2 and later), else said as a right all the same.
  Acquisition no_set;
  no_set.errors = {{"a:1", Fault::kAuth,
                    "redis a:1: ERR ACL failure in script: User ro has no permissions to run the 'set' command"}};
  auto named = blocked_by(no_set, 1, 1);
  ASSERT_TRUE(named);
  EXPECT_EQ(named->text.rfind("this host cannot acquire: its ACL user lacks +set (", 0), 0u) << named->text;
  no_set.errors[0].message = "redis a:1: ERR The user executing the script can't run this command or subcommand";
  auto unnamed = blocked_by(no_set, 1, 1);
  ASSERT_TRUE(unnamed);
  EXPECT_EQ(unnamed->text.rfind("this host cannot acquire: its ACL user lacks a right the lease scripts need (", 0), 0u)
      << unnamed->text;
  // Nodes down: neither this host's fault nor provably everyone's.
  Acquisition down = failed_on({Fault::kConnect});
  auto d = blocked_by(down, 1, 1);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->this_host);
  EXPECT_FALSE(d->every_host);
}

// An unreachable Redis is waited for at most unreachable_timeout in oneshot (then 69), counted
// from the first attempt without a quorum and started again by one that had one.
TEST(Standby, OneshotGivesUpAfterUnreachableTimeoutWithoutAQuorum) {
  using redisgo::redis::Fault;
  StandbySettings s = settings(Mode::kOneshot);
  s.unreachable_timeout = 10s;
  Rig r(s, 700ms);  // a backoff whose steps do not divide the bound
  r.step(Begin{});
  int attempts = 0;
  Clock::time_point counted_from{};
  for (; attempts < 1000 && !has<GiveUp>(r.last); ++attempts) {
    if (attempts == 5) {
      r.attempted(held(3000), 0ms);  // it answered once: the count starts again
    } else {
      if (attempts == 6) counted_from = r.clock.now();
      r.attempted(failed_on({Fault::kConnect}), 0ms);
    }
    if (has<GiveUp>(r.last)) break;
    r.clock.advance(first<Wait>(r.last)->until - r.clock.now());
    r.step(WaitEnded{End::kTimer});
  }
  ASSERT_TRUE(has<GiveUp>(r.last));
  // At the bound itself: no backoff wait (up to its max) past it, and no attempt after it.
  EXPECT_EQ(r.clock.now() - counted_from, 10s);
  // A busy lease is waited for as monitor_try_all says, however long.
  Rig busy(s);
  busy.step(Begin{});
  for (int i = 0; i < 100; ++i) {
    busy.attempted(held(3000), 0ms);
    ASSERT_FALSE(has<GiveUp>(busy.last));
    busy.clock.advance(first<Wait>(busy.last)->until - busy.clock.now());
    busy.step(WaitEnded{End::kTimer});
  }
  // supervise never gives up.
  Rig sup(settings(Mode::kSupervise));
  sup.step(Begin{});
  for (int i = 0; i < 100; ++i) {
    sup.attempted(failed_on({Fault::kConnect}), 0ms);
    ASSERT_FALSE(has<GiveUp>(sup.last));
    sup.clock.advance(first<Wait>(sup.last)->until - sup.clock.now());
    sup.step(WaitEnded{End::kTimer});
  }
}

// ---- the waiting line (docs/DESIGN.md "The waiting line") ----

namespace {
Acquisition in_line(std::int64_t ttl_ms, std::int64_t position) {
  Acquisition a = held(ttl_ms);
  a.position = position;
  a.line_length = position + 2;
  return a;
}
}  // namespace

// Only the head watches the holder's TTL; the others sleep one turn window longer per waiter
// ahead (the line wakes them; this is the fallback when those ahead are dead or frozen).
TEST(Standby, InTheLineOnlyTheHeadWatchesTheTtlTheOthersSleepLonger) {
  for (const auto& [position, wait] : std::vector<std::pair<std::int64_t, Millis>>{
           {0, 3001ms}, {1, 3001ms}, {2, 4001ms}, {10, 12001ms}, {5000, kLineSleepMax}}) {
    Rig r(settings(Mode::kSupervise));
    r.step(Begin{});
    r.attempted(in_line(3000, position), 0ms);
    EXPECT_EQ(first<Wait>(r.last)->until, r.clock.now() + wait) << "position " << position;
  }
  // Counted attempts (retries_count) keep their backoff spacing.
  StandbySettings counted = settings(Mode::kOneshot);
  counted.monitor_try_all = false;
  Rig r(counted);
  r.step(Begin{});
  r.attempted(in_line(3000, 4), 0ms);
  EXPECT_EQ(first<Wait>(r.last)->until, r.machine.attempt_started() + kMinAttemptGap);
}

// A turn is answered at once, even right after our own attempt (a waiter that joined the line
// a moment ago); but once such an attempt missed, the next turn waits kTurnRetryGap (500 ms)
// after it, until an attempt of our own (timer, release) earns the credit back.
TEST(Standby, OurTurnTriesAtOnceButATurnAfterAMissedTurnWaits) {
  Rig r(settings(Mode::kSupervise));
  r.step(Begin{});
  r.attempted(in_line(3000, 1), 1ms);
  r.clock.advance(5ms);
  r.step(WaitEnded{End::kTurn});
  EXPECT_TRUE(has<Attempt>(r.last));
  EXPECT_EQ(first<Debug>(r.last)->text, "our turn in the waiting line; trying now");
  // That attempt missed (under Redlock each node sends a turn; or turns chase each other
  // between waiters while no quorum is to be had): the next turn waits.
  r.attempted(in_line(3000, 1), 1ms);
  r.clock.advance(5ms);
  r.step(WaitEnded{End::kTurn});
  EXPECT_FALSE(has<Attempt>(r.last));
  EXPECT_EQ(first<Wait>(r.last)->until, r.machine.attempt_started() + 500ms);
  // That wait's attempt is our own: it earns the credit back.
  r.clock.advance(495ms);
  r.step(WaitEnded{End::kTimer});
  EXPECT_TRUE(has<Attempt>(r.last));
  r.attempted(in_line(3000, 1), 1ms);
  r.step(WaitEnded{End::kTurn});
  EXPECT_TRUE(has<Attempt>(r.last));
}

// Several nodes: each node's line hands a freed lease on by itself, and the release reaches
// them a moment apart. A turn from fewer than a quorum of nodes waits up to 50 ms for the
// others' turns, and is tried at once when they come: tried on the first node's turn, the
// attempt found the lease still held on the others, missed, and the turns that came next
// waited 500 ms (a limit = 3 semaphore on three nodes lost two thirds of its capacity).
TEST(Standby, SeveralNodesATurnWaitsForAQuorumOfNodesTurns) {
  StandbySettings s = settings(Mode::kSupervise);
  s.nodes = 3;
  s.quorum = 2;
  auto three = [](Acquisition a) {
    a.answered = {"node a", "node b", "node c"};
    return a;
  };
  Rig r(s);
  r.step(Begin{});
  r.attempted(three(in_line(3000, 1)), 1ms);
  r.clock.advance(5ms);
  r.step(WaitEnded{End::kTurn, 0ms, 1});
  EXPECT_FALSE(has<Attempt>(r.last));
  EXPECT_EQ(first<Wait>(r.last)->until, r.clock.now() + 50ms);
  r.clock.advance(2ms);
  r.step(WaitEnded{End::kTurn, 0ms, 2});
  EXPECT_TRUE(has<Attempt>(r.last));
  EXPECT_EQ(first<Debug>(r.last)->text, "our turn in the waiting line; trying now");
  // A turn from one node alone: tried when the 50 ms are over, as an answer to that turn (it
  // spends the credit: the next turn waits 500 ms after it). That attempt misses.
  auto lone_turn_missed = [&](Rig& rig) {
    rig.step(Begin{});
    rig.attempted(three(in_line(3000, 1)), 1ms);
    rig.step(WaitEnded{End::kTimer});  // a refresh of the terminal line: nothing yet
    EXPECT_FALSE(has<Attempt>(rig.last));
    rig.clock.advance(10ms);
    rig.step(WaitEnded{End::kTurn, 0ms, 1});
    EXPECT_FALSE(has<Attempt>(rig.last));
    rig.clock.advance(50ms);
    rig.step(WaitEnded{End::kTimer});
    ASSERT_TRUE(has<Attempt>(rig.last));
    rig.attempted(three(in_line(3000, 1)), 1ms);
    rig.clock.advance(5ms);
  };
  // Turns from a quorum of nodes since are tried without the credit, but paced.
  Rig lone(s);
  lone_turn_missed(lone);
  lone.step(WaitEnded{End::kTurn, 0ms, 3});
  EXPECT_FALSE(has<Attempt>(lone.last));
  EXPECT_EQ(first<Wait>(lone.last)->until, lone.machine.attempt_started() + kMinAttemptGap);
  // From one node only: as before, kTurnRetryGap after the missed one.
  Rig one(s);
  lone_turn_missed(one);
  one.step(WaitEnded{End::kTurn, 0ms, 1});
  EXPECT_FALSE(has<Attempt>(one.last));
  EXPECT_EQ(first<Wait>(one.last)->until, one.machine.attempt_started() + 500ms);
}

// The same flood of (forged) turns as below, from one node of three: no faster than from the
// only node; from a quorum of nodes: one attempt per kMinAttemptGap, as a flood of release
// messages.
TEST(Standby, AFloodOfTurnsFromOneNodeOfSeveralIsPaced) {
  auto attempts_in_10s = [](int turn_nodes) {
    StandbySettings s = settings(Mode::kSupervise);
    s.nodes = 3;
    s.quorum = 2;
    Rig r(s);
    r.step(Begin{});
    int attempts = 0;
    std::optional<Clock::time_point> wake;
    for (int ms = 0; ms < 10'000; ++ms) {
      if (has<Attempt>(r.last)) {
        ++attempts;
        Acquisition a = in_line(3000, 1);
        a.answered = {"node a", "node b", "node c"};
        r.attempted(a, 0ms);
      }
      if (auto w = first<Wait>(r.last)) wake = w->until;
      r.clock.advance(1ms);
      r.step(wake && r.clock.now() >= *wake ? WaitEnded{End::kTimer} : WaitEnded{End::kTurn, 0ms, turn_nodes});
    }
    return attempts;
  };
  const int one = attempts_in_10s(1);
  EXPECT_GE(one, 20);
  EXPECT_LE(one, 40);
  EXPECT_LE(attempts_in_10s(2), 101);
}

// A waiter whose last attempt reached fewer nodes than a quorum: a turn from the nodes it
// reaches cannot make one, and its error backoff goes on.
TEST(Standby, ATurnDoesNotCutTheBackoffWhenNoQuorumAnswered) {
  StandbySettings s = settings(Mode::kSupervise);
  s.quorum = 2;
  Rig r(s);
  r.step(Begin{});
  Acquisition a = in_line(3000, 1);
  a.answered = {"node a"};
  a.errors.push_back({"node b", redisgo::redis::Fault::kTimeout, "node b: timeout"});
  a.errors.push_back({"node c", redisgo::redis::Fault::kTimeout, "node c: timeout"});
  r.attempted(a, 1ms);
  const auto until = first<Wait>(r.last)->until;
  r.clock.advance(5ms);
  r.step(WaitEnded{End::kTurn});
  EXPECT_FALSE(has<Attempt>(r.last));
  EXPECT_EQ(first<Wait>(r.last)->until, until);
}

namespace {
/// Attempts in 10 s of a waiter at `position` sent `message` every millisecond.
int attempts_under_flood(End message, std::int64_t position) {
  Rig r(settings(Mode::kSupervise));
  r.step(Begin{});
  int attempts = 0;
  std::optional<Clock::time_point> wake;
  for (int ms = 0; ms < 10'000; ++ms) {
    if (has<Attempt>(r.last)) {
      ++attempts;
      r.attempted(in_line(3000, position), 0ms);
    }
    if (auto w = first<Wait>(r.last)) wake = w->until;
    r.clock.advance(1ms);
    r.step(WaitEnded{wake && r.clock.now() >= *wake ? End::kTimer : message, 1ms});
  }
  return attempts;
}
}  // namespace

// A flood of (forged) turn or "next 1" messages never drives a waiter past the pacing: for
// turns two attempts per kTurnRetryGap (one of its own, one answering a turn), for "next"
// one per kMinAttemptGap.
TEST(Standby, AFloodOfTurnOrNextMessagesIsPaced) {
  const int turns = attempts_under_flood(End::kTurn, 1);
  EXPECT_GE(turns, 20);
  EXPECT_LE(turns, 40);
  EXPECT_LE(attempts_under_flood(End::kNext, 2), 100);
}

TEST(Standby, NextMessageTriesWhenTheWokenHeadsWindowHasEnded) {
  Rig r(settings(Mode::kSupervise));
  r.step(Begin{});
  r.attempted(in_line(3000, 2), 0ms);
  r.clock.advance(10ms);
  r.step(WaitEnded{End::kNext, 1000ms});
  EXPECT_FALSE(has<Attempt>(r.last));
  EXPECT_EQ(first<Wait>(r.last)->until, r.clock.now() + 1050ms);
  r.clock.advance(1050ms);
  r.step(WaitEnded{End::kTimer});
  EXPECT_TRUE(has<Attempt>(r.last));
  // A window that ends after our own next attempt changes nothing.
  Rig soon(settings(Mode::kSupervise));
  soon.step(Begin{});
  soon.attempted(in_line(300, 1), 0ms);
  soon.step(WaitEnded{End::kNext, 1000ms});
  EXPECT_EQ(first<Wait>(soon.last)->until, soon.machine.attempt_started() + 301ms);
}

// oneshot --wait-timeout: the wait ends at give_up_at whatever else waits (a holder's long
// TTL, the restart guard, a pause), never with an attempt past it; the first attempt always
// goes (the one try of --no-wait).
TEST(Standby, TheWaitTimeoutEndsTheWaitWhereverItIs) {
  auto base = settings(Mode::kOneshot);
  // A long TTL, the restart guard's wait, a stray signal's pacing: each Wait is cut at the bound.
  for (int kind = 0; kind < 3; ++kind) {
    FakeClock start;
    auto s = base;
    s.give_up_at = start.now() + (kind == 2 ? 50ms : 2s);
    Rig r(s);
    r.step(Begin{});
    ASSERT_TRUE(has<Attempt>(r.last));
    Acquisition a = held(60'000);
    if (kind == 1) {
      a = Acquisition{};
      a.answered = {"node"};
      a.guard_wait_ms = 30'000;
      a.guarded = {{"node", 30'000}};
    } else if (kind == 2) {
      a = Acquisition{};
      a.cancelled = true;
    }
    r.attempted(a, 10ms);
    if (kind == 2) {  // the first re-run goes at once; the second is paced
      ASSERT_TRUE(has<Attempt>(r.last));
      r.attempted(a, 5ms);
      EXPECT_EQ(r.machine.state(), StandbyState::kPacing);
    }
    const auto w = first<Wait>(r.last);
    ASSERT_TRUE(w) << kind;
    EXPECT_LE(w->until, *s.give_up_at) << kind;
    r.clock.advance(*s.give_up_at - r.clock.now());
    r.step(WaitEnded{End::kTimer});
    const auto g = first<GiveUp>(r.last);
    ASSERT_TRUE(g) << kind;
    EXPECT_TRUE(g->timed_out);
    EXPECT_FALSE(has<Attempt>(r.last));
    EXPECT_EQ(r.machine.state(), StandbyState::kGaveUp);
  }
}

TEST(Standby, AWakeAfterTheWaitTimeoutMakesNoAttempt) {
  for (End end : {End::kTurn, End::kReleased, End::kSubscribed, End::kNext}) {
    auto s = settings(Mode::kOneshot);
    FakeClock start;
    s.give_up_at = start.now() + 1s;
    Rig r(s);
    r.step(Begin{});
    r.attempted(held(60'000), 1ms);
    r.clock.advance(2s);
    r.step(WaitEnded{end, 1000ms});
    EXPECT_FALSE(has<Attempt>(r.last));
    ASSERT_TRUE(has<GiveUp>(r.last));
    EXPECT_TRUE(first<GiveUp>(r.last)->timed_out);
  }
}

TEST(Standby, AnAttemptThatEndsPastTheWaitTimeoutDecidesTheRun) {
  auto s = settings(Mode::kOneshot);
  FakeClock start;
  s.give_up_at = start.now() + 1s;
  // The first attempt, however long: a miss past the bound gives up at once, a grant leads.
  Rig miss(s);
  miss.step(Begin{});
  miss.attempted(held(60'000), 3s);
  ASSERT_TRUE(has<GiveUp>(miss.last));
  EXPECT_TRUE(first<GiveUp>(miss.last)->timed_out);
  EXPECT_TRUE(has<Report>(miss.last));
  EXPECT_EQ(miss.machine.last().busy, 1);  // the status follows from it: busy, 75
  Rig won(s);
  won.step(Begin{});
  won.attempted(granted(), 3s);
  EXPECT_TRUE(has<Lead>(won.last));
  // No bound: the same long wait goes on.
  Rig unbounded(settings(Mode::kOneshot));
  unbounded.step(Begin{});
  unbounded.attempted(held(60'000), 3s);
  EXPECT_FALSE(has<GiveUp>(unbounded.last));
  EXPECT_EQ(unbounded.machine.give_up_at(), std::nullopt);
}

// How a oneshot run that gives up ends is the machine's to say (the exit status and which last
// line), from the last attempt's verdict: busy (75) before a refusal of this host (77) unless
// so many refused that no quorum could grant it, then too few nodes answering (69), then the
// restart guard or a split (75).
TEST(Standby, AGiveUpCarriesItsExitStatusAndWhy) {
  using redisgo::kExitNoPerm;
  using redisgo::kExitTempFail;
  using redisgo::kExitUnavailable;
  using redisgo::redis::Fault;
  struct Row {
    const char* name;
    Acquisition acq;
    int status;
    GiveUp::Why why;
  };
  Acquisition busy_refused = failed_on({Fault::kAuth});
  busy_refused.answered = {"b", "c"};
  busy_refused.busy = 2;
  busy_refused.holder = "other";
  Acquisition refused_out = failed_on({Fault::kAuth, Fault::kTls});
  refused_out.answered = {"c"};
  refused_out.busy = 1;
  Acquisition guarded;
  guarded.answered = {"a", "b", "c"};
  guarded.guarded = {{"a", 900}};
  guarded.guard_wait_ms = 900;
  Acquisition down = failed_on({Fault::kConnect, Fault::kReply});
  const Row rows[] = {
      {"busy", held(3000), kExitTempFail, GiveUp::Why::kBusy},
      {"busy beside one refusal", busy_refused, kExitTempFail, GiveUp::Why::kBusy},
      {"refused by too many to be busy", refused_out, kExitNoPerm, GiveUp::Why::kRefused},
      {"tls", failed_on({Fault::kTls, Fault::kTls}), kExitNoPerm, GiveUp::Why::kRefused},
      {"no quorum", down, kExitUnavailable, GiveUp::Why::kNoQuorum},
      {"guard", guarded, kExitTempFail, GiveUp::Why::kGuarded},
  };
  for (const auto& row : rows) {
    StandbySettings s = settings(Mode::kOneshot);
    s.wait_flag = false;
    s.nodes = 3;
    s.quorum = 2;
    Rig r(s);
    r.step(Begin{});
    r.attempted(row.acq);
    const auto g = first<GiveUp>(r.last);
    ASSERT_TRUE(g) << row.name;
    EXPECT_EQ(g->exit_status, row.status) << row.name;
    EXPECT_EQ(g->why, row.why) << row.name;
    const auto report = first<Report>(r.last);
    ASSERT_TRUE(report) << row.name;
    EXPECT_TRUE(report->giving_up) << row.name;
    EXPECT_FALSE(report->look_for_larger_limit) << row.name;
  }
  // Stopped while waiting: oneshot 75, supervise 0.
  for (Mode mode : {Mode::kOneshot, Mode::kSupervise}) {
    Rig r(settings(mode));
    r.step(Begin{});
    r.attempted(held(3000));
    r.step(WaitEnded{End::kShutdown});
    ASSERT_TRUE(has<Stopped>(r.last));
    EXPECT_EQ(first<Stopped>(r.last)->exit_status, mode == Mode::kOneshot ? kExitTempFail : 0);
  }
}

// The terminal line of a long wait is redrawn from the miss on show, its countdowns aged.
TEST(Standby, AMissShownCarriesWhatTheLineShows) {
  Rig r(settings(Mode::kSupervise));
  r.step(Begin{});
  Acquisition acq = held(3000);
  acq.position = 2;
  acq.line_length = 4;
  r.attempted(acq, 10ms);
  const auto m = first<ShowMiss>(r.last);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->holder, "other");
  EXPECT_EQ(m->holder_ttl_ms, 3000);
  EXPECT_EQ(m->position, 2);
  EXPECT_EQ(m->line_length, 4);
  EXPECT_TRUE(m->quorum_answered);
  EXPECT_EQ(m->attempts, 1);
  const auto aged = m->aged(m->attempt_started + 1200ms);
  EXPECT_EQ(aged.holder_ttl_ms, 1800);
  EXPECT_EQ(aged.guard_wait_ms, -1);
  EXPECT_EQ(m->aged(m->attempt_started + 5s).holder_ttl_ms, 0);
  const auto report = first<Report>(r.last);
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->look_for_larger_limit);
  EXPECT_FALSE(report->blocked);
}

}  // namespace daemon_standby_test
