// One verdict per acquisition attempt (lock/verdict.h): what the nodes' answers and failures
// come to, as table tests of classify(); and the messages of the lease's channels (lock/wake.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lock/verdict.h"
#include "lock/wake.h"

namespace lock_verdict_test {

using namespace std::chrono_literals;
using redisgo::lock::Acquisition;
using redisgo::lock::classify;
using redisgo::lock::Control;
using redisgo::lock::NodeError;
using redisgo::lock::NoQuorum;
using redisgo::lock::Verdict;
using redisgo::lock::Wake;
using redisgo::redis::Fault;
using Kind = Verdict::Kind;

namespace {

/// An attempt on `nodes.size()` nodes: "a" answered (busy), "x" failed with `fault`, "-" had
/// not answered when the attempt was decided.
struct Node {
  std::string name;
  char what;  // 'a' answered, 'x' failed, '-' no answer yet
  Fault fault = Fault::kNone;
};
Acquisition attempt(const std::vector<Node>& nodes) {
  Acquisition a;
  for (const auto& n : nodes) {
    if (n.what == 'a') a.answered.push_back(n.name);
    if (n.what == 'x') a.errors.push_back({n.name, n.fault, n.name + ": " + redisgo::redis::to_string(n.fault)});
  }
  return a;
}

}  // namespace

TEST(Verdict, KindsOfAMiss) {
  struct Row {
    const char* name;
    Acquisition acq;
    Kind kind;
  };
  Acquisition granted;
  granted.acquired = true;
  Acquisition busy = attempt({{"a", 'a'}});
  busy.holder = "host2:7:abc";
  busy.busy = 1;
  Acquisition paused = busy;
  paused.holder = "\x01pause:1:alice@ops:migration";
  Acquisition turn = busy;
  turn.holder = "\x01turn:host3:8:def";
  Acquisition guarded = attempt({{"a", 'a'}});
  guarded.guard_wait_ms = 900;
  Acquisition split = attempt({{"a", 'a'}});
  split.votes = 1;
  Acquisition minority = busy;  // named by one node of three: no quorum's holder
  minority.holder_node = "a";
  const Row rows[] = {
      {"granted", granted, Kind::kGranted},
      {"busy", busy, Kind::kBusy},
      {"paused", paused, Kind::kPaused},
      {"turn", turn, Kind::kTurn},
      {"guarded", guarded, Kind::kGuarded},
      {"split", split, Kind::kSplit},
      {"minority holder", minority, Kind::kSplit},
      {"nothing answered", attempt({{"a", 'x', Fault::kTimeout}}), Kind::kNoQuorum},
  };
  for (const auto& row : rows) EXPECT_EQ(classify(row.acq, 1, 1).kind, row.kind) << row.name;
  EXPECT_TRUE(classify(paused, 1, 1).pause.has_value());
  EXPECT_EQ(classify(paused, 1, 1).pause->by, "alice@ops");
  EXPECT_TRUE(classify(turn, 1, 1).turn);
}

// Only nodes that failed prove a quorum missing; the cause an operator must fix comes first:
// a refusal of this host, then an error reply, then nodes down.
TEST(Verdict, NoQuorumAndItsCause) {
  struct Row {
    const char* name;
    std::vector<Node> nodes;
    bool no_quorum;
    NoQuorum cause;
    const char* blame;
  };
  const Row rows[] = {
      {"two of three answer", {{"a", 'a'}, {"b", 'a'}, {"c", 'x', Fault::kAuth}}, false, NoQuorum::kUnreachable, ""},
      {"one down, one not yet", {{"a", 'a'}, {"b", 'x', Fault::kConnect}, {"c", '-'}}, false, NoQuorum::kUnreachable, ""},
      {"timeout then refused", {{"a", 'x', Fault::kTimeout}, {"b", 'x', Fault::kAuth}, {"c", 'a'}}, true,
       NoQuorum::kCredentials, "b"},
      {"reply then tls", {{"a", 'x', Fault::kReply}, {"b", 'x', Fault::kTls}, {"c", '-'}}, true, NoQuorum::kTls, "b"},
      {"connect then reply", {{"a", 'x', Fault::kConnect}, {"b", 'x', Fault::kReply}, {"c", '-'}}, true,
       NoQuorum::kErrorReply, "b"},
      {"down", {{"a", 'x', Fault::kConnect}, {"b", 'x', Fault::kTimeout}, {"c", 'a'}}, true, NoQuorum::kUnreachable,
       "a"},
  };
  for (const auto& row : rows) {
    const Verdict v = classify(attempt(row.nodes), 3, 2);
    ASSERT_EQ(v.no_quorum(), row.no_quorum) << row.name;
    if (!row.no_quorum) continue;
    EXPECT_EQ(v.cause, row.cause) << row.name;
    ASSERT_TRUE(v.blame) << row.name;
    EXPECT_EQ(v.blame->node, row.blame) << row.name;
  }
  // A failure of the whole round counts as one more failed node.
  Acquisition round = attempt({{"a", 'x', Fault::kTimeout}, {"b", '-'}, {"c", '-'}});
  EXPECT_FALSE(classify(round, 3, 2).no_quorum());
  round.errors.push_back(redisgo::lock::round_failure("fence raised on 1 node(s)"));
  EXPECT_TRUE(classify(round, 3, 2).no_quorum());
  EXPECT_TRUE(classify(round, 3, 2).round_failed);
  EXPECT_EQ(classify(round, 3, 2).failed, 1) << "a round failure names no node";
}

// The counts a give-up and redisgo_task_node_up read: whether a node's server answered (an
// error reply, refused credentials) is another question than whose fix it is (TLS: this host's,
// but no server answered).
TEST(Verdict, CountsAndTheNodesThatAreDown) {
  const Acquisition acq = attempt({{"a", 'x', Fault::kReply},
                                   {"b", 'x', Fault::kAuth},
                                   {"c", 'x', Fault::kTls},
                                   {"d", 'x', Fault::kTimeout},
                                   {"e", 'a'}});
  const Verdict v = classify(acq, 5, 3);
  EXPECT_EQ(v.answered, 1);
  EXPECT_EQ(v.failed, 4);
  EXPECT_EQ(v.down, 2) << "TLS and the timeout";
  EXPECT_EQ(v.refusals, 2) << "credentials and TLS";
  ASSERT_TRUE(v.refusal);
  EXPECT_EQ(v.refusal->node, "b");
  EXPECT_EQ(v.example, "a: reply");
  EXPECT_FALSE(v.refused_out) << "three nodes are left for a quorum of three";
  EXPECT_EQ(redisgo::lock::down_nodes(acq.errors), (std::vector<std::string>{"c", "d"}));
  EXPECT_TRUE(classify(attempt({{"a", 'x', Fault::kAuth}, {"b", 'x', Fault::kTls}, {"c", 'a'}}), 3, 2).refused_out);
  EXPECT_FALSE(classify(attempt({{"a", 'x', Fault::kAuth}, {"b", 'a'}, {"c", 'a'}}), 3, 2).refused_out);
  EXPECT_EQ(redisgo::lock::cause_of({"n", Fault::kTls, ""}), NoQuorum::kTls);
  EXPECT_STREQ(redisgo::lock::to_string(NoQuorum::kErrorReply), "error");
  EXPECT_STREQ(redisgo::lock::to_string(NoQuorum::kCredentials), "credentials");
}

TEST(Verdict, ARefusalThatAsksForAPasswordIsSaidSo) {
  Acquisition acq;
  acq.errors = {{"a", Fault::kAuth, "redis a: NOAUTH Authentication required."}};
  EXPECT_TRUE(classify(acq, 1, 1).wants_password);
  acq.errors[0].message = "redis a: WRONGPASS invalid username-password pair";
  EXPECT_FALSE(classify(acq, 1, 1).wants_password);
}

TEST(WakeMessage, WhatAWaiterHears) {
  struct Row {
    const char* payload;
    bool fair;
    Wake wake;
  };
  const Row rows[] = {
      {"turn", true, {Wake::Kind::kTurn, 0ms}},
      {"next 1500", true, {Wake::Kind::kNext, 1500ms}},
      {"next 0", true, {}},
      {"next ", true, {}},
      {"next 12a", true, {}},
      {"next 1234567890", true, {}},  // more than nine digits
      {"next 999999999", true, {Wake::Kind::kNext, 999999999ms}},
      {"host2:7:abc", true, {}},  // a release on our wake channel is not ours to read
      {"host2:7:abc", false, {Wake::Kind::kReleased, 0ms}},
      {"me:1:0", false, {}},  // our own release
      {"turn", false, {Wake::Kind::kReleased, 0ms}},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(redisgo::lock::read_wake(row.payload, row.fair, "me:1:0"), row.wake) << row.payload << " " << row.fair;
  }
}

TEST(WakeMessage, WhatALeaderHears) {
  using redisgo::lock::read_control;
  EXPECT_EQ(read_control("me:1:0", "me:1:0"), Control::kHandover);
  EXPECT_EQ(read_control("any", "me:1:0"), Control::kHandover);
  EXPECT_EQ(read_control("pause me:1:0", "me:1:0"), Control::kPauseStop);
  EXPECT_EQ(read_control("pause other:1:0", "me:1:0"), Control::kNone);
  EXPECT_EQ(read_control("other:1:0", "me:1:0"), Control::kNone);
  // An older version names the leader by its lease id (found by the attack: an old handover
  // asked a new leader in vain).
  EXPECT_EQ(read_control("me:1:0#3", "me:1:0"), Control::kHandover);
  EXPECT_EQ(read_control("pause me:1:0#3", "me:1:0"), Control::kPauseStop);
  EXPECT_EQ(read_control("other:1:0#3", "me:1:0"), Control::kNone);
  EXPECT_EQ(read_control("me:1:0#x", "me:1:0"), Control::kNone);
}

}  // namespace lock_verdict_test
