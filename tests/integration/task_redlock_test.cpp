// End-to-end Redlock tests: the real daemon over three real redis-servers (issue 4),
// with nodes SIGSTOPped, killed and restarted empty while contenders run.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <thread>

#include "support/redis_server.h"
#include "support/storm_meter.h"
#include "support/task_process.h"

namespace task_redlock_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

class TaskRedlock : public ::testing::Test {
 protected:
  TaskRedlock() {
    for (int i = 0; i < 3; ++i) nodes_.push_back(std::make_unique<RedisServer>());
  }
  std::string config(ConfigSpec spec) {
    std::string list;
    for (const auto& n : nodes_) list += (list.empty() ? "\"" : ", \"") + n->address() + "\"";
    spec.nodes = "nodes = [" + list + "]";
    spec.key = test_key();
    return dir_.write("task-" + std::to_string(++configs_) + ".toml", make_config(spec));
  }
  /// A supervise leader renewing every 200 ms of a 2 s lease, logging at info.
  static ConfigSpec supervise_spec() {
    ConfigSpec spec;
    spec.mode = "supervise";
    spec.expire = "2s";
    spec.cron = "200ms";
    spec.log_level = "info";
    return spec;
  }
  std::vector<std::string> task(const std::string& cfg, const std::string& script) {
    return {"task", "--config", cfg, "--", "/bin/sh", "-c", script};
  }

  std::vector<std::unique_ptr<RedisServer>> nodes_;
  TempDir dir_;
  int configs_ = 0;
};

TEST_F(TaskRedlock, OneshotRunsWithAllNodesAndWithOneDown) {
  auto cfg = config({});
  auto r = run_task_binary(task(cfg, "echo token=$REDISGO_TASK_TOKEN"), 10s);
  EXPECT_EQ(r.code, 0) << r.err;
  nodes_[2]->kill();
  r = run_task_binary(task(cfg, "exit 5"), 10s);
  EXPECT_EQ(r.code, 5) << r.err;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(nodes_[i]->cli({"EXISTS", test_key()}), "0") << "released on node " << i;
}

TEST_F(TaskRedlock, TwoOfThreeDownIsNoQuorum) {
  ConfigSpec spec;
  spec.extra_redis = "monitor_try_all = false\nretries_count = 2\n";
  auto cfg = config(spec);
  nodes_[1]->kill();
  nodes_[2]->kill();
  auto r = run_task_binary(task(cfg, "echo ran"), 10s);
  EXPECT_EQ(r.code, 69) << r.err;  // no quorum reachable: EX_UNAVAILABLE
  EXPECT_EQ(r.out.find("ran"), std::string::npos);
  EXPECT_EQ(nodes_[0]->cli({"EXISTS", test_key()}), "0") << "a failed quorum leaves nothing held";

  // supervise keeps contending, and gets the lease once a quorum is back.
  spec.mode = "supervise";
  spec.extra_redis = "";
  auto sup = config(spec);
  std::string marks = dir_.path() + "/marks";
  TaskProcess p(dir_.path(), "sup", task(sup, "echo up >> " + marks + "; exec sleep 60"));
  ASSERT_TRUE(p.wait_for_log("acquire: redis", 10s)) << p.err();
  EXPECT_TRUE(p.running());
  EXPECT_EQ(read_file(marks), "");
  nodes_[1]->start();
  ASSERT_TRUE(wait_until([&] { return read_file(marks) == "up\n"; }, 10s)) << p.err();
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(10s), 0) << p.err();
}

// Invariant 8: a node that accepts connections but never answers (SIGSTOPped) costs a run
// nothing once a quorum has answered. With io_timeout at 15 s, a step of a oneshot run that
// waited for every node (the look for a larger limit, asked before the first child) would take
// 15 s; the run takes milliseconds. The bound, 8 s, is the property: well under the 15 s that
// one such wait costs, and far above a healthy run.
TEST_F(TaskRedlock, AFrozenMinorityNodeDelaysNoChild) {
  ConfigSpec spec;
  spec.io_timeout = "15s";
  spec.expire = "60s";
  spec.cron = "5s";
  spec.log_level = "info";
  const auto cfg = config(spec);
  nodes_[2]->pause();
  const auto start = std::chrono::steady_clock::now();
  auto r = run_task_binary(task(cfg, "echo ran"), 30s);
  const auto took = std::chrono::steady_clock::now() - start;
  nodes_[2]->resume();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("ran"), std::string::npos) << r.err;
  EXPECT_LT(took, 8s) << "a step waited for the frozen node: " << r.err;
}

// The same for once_per's record of how the run ended, written before the release: a frozen
// node must not hold up the release (and so the next holder) by io_timeout. (The claim itself
// awaits every node's answer before the child starts, by design: a witness any node shows
// counts for all; docs/DESIGN.md "Restart guard".) Bound: 1.5 s from the child's end to the
// run's end, against the 2.5 s io_timeout one such wait costs.
TEST_F(TaskRedlock, AFrozenMinorityNodeDoesNotDelayTheReleaseOfAOncePerRun) {
  ConfigSpec spec;
  spec.io_timeout = "2500ms";
  spec.expire = "30s";
  spec.cron = "5s";
  spec.log_level = "info";
  spec.extra_task = "once_per = \"1h\"\n";
  const auto cfg = config(spec);
  nodes_[2]->pause();
  const std::string end = dir_.path() + "/end";
  auto r = run_task_binary(task(cfg, "echo ran; date +%s%N > " + end), 30s);
  const auto finished_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
  nodes_[2]->resume();
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string stamp = read_file(end);
  ASSERT_FALSE(stamp.empty()) << r.err;
  const long long child_end_ns = std::stoll(stamp);
  EXPECT_LT(finished_ns - child_end_ns, 1'500'000'000LL) << "the release waited for the frozen node: " << r.err;
}

TEST_F(TaskRedlock, LeaderLosingQuorumStopsItsChildBeforeTheDeadline) {
  // Two of three nodes frozen: no quorum can confirm a renewal.
  expect_child_stopped_before_lease_ends(
      dir_.path(), config(fault_config_spec()),
      [&] {
        nodes_[0]->pause();
        nodes_[1]->pause();
      },
      300ms,
      [&] {
        nodes_[0]->resume();
        nodes_[1]->resume();
      });
}

TEST_F(TaskRedlock, FiveContendersStayExclusiveWhileNodesComeAndGo) {
  // Short jobs from 5 oneshot contenders while, one at a time, a node is frozen,
  // killed, or restarted empty (no sooner than one TTL after it went down).
  // A 2 s lease: with ASan and 15 daemons on 2 cores, a child's start-up alone has taken
  // 500 ms, and a 1 s lease then left it too little to run (stopped in time, exit 75).
  ConfigSpec spec;
  spec.expire = "2s";
  spec.cron = "300ms";
  spec.kill_grace = "500ms";
  auto cfg = config(spec);
  std::string log = dir_.path() + "/intervals.log";
  std::string script = interval_job(log, "0.1");
  constexpr int kRounds = 3;
  std::vector<std::unique_ptr<TaskProcess>> procs;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < 5; ++i) {
      procs.push_back(std::make_unique<TaskProcess>(dir_.path(), "c" + std::to_string(round) + std::to_string(i),
                                                    task(cfg, script)));
    }
    // A fault per round, on a different node each time.
    RedisServer& node = *nodes_[static_cast<std::size_t>(round)];
    switch (round) {
      case 0:
        node.pause();
        std::this_thread::sleep_for(400ms);
        node.resume();
        break;
      case 1:
        node.kill();
        std::this_thread::sleep_for(2100ms);  // down for more than one TTL
        node.start();                         // back empty
        break;
      default:
        node.stop();
        std::this_thread::sleep_for(2100ms);
        node.start();
        break;
    }
  }
  for (auto& p : procs) {
    auto code = p->wait_for(60s);
    ASSERT_TRUE(code.has_value()) << p->err();
    EXPECT_EQ(*code, 0) << p->err();
  }
  expect_exclusive_intervals(read_file(log), 5 * kRounds);
}

}  // namespace

namespace {

// After-run of the fault-proof core (1b): the key deleted on one node of three while a
// leader renews on the other two. The leader keeps its quorum (no lease lost, no second
// child), says so once, naming the node, and its next renewal sets the key there again.
TEST_F(TaskRedlock, ALeaseGoneFromOneNodeIsSaidOnceAndSetAgain) {
  ConfigSpec spec = supervise_spec();
  auto cfg = config(spec);
  TaskProcess a(dir_.path(), "a", task(cfg, "exec sleep 60"));
  ASSERT_TRUE(a.wait_for_log("child started", 10s)) << a.err();
  const std::string holder = nodes_[1]->cli({"GET", test_key()});
  ASSERT_TRUE(wait_renewed(*nodes_[0], test_key(), 5s)) << a.err();  // ours there, as the daemon knows
  nodes_[0]->cli({"DEL", test_key()});
  ASSERT_TRUE(a.wait_for_log("the lease was gone from this node", 5s)) << a.err();
  EXPECT_EQ(nodes_[0]->cli({"GET", test_key()}), holder);
  // Several more renewals: still said once.
  std::this_thread::sleep_for(1200ms);  // six more rounds of cron 200 ms: the window observed, not a sync
  std::size_t said = 0;
  for (const auto& line : split_lines(a.err())) said += line.find("the lease was gone from this node") != std::string::npos;
  EXPECT_EQ(said, 1u) << a.err();
  EXPECT_NE(a.err().find(nodes_[0]->address()), std::string::npos) << a.err();
  EXPECT_EQ(a.err().find("lease lost"), std::string::npos) << a.err();
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
}

// A fault on a minority node that outlives one lead (a corrupt fence counter there) is said
// once and then summarised, not afresh at every acquisition and renewal (attack round, issue
// 19: ~50 warnings a minute with short jobs; invariant 7).
TEST_F(TaskRedlock, AMinorityNodesLastingFaultIsSaidOnceAcrossLeads) {
  nodes_[2]->cli({"SET", "{" + test_key() + "}:fence", "junk"});
  ConfigSpec spec = supervise_spec();
  spec.extra_task = "restart = \"never\"\nrestart_delay = \"100ms\"\n";
  auto cfg = config(spec);
  TaskProcess a(dir_.path(), "a", task(cfg, "sleep 0.2"));
  ASSERT_TRUE(wait_until([&] {
    std::size_t leads = 0;
    for (const auto& line : split_lines(a.err())) leads += line.find("child started") != std::string::npos;
    return leads >= 6;
  }, 20s)) << a.err();
  std::size_t said = 0, warnings = 0;
  for (const auto& line : split_lines(a.err())) {
    said += line.find("is not an integer") != std::string::npos;
    warnings += line.find(" warn ") != std::string::npos;
  }
  EXPECT_LE(said, 2u) << a.err();
  EXPECT_LE(warnings, 4u) << a.err();
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
}

// Found by the ASan suite (FiveContenders... above, 1 run in 5 under load): a waiter
// woken by a release won a quorum while the release had not yet reached the third node,
// so its lease stood on two nodes only, and the next node to fail took the quorum and the
// child with it. Here the third node holds another holder's key when the leader
// acquires; once that key is gone (its release arrives), the leader's renewals set its
// own there, so a node killed afterwards costs nothing.
TEST_F(TaskRedlock, ALeaseWonOnABareQuorumIsCompletedAndSurvivesTheNextNodeFailure) {
  auto cfg = config(leader_standby_spec());
  nodes_[2]->cli({"SET", test_key(), "an-earlier-holder", "PX", "60000"});
  const std::string marks = dir_.path() + "/marks";
  TaskProcess a(dir_.path(), "a", task(cfg, "echo up >> " + marks + "; exec sleep 60"));
  ASSERT_TRUE(a.wait_for_log("child started", 10s)) << a.err();
  const std::string holder = nodes_[0]->cli({"GET", test_key()});
  ASSERT_EQ(nodes_[2]->cli({"GET", test_key()}), "an-earlier-holder");  // led on a bare quorum
  nodes_[2]->cli({"DEL", test_key()});                                  // the late release
  ASSERT_TRUE(wait_until([&] { return nodes_[2]->cli({"GET", test_key()}) == holder; }, 5s)) << a.err();
  // Completed there without a word: that node never had our key (an earlier holder's was
  // there), so nothing was lost from it.
  EXPECT_EQ(a.err().find("gone from this node"), std::string::npos) << a.err();
  nodes_[1]->kill();
  // Three lease lengths on nodes 0 and 2: the child runs on, never stopped or restarted.
  StormMeter meter({nodes_[0].get(), nodes_[2].get()}, {dir_.path() + "/a.err"}, 1);
  meter.expect_bounds(meter.measure(4500ms));
  EXPECT_EQ(read_file(marks), "up\n") << a.err();
  EXPECT_EQ(a.err().find("stopping child"), std::string::npos) << a.err();
  EXPECT_EQ(a.err().find("lease lost"), std::string::npos) << a.err();
  EXPECT_TRUE(a.running());
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
}

}  // namespace

}  // namespace task_redlock_test
