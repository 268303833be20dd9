// `redisgo_task list` through the real binary against real servers: one node, Redlock with
// nodes down, Sentinel and Cluster, and the README's least-privilege user (issue 20 item 5).
// Keys are made the way daemons make them: by running the binary.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/redis_server.h"
#include "support/redis_topologies.h"
#include "support/task_process.h"

namespace cli_list_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

class CliList : public ::testing::Test {
 protected:
  std::string config(const std::string& nodes, const std::string& key, const std::string& mode = "oneshot",
                     const std::string& extra_task = "") {
    ConfigSpec spec;
    spec.nodes = nodes;
    spec.key = key;
    spec.mode = mode;
    spec.log_level = "info";
    spec.extra_task = extra_task;
    return dir_.write("list-" + std::to_string(++configs_) + ".toml", make_config(spec));
  }
  RunResult list(const std::string& cfg, const std::vector<std::string>& more = {}) {
    std::vector<std::string> args{"list", "--config", cfg};
    args.insert(args.end(), more.begin(), more.end());
    return run_task_binary(args, 30s);
  }
  /// The line of `out` that starts with "<key>: ".
  static std::string line_of(const std::string& out, const std::string& key) {
    for (const auto& l : split_lines(out)) {
      if (l.rfind(key + ": ", 0) == 0) return l;
    }
    return "";
  }
  TempDir dir_;
  int configs_ = 0;
};

TEST_F(CliList, OneNodeShowsHolderLineClaimsAndFreeKeysAndFilters) {
  RedisServer redis;
  const std::string host = "host = \"" + redis.address() + "\"";
  // A once_per job that ran (free now, its claim recorded), a supervise leader with a standby.
  ASSERT_EQ(run_task_binary({"task", "--config", config(host, "jobs:report", "oneshot", "once_per = \"60s\"\n"), "--",
                             "true"},
                            10s)
                .code,
            0);
  const auto worker = config(host, "jobs:worker", "supervise");
  TaskProcess leader(dir_.path(), "leader", {"task", "--config", worker, "--", "sleep", "30"});
  ASSERT_TRUE(leader.wait_for_log("child started", 10s)) << leader.err();
  TaskProcess standby(dir_.path(), "standby", {"task", "--config", worker, "--", "sleep", "30"});
  ASSERT_TRUE(wait_until([&] { return redis.cli({"ZCARD", "{jobs:worker}:line"}) == "1"; }, 5s)) << standby.err();
  // Not ours: a name that ends in ":fence" but that no key derives.
  redis.cli({"SET", "plain:fence", "12"});
  // once_per's witness lives beside the claims ("{K}:once:witness"): it is no claim.
  redis.cli({"HSET", "{jobs:report}:once:witness", "slot", "1795000000", "durable", "1"});

  auto r = list(worker);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const std::string w = line_of(r.out, "jobs:worker");
  EXPECT_NE(w.find("held by "), std::string::npos) << r.out;
  EXPECT_NE(w.find(" since 20"), std::string::npos) << w;
  EXPECT_NE(w.find("1 waiting in line"), std::string::npos) << w;
  EXPECT_NE(w.find("token " + redis.cli({"GET", "{jobs:worker}:fence"})), std::string::npos) << w;
  EXPECT_NE(line_of(r.out, "jobs:report").find("jobs:report: free, token "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  once_per: last slot "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exit status 0"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("plain"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("witness"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("1970"), std::string::npos) << r.out;

  r = list(worker, {"--pattern", "*work*", "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("{\"keys\":[{\"key\":\"jobs:worker\",\"state\":\"held\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("jobs:report"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one JSON object, one line";
  for (auto* p : {&leader, &standby}) p->signal(SIGTERM);
  for (auto* p : {&leader, &standby}) EXPECT_EQ(p->wait_for(10s), 0) << p->err();
}

TEST_F(CliList, RedlockNeedsAQuorumOfNodesScanned) {
  RedisServer a, b, c;
  const std::string nodes = "nodes = [\"" + a.address() + "\", \"" + b.address() + "\", \"" + c.address() + "\"]";
  const auto cfg = config(nodes, "rl:job", "supervise");
  TaskProcess leader(dir_.path(), "leader", {"task", "--config", cfg, "--", "sleep", "30"});
  ASSERT_TRUE(leader.wait_for_log("child started", 10s)) << leader.err();
  c.stop();
  auto r = list(cfg);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(line_of(r.out, "rl:job").find("held by "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node " + c.address() + ": not scanned: "), std::string::npos) << r.out;
  b.stop();
  r = list(cfg);
  EXPECT_EQ(r.code, 69) << r.out << r.err;
  EXPECT_NE(line_of(r.out, "rl:job").find("unreadable"), std::string::npos) << r.out;
  leader.signal(SIGTERM);
  leader.wait_for(10s);
}

TEST_F(CliList, SentinelListsTheMastersKeys) {
  SentinelSet set;
  const auto cfg = config(set.config_lines(), "sn:job");
  ASSERT_EQ(run_task_binary({"task", "--config", cfg, "--", "true"}, 10s).code, 0);
  auto r = list(cfg);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(line_of(r.out, "sn:job").find("sn:job: free, token "), std::string::npos) << r.out;
}

TEST_F(CliList, ClusterScansEveryMaster) {
  ClusterSet set;
  const std::string seeds = "cluster_nodes = [\"" + set.node(0).address() + "\"]";
  // Keys whose slots live on different masters.
  std::vector<std::string> keys;
  std::vector<std::size_t> owners;
  for (const char* k : {"a", "b", "c", "d", "e", "f"}) {
    const auto owner = set.owner_of(std::stoi(set.node(0).cli({"CLUSTER", "KEYSLOT", std::string("{") + k + "}"})));
    if (std::find(owners.begin(), owners.end(), owner) != owners.end()) continue;
    owners.push_back(owner);
    keys.push_back(k);
  }
  ASSERT_GE(keys.size(), 2u);
  for (const auto& k : keys) {
    ASSERT_EQ(run_task_binary({"task", "--config", config(seeds, k), "--", "true"}, 10s).code, 0) << k;
  }
  auto r = list(config(seeds, keys.front()));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  for (const auto& k : keys) EXPECT_NE(line_of(r.out, k).find(": free, token "), std::string::npos) << k << "\n" << r.out;
}

// The README's daemon user may not SCAN: list says which right it lacks (77), never a
// silent empty list.
TEST_F(CliList, AUserWithoutScanIsToldWhatItLacks) {
  RedisServer redis(with_acl_user("user redisgo on >pw ~worker ~{worker}:* +eval +evalsha +get +pttl +zcard"));
  ConfigSpec spec;
  spec.nodes = "host = \"" + redis.address() + "\"";
  spec.key = "worker";
  spec.extra_redis = "username = \"redisgo\"\npassword_env = \"RGT_LIST_PW\"\n";
  const auto cfg = dir_.write("acl.toml", make_config(spec));
  auto r = run_task_binary({"list", "--config", cfg}, 10s, {{"RGT_LIST_PW", "pw"}});
  EXPECT_EQ(r.code, 77) << r.out << r.err;
  EXPECT_NE(r.out.find("list needs +scan"), std::string::npos) << r.out;
  // The refusal first, and no "no keys found" before or after it: nothing was scanned.
  EXPECT_EQ(r.out.rfind("node " + redis.address() + ": not scanned: ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("no keys found"), std::string::npos) << r.out;
}

// A key the user may not read is refused before its script runs, which caches nothing: with
// the script cache empty (a restart, SCRIPT FLUSH) the keys after it are still read.
TEST_F(CliList, AnUnreadableKeyLeavesTheNextReadableWithAnEmptyScriptCache) {
  RedisServer redis(with_acl_user("user redisgo on >pw ~b:mine ~{b:mine}:* +@all"));
  const std::string host = "host = \"" + redis.address() + "\"";
  for (const std::string key : {"a:theirs", "b:mine"}) {
    ASSERT_EQ(run_task_binary({"task", "--config", config(host, key), "--", "true"}, 10s).code, 0) << key;
  }
  ConfigSpec spec;
  spec.nodes = host;
  spec.key = "b:mine";
  spec.extra_redis = "username = \"redisgo\"\npassword_env = \"RGT_LIST_PW\"\n";
  const auto cfg = dir_.write("mine.toml", make_config(spec));
  EXPECT_EQ(redis.cli({"SCRIPT", "FLUSH"}), "OK");
  auto r = run_task_binary({"list", "--config", cfg}, 10s, {{"RGT_LIST_PW", "pw"}});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(line_of(r.out, "a:theirs").find("unreadable"), std::string::npos) << r.out;
  EXPECT_NE(line_of(r.out, "a:theirs").find("NOPERM"), std::string::npos) << r.out;
  EXPECT_NE(line_of(r.out, "b:mine").find("b:mine: free, token "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("NOSCRIPT"), std::string::npos) << r.out;
}

// A semaphore's slot key that something else wrote (a list here) is named as such; the key's
// lease, its token and its other slots are still listed (it once made the whole key
// "unreadable (WRONGTYPE ...)").
TEST_F(CliList, ASlotKeyOfAnotherTypeIsNamedAndTheRestOfTheKeyListed) {
  RedisServer redis;
  const std::string host = "host = \"" + redis.address() + "\"";
  const auto cfg = config(host, "jobs:sem", "oneshot", "limit = 3\n");
  ASSERT_EQ(run_task_binary({"task", "--config", cfg, "--", "true"}, 10s).code, 0);
  EXPECT_EQ(redis.cli({"SET", "{jobs:sem}:slot:1", "otherhost:7:abc#1", "PX", "60000"}), "OK");
  EXPECT_EQ(redis.cli({"RPUSH", "{jobs:sem}:slot:2", "x"}), "1");
  auto r = list(cfg);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(line_of(r.out, "jobs:sem").find("jobs:sem: free, token "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  slot 1: held by otherhost:7:abc, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  slot 2: a list key, not a lease"), std::string::npos) << r.out;
  r = list(cfg, {"--json"});
  EXPECT_NE(r.out.find("\"other_type_slots\":[{\"slot\":2,\"type\":\"list\"}]"), std::string::npos) << r.out;
}

}  // namespace

}  // namespace cli_list_test
