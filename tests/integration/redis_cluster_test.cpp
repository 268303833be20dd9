// Redis Cluster (issue 10): three masters made with `redis-cli --cluster create` on
// loopback. The locator finds the owner of the key's hash slot from seeds that do not own
// it; the key, fence counter and release channel share that slot; a holder renewing
// while the slot migrates (MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE) keeps its lease
// (ASK during the move, MOVED after it), and nobody else's child runs meanwhile; the
// waiting line moves with the slot and its head is still woken at the release.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <sstream>

#include "redis/connection.h"
#include "redis/topology.h"
#include "support/records.h"
#include "support/redis_server.h"
#include "support/redis_topologies.h"
#include "support/storm_meter.h"
#include "support/task_process.h"

namespace redis_cluster_test {

using namespace std::chrono_literals;
using namespace redisgo;
using namespace redisgo::testing;

namespace {

/// `cluster_nodes = [...]` naming only the given nodes of `set`.
std::string seeds(ClusterSet& set, const std::vector<std::size_t>& which) {
  std::string line = "cluster_nodes = [";
  for (std::size_t i = 0; i < which.size(); ++i) {
    line += (i ? ", \"" : "\"") + set.node(which[i]).address() + "\"";
  }
  return line + "]\n";
}

TEST(ClusterSlot, HashSlotsMatchRedis) {
  ClusterSet set;
  for (const std::string key : {"rgt:lock", "{rgt:lock}:fence", "a", "{}x", "x{}{y}", "ünïcode key", ""}) {
    EXPECT_EQ(std::to_string(redis::hash_slot(key)), set.node(0).cli({"CLUSTER", "KEYSLOT", key})) << key;
  }
}

class ClusterTask : public ::testing::Test {
 protected:
  std::string config(ClusterSet& set, const std::vector<std::size_t>& which, ConfigSpec spec) {
    spec.nodes = seeds(set, which);
    spec.key = test_key();
    return dir_.write("cluster-" + std::to_string(++n_) + ".toml", make_config(spec));
  }
  TempDir dir_;
  int n_ = 0;
};

TEST_F(ClusterTask, SeedsThatDoNotOwnTheSlotLeadToItsOwner) {
  ClusterSet set;
  const int slot = redis::hash_slot(test_key());
  const std::size_t owner = set.owner_of(slot);
  std::vector<std::size_t> others;
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (i != owner) others.push_back(i);
  }
  ConfigSpec spec;
  const std::string cfg = config(set, others, spec);
  const std::string ran = dir_.path() + "/ran";
  TaskProcess a(dir_.path(), "a", {"task", "--config", cfg, "--", "sh", "-c", "echo $REDISGO_TASK_TOKEN >> " + ran});
  ASSERT_EQ(a.wait_for(15s), 0) << a.err();
  EXPECT_EQ(split_lines(read_file(ran)).size(), 1u) << a.err();
  // The fence counter lives on the owner, next to the key (same slot); nothing elsewhere.
  EXPECT_NE(set.node(owner).cli({"EXISTS", "{" + test_key() + "}:fence"}), "0") << a.err();
  for (auto i : others) EXPECT_EQ(set.node(i).cli({"DBSIZE"}), "0");
  // status finds the owner from the same seeds.
  auto st = run_task_binary({"status", "--config", cfg}, 15s);
  EXPECT_EQ(st.code, 0) << st.err << st.out;
  EXPECT_NE(st.out.find("cluster: slot " + std::to_string(slot) + " served by " + set.node(owner).address()),
            std::string::npos) << st.out;
  EXPECT_NE(st.out.find("server " + set.node(owner).address()), std::string::npos) << st.out;
  auto js = run_task_binary({"status", "--config", cfg, "--json"}, 15s);
  EXPECT_NE(js.out.find("\"owner\":\"" + set.node(owner).address() + "\""), std::string::npos) << js.out;
}

TEST_F(ClusterTask, ASlotMigrationWhileLeadingKeepsTheLeaseAndNobodyElseRuns) {
  ClusterSet set;
  const int slot = redis::hash_slot(test_key());
  const std::size_t from = set.owner_of(slot);
  const std::size_t to = (from + 1) % set.size();
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.expire = "4s";
  spec.cron = "300ms";
  spec.kill_grace = "500ms";
  spec.io_timeout = "300ms";
  const std::string records = dir_.path() + "/records";
  spec.extra_task = "command = [\"" + recorder_binary() + "\", \"" + records + "\", \"0\"]\n";
  const std::string cfg = config(set, {0, 1, 2}, spec);
  TaskProcess a(dir_.path(), "a", {"task", "--config", cfg});
  ASSERT_TRUE(a.wait_for_log("child started", 15s)) << a.err();
  TaskProcess b(dir_.path(), "b", {"task", "--config", cfg});
  ASSERT_TRUE(b.wait_for_log("lease busy", 15s)) << b.err();
  // B waits in the key's line (fair by default), in the same slot: it moves with the key.
  const std::string line = "{" + test_key() + "}:line";
  ASSERT_TRUE(wait_until([&] { return set.node(from).cli({"ZCARD", line}) == "1"; }, 10s)) << b.err();

  StormMeter meter({&set.node(0), &set.node(1), &set.node(2)}, {dir_.path() + "/a.err", dir_.path() + "/b.err"}, 2);
  meter.start();
  set.migrate(slot, to, [&] {
    // Keys moved, slot not yet: the source answers ASK. Hold here for a few renewals.
    const long long before = script_calls(set.node(to));
    EXPECT_TRUE(wait_until([&] { return script_calls(set.node(to)) >= before + 3; }, 10s, 50ms)) << a.err();
  });
  // After SETSLOT NODE: MOVED, the map is learned again, renewals go to the new owner.
  const long long before = script_calls(set.node(to));
  EXPECT_TRUE(wait_until([&] { return script_calls(set.node(to)) >= before + 3; }, 10s, 50ms)) << a.err();
  meter.expect_bounds(meter.stop());
  EXPECT_EQ(a.err().find("lease lost"), std::string::npos) << a.err();
  EXPECT_EQ(b.err().find("child started"), std::string::npos) << b.err();

  EXPECT_EQ(set.node(to).cli({"ZCARD", line}), "1") << "the line moved with the slot";

  // Released on the new owner, published there: the standby takes over at once (the wake
  // reaches it across the cluster bus), not after the lease's 4 s.
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
  const auto released = std::chrono::steady_clock::now();
  ASSERT_TRUE(b.wait_for_log("child started", 15s)) << b.err();
  // The wake: under 1 ms measured after a's exit (b's start follows a's release by the
  // publish); without it b would take the key at its next attempt, when the 4 s lease ran
  // out. 2 s is half that.
  EXPECT_LT(std::chrono::steady_clock::now() - released, 2s) << b.err();
  ASSERT_TRUE(wait_until([&] { return check_records(records, {}).children.size() == 2; }, 10s)) << b.err();
  b.signal(SIGTERM);
  EXPECT_EQ(b.wait_for(10s), 0) << b.err();
  const auto check = check_records(records, {});
  EXPECT_EQ(check.overlaps, 0);
  for (const auto& p : check.problems) ADD_FAILURE() << p;
  ASSERT_EQ(check.children.size(), 2u);
  EXPECT_LT(check.children[0].token, check.children[1].token);
}

// Attack round 10: the release script listed the release channel among its keys, so a
// slot in MIGRATING state answered TRYAGAIN (the "key" never exists): the release failed
// as "deleted nothing" and the lease stayed for its TTL.
TEST_F(ClusterTask, AReleaseWhileTheSlotIsMigratingReleases) {
  ClusterSet set;
  const int slot = redis::hash_slot(test_key());
  const std::size_t from = set.owner_of(slot);
  const std::size_t to = (from + 1) % set.size();
  ConfigSpec spec;
  spec.expire = "10s";
  spec.cron = "1s";
  const std::string cfg = config(set, {0, 1, 2}, spec);
  const std::string go = dir_.path() + "/go";
  TaskProcess a(dir_.path(), "a", {"task", "--config", cfg, "--", "sh", "-c",
                                   "while [ ! -e " + go + " ]; do sleep 0.02; done"});
  ASSERT_TRUE(a.wait_for_log("child started", 15s)) << a.err();
  // The slot starts to move; its keys have not (the lease key is still on the source).
  set.node(to).cli({"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", set.id_of(from)});
  set.node(from).cli({"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", set.id_of(to)});
  dir_.write("go", "");
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
  EXPECT_EQ(a.err().find("deleted nothing"), std::string::npos) << a.err();
  EXPECT_NE(a.err().find("released key="), std::string::npos) << a.err();
  // Gone from the source: a MIGRATING node answers ASK for a key it does not have.
  const std::string left = set.node(from).cli({"EXISTS", test_key()});
  EXPECT_TRUE(left == "0" || left.rfind("ASK ", 0) == 0) << left;
}

}  // namespace

}  // namespace redis_cluster_test
