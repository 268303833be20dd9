// The keeper's deadline rule (process/deadline_rule.h; docs/DESIGN.md, invariant 2) as
// tables: the deadline messages in the order sent, the time, what the keeper does. The
// keeper carries the rule out with real processes (tests/integration/task_keeper_test.cpp).
#include <gtest/gtest.h>

#include <csignal>
#include <vector>

#include "process/deadline_rule.h"

namespace process_deadline_rule_test {

using redisgo::process::DeadlineMessage;
using redisgo::process::DeadlineMove;
using redisgo::process::DeadlineSettings;
using redisgo::process::DeadlineState;
using redisgo::process::decide;
using redisgo::process::take;
using Kind = DeadlineMove::Kind;

namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kS = 1000 * kMs;

// The operator's setup: expire 6 s, cron 1 s, kill_grace 2 s.
DeadlineSettings settings(int kill_signal = SIGTERM) {
  return DeadlineSettings{2 * kS, 1 * kS, kill_signal};
}

// A renewal sent at `sent_s`, valid 5.8 s from then, written to the keeper 10 ms later.
DeadlineMessage renewal(double sent_s) {
  const auto sent = static_cast<std::int64_t>(sent_s * kS);
  return DeadlineMessage{sent + 5800 * kMs, sent, sent + 10 * kMs};
}

DeadlineState armed(std::int64_t deadline, std::int64_t heard = 0) { return DeadlineState{deadline, heard, false}; }

}  // namespace

// The operator's item: the keeper stopped 5 s (less than expire) while the daemon renewed
// every second. On resume it reads the whole backlog and keeps the child: the oldest
// message alone names a deadline already past (what the old keeper acted on).
TEST(DeadlineRule, AKeeperResumedWithinTheLeaseActsOnTheLastDeadlineNotAStaleOne) {
  // Before the stop, the deadline from the renewal at 10 s: 15.8 s.
  DeadlineState state = armed(renewal(10).deadline_ns, renewal(10).sent_ns);
  std::vector<DeadlineMessage> backlog;
  for (int s = 11; s <= 15; ++s) backlog.push_back(renewal(s));  // sent while it was stopped
  const std::int64_t resumed = 16 * kS;  // past 15.8 s
  EXPECT_EQ(decide(state, resumed, settings()), (DeadlineMove{Kind::kKill, 0}));  // the bug: the stale view
  EXPECT_EQ(decide(state, backlog, resumed, settings()), (DeadlineMove{Kind::kWait, renewal(15).deadline_ns - 2 * kS}));
  EXPECT_EQ(state.deadline_ns, renewal(15).deadline_ns);
}

// An extension counts only if it was decided before the deadline it replaces; a cut counts
// whenever it was decided.
TEST(DeadlineRule, AnExtensionDecidedAfterTheDeadlineDoesNotCountACutAlwaysDoes) {
  struct Row {
    const char* what;
    std::int64_t deadline, decided;  // the message
    std::int64_t want;               // the deadline after it
  };
  const std::int64_t held = 10 * kS;
  const std::vector<Row> rows = {
      {"extension decided before", 15 * kS, 9 * kS, 15 * kS},
      {"extension decided just before", 15 * kS, held - 1, 15 * kS},
      {"extension decided at the deadline", 15 * kS, held, held},
      {"extension decided after (a renewal by a daemon that woke late)", 15 * kS, 11 * kS, held},
      {"cut decided before", 8 * kS, 7 * kS, 8 * kS},
      {"cut decided after", 8 * kS, 12 * kS, 8 * kS},
      {"the same again (the daemon runs)", held, 5 * kS, held},
      {"none, decided before", 0, 9 * kS, 0},
      {"none, decided after", 0, 11 * kS, held},
  };
  for (const auto& row : rows) {
    const DeadlineState after = take(armed(held), DeadlineMessage{row.deadline, row.decided, row.decided});
    EXPECT_EQ(after.deadline_ns, row.want) << row.what;
  }
  // Nothing held yet: the first deadline counts whenever it was decided.
  EXPECT_EQ(take(armed(0), DeadlineMessage{5 * kS, 7 * kS, 7 * kS}).deadline_ns, 5 * kS);
}

// A late extension does not undo a kill that was due, even followed by more renewals that
// chain from it: they were all decided after the deadline that holds.
TEST(DeadlineRule, ARenewalChainFromALateRenewalDoesNotCancelAKill) {
  DeadlineState state = armed(10 * kS);
  const std::vector<DeadlineMessage> late = {renewal(10.5), renewal(11.5), renewal(12.5)};
  EXPECT_EQ(decide(state, late, 13 * kS, settings()).kind, Kind::kKill);
  EXPECT_EQ(state.deadline_ns, 10 * kS);
}

// What the keeper does as the deadline comes: SIGKILL at it (a keeper that wakes past it
// kills at once), and kill_signal kill_grace before it only when the daemon has been silent
// for a tick; otherwise the daemon stops its child itself and the keeper waits.
TEST(DeadlineRule, TheKeeperSignalsOnlyForASilentDaemonAndKillsAtTheDeadline) {
  const std::int64_t deadline = 10 * kS;  // stop time 8 s, tick 1 s
  struct Row {
    const char* what;
    std::int64_t now, heard;
    bool signalled;
    int kill_signal;
    DeadlineMove want;
  };
  const std::vector<Row> rows = {
      {"long before", 5 * kS, 5 * kS, false, SIGTERM, {Kind::kWait, 8 * kS}},
      {"at the stop time, daemon heard 0.5 s ago", 8 * kS, 7500 * kMs, false, SIGTERM, {Kind::kWait, 8500 * kMs + 1}},
      {"at the stop time, daemon heard exactly a tick ago", 8 * kS, 7 * kS, false, SIGTERM, {Kind::kWait, 8 * kS + 1}},
      {"at the stop time, daemon silent for more than a tick", 8 * kS, 6 * kS, false, SIGTERM, {Kind::kSignal, 0}},
      {"daemon falls silent late in the grace", 9900 * kMs, 8800 * kMs, false, SIGTERM, {Kind::kSignal, 0}},
      {"daemon silent only after the deadline", 9500 * kMs, 9200 * kMs, false, SIGTERM, {Kind::kWait, deadline}},
      {"signalled already", 9 * kS, 6 * kS, true, SIGTERM, {Kind::kWait, deadline}},
      {"no kill_signal", 9 * kS, 6 * kS, false, 0, {Kind::kWait, deadline}},
      {"at the deadline, daemon talking", deadline, deadline, false, SIGTERM, {Kind::kKill, 0}},
      {"woke past the deadline: no kill_signal first", 12 * kS, 0, false, SIGTERM, {Kind::kKill, 0}},
  };
  for (const auto& row : rows) {
    const DeadlineState state{deadline, row.heard, row.signalled};
    EXPECT_EQ(decide(state, row.now, settings(row.kill_signal)), row.want) << row.what;
  }
  EXPECT_EQ(decide(DeadlineState{}, 12 * kS, settings()), (DeadlineMove{Kind::kWait, 0})) << "no deadline";
}

// Every message says the daemon ran when it was written; a later deadline brings a new
// stop time, whose kill_signal is still to come.
TEST(DeadlineRule, MessagesSayTheDaemonRunsAndAnExtensionRearmsTheSignal) {
  DeadlineState state{10 * kS, 5 * kS, true};
  state = take(state, DeadlineMessage{10 * kS, 4 * kS, 9 * kS});
  EXPECT_EQ(state.heard_ns, 9 * kS);
  EXPECT_TRUE(state.signalled);  // the same deadline
  state = take(state, DeadlineMessage{14 * kS, 8 * kS, 8500 * kMs});  // written before the last one was read
  EXPECT_EQ(state.heard_ns, 9 * kS);
  EXPECT_EQ(state.deadline_ns, 14 * kS);
  EXPECT_FALSE(state.signalled);
  state.signalled = true;
  state = take(state, DeadlineMessage{12 * kS, 9 * kS, 9 * kS});  // a cut keeps it
  EXPECT_TRUE(state.signalled);
}

// The rest of what the keeper knows comes from the rule too: its start, a forwarded signal
// (a sign of life that moves no deadline), the kill_signal it sent, whether a job may start.
TEST(DeadlineRule, ASignalRequestIsASignOfLifeAndMovesNoDeadline) {
  using redisgo::process::heard;
  using redisgo::process::started;
  const DeadlineState s = started(10 * kS, 1 * kS);
  EXPECT_EQ(s.deadline_ns, 10 * kS);
  EXPECT_EQ(s.heard_ns, 1 * kS);
  EXPECT_FALSE(s.signalled);
  // Silent since 1 s, the stop time (8 s) come: the keeper signals. A forwarded signal written
  // at 7.5 s is the daemon alive: the keeper leaves the stop to it a tick longer.
  EXPECT_EQ(decide(s, 8 * kS, settings()).kind, Kind::kSignal);
  const DeadlineState later = heard(s, 7500 * kMs);
  EXPECT_EQ(later.deadline_ns, 10 * kS);
  EXPECT_EQ(decide(later, 8 * kS, settings()), (DeadlineMove{Kind::kWait, 8500 * kMs + 1}));
  EXPECT_EQ(heard(later, 2 * kS).heard_ns, 7500 * kMs);  // an older stamp read late: no step back
}

TEST(DeadlineRule, KillSignalGoesOncePerDeadline) {
  using redisgo::process::signalled;
  const DeadlineState s = signalled(armed(10 * kS, 0));
  EXPECT_EQ(decide(s, 9 * kS, settings()), (DeadlineMove{Kind::kWait, 10 * kS}));
  EXPECT_EQ(decide(s, 10 * kS, settings()).kind, Kind::kKill);
}

TEST(DeadlineRule, NoJobStartsOnceTheLeaseCanHaveEnded) {
  using redisgo::process::may_start;
  EXPECT_TRUE(may_start(0, 5 * kS));  // no deadline
  EXPECT_TRUE(may_start(10 * kS, 9999 * kMs));
  EXPECT_FALSE(may_start(10 * kS, 10 * kS));
  EXPECT_FALSE(may_start(10 * kS, 11 * kS));
}

}  // namespace process_deadline_rule_test
