// `redisgo_task check` through the real binary against real redis-servers configured to
// trip each finding (redisgo_task(1), COMMANDS: check). Every run is bounded; servers are
// stopped by pid (support/redis_server.h). The pure thresholds are in
// tests/unit/commands_check_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "support/redis_server.h"
#include "support/redis_topologies.h"
#include "support/task_process.h"

namespace cli_check_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

RedisServerOptions configured(std::vector<std::string> lines) {
  RedisServerOptions o;
  o.extra_config = std::move(lines);
  return o;
}

/// A server that passes every per-node check.
RedisServerOptions healthy() { return configured({"appendonly yes", "maxmemory-policy noeviction"}); }

std::string nodes_line(const std::vector<std::string>& addresses) {
  std::string line = "nodes = [";
  for (std::size_t i = 0; i < addresses.size(); ++i) line += (i ? ", \"" : "\"") + addresses[i] + "\"";
  return line + "]";
}

class CliCheck : public ::testing::Test {
 protected:
  std::string config(const std::string& nodes, const std::string& extra_redis = "") {
    ConfigSpec spec;
    spec.nodes = nodes;
    spec.key = test_key();
    spec.extra_redis = extra_redis;
    spec.restart_guard = true;  // the default; check says so when it is off (a warn)
    return dir_.write("check-" + std::to_string(++configs_) + ".toml", make_config(spec));
  }
  std::string host_config(const RedisServer& s, const std::string& extra_redis = "") {
    return config("host = \"" + s.address() + "\"", extra_redis);
  }
  RunResult check(const std::string& cfg, bool json = false) {
    std::vector<std::string> args{"check", "--config", cfg};
    if (json) args.push_back("--json");
    return run_task_binary(args, 30s);
  }
  /// The first line that starts with "<level> <check>" and names `node` (if given).
  static std::string line_of(const std::string& out, const std::string& level, const std::string& check,
                             const std::string& node = "") {
    std::string prefix = level;
    prefix.resize(4, ' ');
    prefix += " " + check + (node.empty() ? ":" : " " + node + ":");
    for (const auto& l : split_lines(out)) {
      if (l.rfind(prefix, 0) == 0) return l;
    }
    return "";
  }

  TempDir dir_;
  int configs_ = 0;
};

TEST_F(CliCheck, HealthyServerIsAllOkAndExitsZero) {
  RedisServer s(healthy());
  auto r = check(host_config(s));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const auto lines = split_lines(r.out);
  ASSERT_GE(lines.size(), 8u) << r.out;
  for (const auto& l : lines) EXPECT_EQ(l.rfind("ok   ", 0), 0u) << l;
  for (const char* c : {"reachable", "version", "role", "maxmemory-policy", "persistence", "scripts", "clock"}) {
    EXPECT_NE(line_of(r.out, "ok", c, s.address()), "") << c << "\n" << r.out;
  }
  EXPECT_NE(line_of(r.out, "ok", "margins"), "") << r.out;
  // The clock line carries the measured offset and its bound.
  EXPECT_NE(line_of(r.out, "ok", "clock", s.address()).find("±"), std::string::npos) << r.out;
  EXPECT_NE(line_of(r.out, "ok", "persistence", s.address()).find("AOF on"), std::string::npos) << r.out;
}

// A lease key set by hand without an expiry never frees itself: the scripts line warns and says
// what to do, as `task` and `status` do (it said "ok ... ttl -1 ms").
TEST_F(CliCheck, ALeaseKeyWithoutAnExpiryWarns) {
  RedisServer s(healthy());
  const auto cfg = host_config(s);
  s.cli({"SET", test_key(), "manualholder"});
  auto r = check(cfg);
  const std::string line = line_of(r.out, "warn", "scripts", s.address());
  ASSERT_NE(line, "") << r.out;
  EXPECT_NE(line.find("no expiry"), std::string::npos) << line;
  EXPECT_NE(line.find("DEL " + test_key()), std::string::npos) << line;
  EXPECT_EQ(line.find("-1 ms"), std::string::npos) << line;
}

// Nothing but the required keys: every default passes, margins included (issue 20 item 2:
// the defaults used to warn "less than one cron").
TEST_F(CliCheck, AConfigOfDefaultsPasses) {
  RedisServer s(healthy());
  const auto cfg = dir_.write("defaults.toml", "[redis]\nhost = \"" + s.address() + "\"\nkey = \"" + test_key() +
                                                   "\"\n[task]\ncommand = [\"/bin/true\"]\n");
  auto r = check(cfg);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(line_of(r.out, "ok", "margins"), "") << r.out;
}

// Daemons of one key with different limits (issue 20 item 7): a limit = 3 daemon holds slot 1
// while a limit = 1 daemon takes the key, so two jobs run where the second daemon allows
// one. The smaller limit's daemon says it at error level; status and check show it.
TEST_F(CliCheck, MixedLimitsAreSaidByTaskStatusAndCheck) {
  RedisServer s(healthy());
  const std::string key = test_key();
  ASSERT_EQ(s.cli({"SET", "{" + key + "}:slot:1", "other:1:0123456789abcdef0123456789abcdef", "PX", "30000"}), "OK");
  ConfigSpec spec;
  spec.nodes = "host = \"" + s.address() + "\"";
  spec.key = key;
  spec.log_level = "info";
  const auto cfg = dir_.write("limit1.toml", make_config(spec));
  auto t = run_task_binary({"task", "--config", cfg, "--", "true"}, 10s);
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.err.find("1 slot(s) beyond this daemon's limit = 1 are held"), std::string::npos) << t.err;
  auto st = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_NE(st.out.find("limit:  1 slot(s) beyond limit = 1 are held"), std::string::npos) << st.out;
  auto r = check(cfg);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(line_of(r.out, "fail", "limit", s.address()), "") << r.out;
  // A daemon with the larger limit sees nothing wrong: its own slots.
  spec.extra_task = "limit = 3\n";
  r = check(dir_.write("limit3.toml", make_config(spec)));
  EXPECT_EQ(line_of(r.out, "fail", "limit", s.address()), "") << r.out;
}

// Attack round: with a user that lacked SET, PEXPIRE or the pause key, every line was ok and
// check exited 0 while the daemon could not run. The write path is now tried on scratch keys.
TEST_F(CliCheck, RightsTheDaemonLacksFailTheRightsCheck) {
  const std::string base = "~worker ~{worker}:* &{worker}:* +eval +evalsha +get +set +del +pexpire +pttl +time "
                           "+publish +subscribe +exists +hset +hget +hmget +info +zadd +zrem +zrange +zscore +zrank "
                           "+zcard +zremrangebyrank";
  // `check` as the user "redisgo" with these ACL rules, on a server of its own.
  auto check_as = [&](const std::string& rules, const std::function<void(const RedisServer&, const RunResult&)>& expect) {
    SCOPED_TRACE(rules);
    RedisServerOptions o = with_acl_user("user redisgo on >pw " + rules);
    o.extra_config = {"appendonly yes", "maxmemory-policy noeviction"};
    RedisServer s(o);
    ConfigSpec spec;
    spec.nodes = "host = \"" + s.address() + "\"";
    spec.key = "worker";
    spec.restart_guard = true;
    spec.extra_redis = "username = \"redisgo\"\npassword_env = \"RGT_CHECK_PW\"\n";
    expect(s, run_task_binary({"check", "--config", dir_.write("rights.toml", make_config(spec))}, 20s,
                              {{"RGT_CHECK_PW", "pw"}}));
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {base + " -set", "SET"},
      {base + " -pexpire", "PEXPIRE"},
      {base + " -evalsha", "not EVALSHA"},  // attack round, issue 19: check passed it
      {base + " -zrem", "ZREM"},             // and this one
      {"~worker ~{worker}:fence ~{worker}:line &{worker}:* +eval +evalsha +get +set +del +pexpire +pttl +time +info "
       "+zcard +zrange",
       "{worker}:pause"},
  };
  for (const auto& [rules, refused] : cases) {
    check_as(rules, [&](const RedisServer& s, const RunResult& r) {
      EXPECT_EQ(r.code, 1) << r.out;
      EXPECT_NE(line_of(r.out, "fail", "rights", s.address()).find(refused), std::string::npos) << r.out;
    });
  }
  // The right named as the daemon names a refused renewal ("+pexpire").
  check_as(base + " -pexpire", [&](const RedisServer& s, const RunResult& r) {
    EXPECT_NE(line_of(r.out, "fail", "rights", s.address()).find("Fix: grant +pexpire, "), std::string::npos) << r.out;
  });
  check_as(base, [&](const RedisServer& s, const RunResult& r) {
    EXPECT_NE(line_of(r.out, "ok", "rights", s.address()), "") << r.out;
    EXPECT_NE(line_of(r.out, "ok", "subscribe", s.address()), "") << r.out;
    EXPECT_EQ(s.cli({"EXISTS", "{worker}:check", "{worker}:check:line"}), "0") << "the scratch keys are gone";
  });
  // Attack round (issue 19): without +publish or +subscribe check said ok, and the daemon
  // then woke nobody or stood by without wake-on-release. Both warn, saying what it costs.
  check_as(base + " -publish", [&](const RedisServer& s, const RunResult& r) {
    EXPECT_EQ(r.code, 1) << r.out;
    const auto line = line_of(r.out, "warn", "rights", s.address());
    EXPECT_NE(line.find("may not PUBLISH where the release does"), std::string::npos) << r.out;
    EXPECT_NE(line.find("wakes nobody"), std::string::npos) << line;
  });
  check_as(base + " -subscribe", [&](const RedisServer& s, const RunResult& r) {
    EXPECT_EQ(r.code, 1) << r.out;
    const auto line = line_of(r.out, "warn", "subscribe", s.address());
    EXPECT_NE(line.find("may not SUBSCRIBE to {worker}:wake:check"), std::string::npos) << r.out;
    EXPECT_NE(line.find("takes over only when the lease expires"), std::string::npos) << line;
  });
  // A channel pattern that leaves out the wake channels: the same.
  check_as("~worker ~{worker}:* &{worker}:released &{worker}:control" + base.substr(base.find(" +eval")),
           [&](const RedisServer& s, const RunResult& r) {
             EXPECT_NE(line_of(r.out, "warn", "subscribe", s.address()), "") << r.out;
           });
  // And one that grants the wake channels only: a supervise leader would not hear `handover`
  // (attack round, issue 19: check said ok).
  check_as("~worker ~{worker}:* &{worker}:wake:*" + base.substr(base.find(" +eval")),
           [&](const RedisServer& s, const RunResult& r) {
             const auto line = line_of(r.out, "warn", "subscribe", s.address());
             EXPECT_NE(line.find("but not to {worker}:control"), std::string::npos) << r.out;
             EXPECT_NE(line.find("does not hear `handover`"), std::string::npos) << line;
           });
  // A key pattern that leaves out the waiting line: every acquisition is refused, so a fail
  // (attack round, issue 19: "ok" scripts, "ok" rights and only a warn on the line).
  check_as("~worker ~{worker}:fence ~{worker}:pause ~{worker}:check* &{worker}:*" + base.substr(base.find(" +eval")),
           [&](const RedisServer& s, const RunResult& r) {
             EXPECT_EQ(r.code, 1) << r.out;
             const auto line = line_of(r.out, "fail", "line", s.address());
             EXPECT_NE(line.find("may not read the waiting line {worker}:line"), std::string::npos) << r.out;
           });
}

// A waiting line of another type fails every acquisition: a fail that says to delete it, not
// an ACL hint (attack round, issue 19).
TEST_F(CliCheck, AWaitingLineOfAnotherTypeFails) {
  RedisServer s;
  s.cli({"SET", "{worker}:line", "x"});
  const auto cfg = dir_.write("wrongline.toml", "[redis]\nhost = \"" + s.address() + "\"\nkey = \"worker\"\n");
  const auto r = run_task_binary({"check", "--config", cfg}, 20s);
  EXPECT_EQ(r.code, 1) << r.out;
  const auto line = line_of(r.out, "fail", "line", s.address());
  EXPECT_NE(line.find("is not a sorted set"), std::string::npos) << r.out;
  EXPECT_NE(line.find("delete {worker}:line"), std::string::npos) << line;
}

TEST_F(CliCheck, EvictingPolicyWarns) {
  RedisServer s(configured({"appendonly yes", "maxmemory-policy allkeys-lru"}));
  auto r = check(host_config(s));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string line = line_of(r.out, "warn", "maxmemory-policy", s.address());
  ASSERT_NE(line, "") << r.out;
  EXPECT_NE(line.find("allkeys-lru"), std::string::npos) << line;
  EXPECT_NE(line.find("noeviction"), std::string::npos) << line;
  EXPECT_NE(line.find("maxmemory 0"), std::string::npos) << line;  // the default: eviction not yet armed
}

TEST_F(CliCheck, ReplicaFailsTheRoleCheck) {
  RedisServer master(healthy());
  RedisServer replica(configured({"appendonly yes", "maxmemory-policy noeviction",
                                  "replicaof 127.0.0.1 " + std::to_string(master.port())}));
  auto r = check(host_config(replica));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string line = line_of(r.out, "fail", "role", replica.address());
  ASSERT_NE(line, "") << r.out;
  EXPECT_NE(line.find("replica of " + master.address()), std::string::npos) << line;
  EXPECT_NE(line.find("writes would fail"), std::string::npos) << line;
  // The rights check meets the same READONLY: it names the replica, and advises no grant
  // (it once said "grant +set", which would change nothing).
  const std::string rights = line_of(r.out, "warn", "rights", replica.address());
  ASSERT_NE(rights, "") << r.out;
  EXPECT_NE(rights.find("read-only replica"), std::string::npos) << rights;
  EXPECT_EQ(r.out.find("grant +set"), std::string::npos) << r.out;
}

TEST_F(CliCheck, SameServerListedTwiceFailsWithItsRunId) {
  RedisServer a(healthy()), b(healthy());
  const std::string alias = "localhost:" + std::to_string(a.port());
  auto r = check(config(nodes_line({a.address(), alias, b.address()})));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string line = line_of(r.out, "fail", "same-server", a.address());
  ASSERT_NE(line, "") << r.out;
  std::string run_id;
  for (const auto& l : split_lines(a.cli({"INFO", "server"}))) {
    if (l.rfind("run_id:", 0) == 0) run_id = l.substr(7);
  }
  if (!run_id.empty() && run_id.back() == '\r') run_id.pop_back();
  ASSERT_FALSE(run_id.empty());
  EXPECT_NE(line.find(a.address() + " and " + alias + " are the same server (run_id " + run_id + ")"), std::string::npos)
      << line;
  EXPECT_NE(line.find("list each server once"), std::string::npos) << line;
  EXPECT_EQ(line.find(b.address()), std::string::npos) << line;
  // Every node answered: the quorum line is ok; only the duplicate fails.
  EXPECT_NE(line_of(r.out, "ok", "quorum"), "") << r.out;
}

TEST_F(CliCheck, NoPersistenceIsOkUnderTheRestartGuardAndWarnsWithoutIt) {
  RedisServer s(configured({"maxmemory-policy noeviction"}));  // test servers: save "", appendonly no
  auto r = check(host_config(s));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const std::string guarded = line_of(r.out, "ok", "persistence", s.address());
  ASSERT_NE(guarded, "") << r.out;
  EXPECT_NE(guarded.find("restart guard"), std::string::npos) << guarded;
  EXPECT_NE(line_of(r.out, "ok", "restart_guard", s.address()), "") << r.out;

  ConfigSpec off;
  off.nodes = "host = \"" + s.address() + "\"";
  off.key = test_key();
  r = check(dir_.write("check-off.toml", make_config(off)));  // restart_guard = false
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string line = line_of(r.out, "warn", "persistence", s.address());
  ASSERT_NE(line, "") << r.out;
  EXPECT_NE(line.find("appendonly no"), std::string::npos) << line;
  EXPECT_NE(line.find("one expire"), std::string::npos) << line;
  EXPECT_NE(line_of(r.out, "warn", "restart_guard", s.address()), "") << r.out;
}

TEST_F(CliCheck, OneNodeDownFailsItTwoDownIsNoQuorum) {
  RedisServer a(healthy()), b(healthy()), c(healthy());
  const std::string cfg = config(nodes_line({a.address(), b.address(), c.address()}));
  c.kill();
  auto r = check(cfg);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string line = line_of(r.out, "fail", "reachable", c.address());
  ASSERT_NE(line, "") << r.out;
  EXPECT_NE(line.find("unreachable"), std::string::npos) << line;
  EXPECT_NE(line_of(r.out, "ok", "reachable", a.address()), "") << r.out;
  EXPECT_NE(line_of(r.out, "warn", "quorum"), "") << r.out;

  b.kill();
  r = check(cfg);
  EXPECT_EQ(r.code, 69) << r.out << r.err;
  EXPECT_NE(line_of(r.out, "fail", "reachable", b.address()), "") << r.out;
  EXPECT_NE(line_of(r.out, "fail", "quorum"), "") << r.out;
  EXPECT_NE(line_of(r.out, "ok", "reachable", a.address()), "") << r.out;  // the survivor is still checked
}

TEST_F(CliCheck, RefusedCredentialsAreSaidSoAndNeverPrinted) {
  RedisServerOptions o = healthy();
  o.password = "s3cret-pass";
  RedisServer s(o);
  auto r = check(host_config(s, "password = \"wrong-pass\"\n"));
  EXPECT_EQ(r.code, 77) << r.out << r.err;  // the only node cannot be used: refused credentials, as elsewhere
  std::string line = line_of(r.out, "fail", "reachable", s.address());
  ASSERT_NE(line, "") << r.out;
  EXPECT_NE(line.find("credentials refused"), std::string::npos) << line;
  EXPECT_EQ(r.out.find("wrong-pass"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("s3cret-pass"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("wrong-pass"), std::string::npos) << r.err;

  // No password at all: the server's NOAUTH says it needs one.
  r = check(host_config(s));
  EXPECT_EQ(r.code, 77) << r.out << r.err;
  line = line_of(r.out, "fail", "reachable", s.address());
  EXPECT_NE(line.find("requires a password"), std::string::npos) << r.out;

  // The right one: every check runs.
  r = check(host_config(s, "password = \"s3cret-pass\"\n"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("s3cret-pass"), std::string::npos) << r.out;
}

TEST_F(CliCheck, PasswordForAServerWithoutOneIsNamed) {
  RedisServer s(healthy());
  auto r = check(host_config(s, "password = \"unneeded\"\n"));
  EXPECT_EQ(r.code, 77) << r.out << r.err;  // the credentials are wrong for this server
  const std::string line = line_of(r.out, "fail", "reachable", s.address());
  EXPECT_NE(line.find("credentials refused"), std::string::npos) << r.out;
  EXPECT_NE(line.find("drop the password"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("unneeded"), std::string::npos) << r.out;
}

TEST_F(CliCheck, JsonIsOneObjectWithTheFindings) {
  RedisServer good(healthy());
  RedisServer lru(configured({"appendonly yes", "maxmemory-policy allkeys-lru"}));
  auto r = check(host_config(good), true);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.front(), '{') << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - 2), "}\n") << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;  // one object, one line
  EXPECT_NE(r.out.find("\"findings\":[{"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"level\":\"ok\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"level\":\"warn\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"check\":\"clock\",\"node\":\"" + good.address() + "\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"offset_ms\":"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"node\":null"), std::string::npos) << r.out;  // margins concern the setup
  EXPECT_NE(r.out.find("\"exit\":0}"), std::string::npos) << r.out;

  r = check(host_config(lru), true);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("\"level\":\"warn\",\"check\":\"maxmemory-policy\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"policy\":\"allkeys-lru\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"exit\":1}"), std::string::npos) << r.out;
}

TEST_F(CliCheck, SentinelsAreAskedAndTheirMasterChecked) {
  SentinelSet set;
  auto r = check(config(set.config_lines()));
  // The test set has no persistence: under the restart guard that is ok; nothing warns.
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("\nfail"), std::string::npos) << r.out;
  EXPECT_NE(r.out.rfind("fail", 0), 0u) << r.out;
  const std::string master = set.master().address();
  EXPECT_NE(line_of(r.out, "ok", "sentinels").find(master), std::string::npos) << r.out;
  EXPECT_NE(line_of(r.out, "ok", "role", master), "") << r.out;
  EXPECT_NE(line_of(r.out, "ok", "replicas", master).find(set.replica().address()), std::string::npos) << r.out;
  EXPECT_NE(line_of(r.out, "ok", "persistence", master).find("restart guard"), std::string::npos) << r.out;
}

// sentinel_wait_replicas = 1 with a replica online: ok, whatever the sentinels' list says
// yet (issue 20 item 2: it failed "0 healthy replica(s) of 0" while WAIT worked).
TEST_F(CliCheck, SentinelWaitReplicasCountsTheMastersOnlineReplicas) {
  SentinelSet set;
  auto r = check(config(set.config_lines(), "sentinel_wait_replicas = 1\n"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(line_of(r.out, "ok", "replicas", set.master().address()).find("1 replica(s) online on the master"),
            std::string::npos)
      << r.out;
}

TEST_F(CliCheck, ClusterSlotOwnerIsChecked) {
  ClusterSet set;
  std::string seeds = "cluster_nodes = [\"" + set.node(0).address() + "\"]";
  auto r = check(config(seeds));
  EXPECT_EQ(r.code, 0) << r.out << r.err;  // no persistence on the test cluster: ok under the restart guard
  const std::string owner_line = line_of(r.out, "ok", "cluster");
  ASSERT_NE(owner_line, "") << r.out;
  EXPECT_EQ(r.out.find("\nfail"), std::string::npos) << r.out;
  EXPECT_NE(r.out.rfind("fail", 0), 0u) << r.out;
  // The node that serves the key's slot got the per-node checks.
  bool found = false;
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (owner_line.find("served by " + set.node(i).address()) != std::string::npos) {
      found = true;
      EXPECT_NE(line_of(r.out, "ok", "role", set.node(i).address()), "") << r.out;
      EXPECT_NE(line_of(r.out, "ok", "scripts", set.node(i).address()), "") << r.out;
    }
  }
  EXPECT_TRUE(found) << owner_line;
}

}  // namespace

}  // namespace cli_check_test
