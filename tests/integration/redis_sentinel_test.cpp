// Redis Sentinel (issue 10): a master, a replica and three sentinels on loopback. The
// locator names the master and follows a failover; a supervise daemon that leads keeps
// its lease across a manual failover and across the master's death (the sentinels'
// failover), renews on the new master, releases there, and the next holder gets a
// higher token; nobody else's child runs meanwhile. The storm bounds hold on every
// sentinel and node while the master is down.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "redis/connection.h"
#include "redis/poller.h"
#include "redis/topology.h"
#include "support/records.h"
#include "support/redis_server.h"
#include "support/redis_topologies.h"
#include "support/storm_meter.h"
#include "support/task_process.h"

namespace redis_sentinel_test {

using namespace std::chrono_literals;
using namespace redisgo;
using namespace redisgo::testing;

namespace {

redis::SentinelOptions sentinel_options(const SentinelSet& set) {
  redis::SentinelOptions o;
  for (const auto& a : set.sentinel_addresses()) {
    redis::ConnectionOptions c;
    c.endpoint = *redis::Endpoint::parse(a);
    c.connect_timeout = 500ms;
    c.io_timeout = 500ms;
    o.sentinels.push_back(c);
  }
  o.master = SentinelSet::kMaster;
  o.requery_every = 1000ms;
  return o;
}

TEST(SentinelLocator, NamesTheMasterAndFollowsAFailover) {
  SentinelSet set;
  auto locator = redis::make_sentinel_locator(sentinel_options(set));
  redis::ConnectionOptions o;
  o.locator = locator;
  o.connect_timeout = 1000ms;
  o.io_timeout = 1000ms;
  redis::AsyncConnection conn(o);
  auto calls = redis::run_commands(conn, {{"SET", test_key(), "1"}});
  ASSERT_TRUE(calls[0]->ok()) << calls[0]->error();
  EXPECT_EQ(conn.current().str(), set.master().address());
  EXPECT_NE(conn.describe().find("master 'mymaster'"), std::string::npos) << conn.describe();
  const auto generation = locator->generation();

  set.failover();
  // +switch-master (or the periodic re-query) moves the locator; the connection follows
  // before its next command.
  ASSERT_TRUE(wait_until([&] { return locator->known() && locator->known()->str() == set.master().address(); }, 10s));
  EXPECT_NE(locator->generation(), generation);
  EXPECT_TRUE(conn.stale());
  auto after = redis::run_commands(conn, {{"SET", test_key(), "2"}});
  ASSERT_TRUE(after[0]->ok()) << after[0]->error();
  EXPECT_EQ(conn.current().str(), set.master().address());
  EXPECT_EQ(set.master().cli({"GET", test_key()}), "2");
}

TEST(SentinelLocator, AnUnknownMasterNameFailsClearlyAndIsNotAStorm) {
  SentinelSet set;
  auto o = sentinel_options(set);
  o.master = "nosuchmaster";
  auto locator = redis::make_sentinel_locator(o);
  redis::ConnectionOptions c;
  c.locator = locator;
  c.connect_timeout = 500ms;
  c.io_timeout = 500ms;
  redis::AsyncConnection conn(c);
  StormMeter meter({&set.sentinel(0), &set.sentinel(1), &set.sentinel(2)}, {}, 1);
  meter.start();
  for (int i = 0; i < 8; ++i) {
    auto calls = redis::run_commands(conn, {{"PING"}});
    ASSERT_FALSE(calls[0]->ok());
    if (i == 0) {
      EXPECT_NE(calls[0]->error().find("no majority of the sentinels (2 of 3) named one master for 'nosuchmaster'"), std::string::npos)
          << calls[0]->error();
    }
  }
  meter.expect_bounds(meter.stop());
}

/// The start and stop lines of a records file (its heartbeats left out).
std::string grep_starts(const std::string& records) {
  std::string out;
  for (const auto& line : split_lines(records)) {
    if (line.rfind("beat ", 0) != 0) out += line + "\n";
  }
  return out;
}

class SentinelTask : public ::testing::Test {
 protected:
  std::string config(const SentinelSet& set, ConfigSpec spec) {
    spec.nodes = set.config_lines();
    spec.key = test_key();
    return dir_.write("sentinel-" + std::to_string(++n_) + ".toml", make_config(spec));
  }
  /// once_per = "1h" on key `name`, logged at info (the claim tests read the log), with an
  /// io_timeout (500 ms) shorter than a late replica's acknowledgement.
  std::string once_config(const SentinelSet& set, const std::string& name) {
    ConfigSpec spec;
    spec.nodes = set.config_lines();
    spec.key = test_key(name);
    spec.log_level = "info";
    spec.io_timeout = "500ms";
    spec.extra_task = "once_per = \"1h\"\n";
    return dir_.write("once-" + name + ".toml", make_config(spec));
  }
  /// A leader (a) and a standby (b), both supervise, their children recording their lives
  /// (redisgo_soak_child). `fault` happens while a leads; a must keep its lease and child
  /// and renew on the new master; then a stops, b takes over there with a higher token.
  void lead_then_hand_over(SentinelSet& set, ConfigSpec spec, const std::function<void()>& fault) {
    const std::string records = dir_.path() + "/records";
    spec.extra_task = "command = [\"" + recorder_binary() + "\", \"" + records + "\", \"0\"]\n";
    const std::string cfg = config(set, spec);
    TaskProcess a(dir_.path(), "a", {"task", "--config", cfg});
    ASSERT_TRUE(a.wait_for_log("child started", 15s)) << a.err();
    TaskProcess b(dir_.path(), "b", {"task", "--config", cfg});
    ASSERT_TRUE(b.wait_for_log("lease busy", 15s)) << b.err();
    EXPECT_NE(a.err().find("a failover can lose the lease key"), std::string::npos) << a.err();

    auto st = run_task_binary({"status", "--config", cfg}, 15s);
    EXPECT_EQ(st.code, 0) << st.err << st.out;
    EXPECT_NE(st.out.find("server " + set.master().address()), std::string::npos) << st.out;
    EXPECT_NE(st.out.find(": master " + set.master().address() + ", replicas " + set.replica().address()),
              std::string::npos) << st.out;

    fault();
    // The leader renews on the new master: its script calls there go up, its lease and
    // its child stay.
    const long long before = script_calls(set.master());
    EXPECT_TRUE(wait_until([&] { return script_calls(set.master()) >= before + 3; }, 15s, 100ms)) << a.err();
    EXPECT_EQ(a.err().find("lease lost"), std::string::npos) << a.err();
    EXPECT_EQ(b.err().find("child started"), std::string::npos) << b.err();

    // Released on the new master: the standby takes over there.
    a.signal(SIGTERM);
    EXPECT_EQ(a.wait_for(10s), 0) << a.err();
    ASSERT_TRUE(b.wait_for_log("child started", 15s)) << b.err();
    // Its child's own start record, so the stop below cannot beat it.
    ASSERT_TRUE(wait_until([&] { return check_records(records, {}).children.size() == 2; }, 10s)) << b.err();
    b.signal(SIGTERM);
    EXPECT_EQ(b.wait_for(10s), 0) << b.err();
    const auto check = check_records(records, {});
    EXPECT_EQ(check.overlaps, 0);
    for (const auto& p : check.problems) ADD_FAILURE() << p;
    ASSERT_EQ(check.children.size(), 2u) << grep_starts(read_file(records)) << a.err() << b.err();
    EXPECT_LT(check.children[0].token, check.children[1].token);
  }
  TempDir dir_;
  int n_ = 0;
};

/// The manual failovers' supervise spec: a 4 s lease renewed every 400 ms.
ConfigSpec failover_spec() {
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.expire = "4s";
  spec.cron = "400ms";
  spec.kill_grace = "500ms";
  spec.io_timeout = "300ms";
  return spec;
}

TEST_F(SentinelTask, AManualFailoverWhileLeadingKeepsTheLeaseAndMovesTheRenewals) {
  SentinelSet set;
  lead_then_hand_over(set, failover_spec(), [&] { set.failover(); });
}

// The waiting line (docs/DESIGN.md "The waiting line"): a failover may lose it (replication
// is asynchronous). Lost here on purpose once the new master serves: nobody deadlocks, the
// standby rejoins or takes the lease at its TTL, and exclusion holds.
TEST_F(SentinelTask, AFailoverThatLosesTheWaitingLineStillHandsOver) {
  SentinelSet set;
  lead_then_hand_over(set, failover_spec(), [&] {
    set.failover();
    set.master().cli({"DEL", "{" + test_key() + "}:line"});
  });
}

// Issue 20: a failover was followed silently: the lease's key moved to another server (and
// may have been lost on the way) and no log line said so. Now one info line per change,
// however many sentinels announce it and whether +switch-master or a re-query told first.
TEST_F(SentinelTask, AFollowedFailoverIsSaidOncePerChange) {
  SentinelSet set;
  ConfigSpec spec = failover_spec();
  spec.log_level = "info";
  spec.extra_task = "command = [\"/bin/sleep\", \"60\"]\n";
  TaskProcess a(dir_.path(), "a", {"task", "--config", config(set, spec)});
  ASSERT_TRUE(a.wait_for_log("child started", 15s)) << a.err();
  const std::string first = set.master().address(), second = set.replica().address();
  const std::string there = "Sentinel failover: master mymaster moved from " + first + " to " + second + " (learnt by ";
  const std::string back = "Sentinel failover: master mymaster moved from " + second + " to " + first + " (learnt by ";

  set.failover();
  ASSERT_TRUE(a.wait_for_log(there, 10s)) << a.err();
  // Every sentinel's +switch-master and a few re-queries (one per cron) come meanwhile.
  std::this_thread::sleep_for(2s);
  set.failover();
  ASSERT_TRUE(a.wait_for_log(back, 10s)) << a.err();
  std::this_thread::sleep_for(2s);
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
  const std::string err = a.err();
  std::size_t said = 0;
  for (const auto& line : split_lines(err)) said += line.find("Sentinel failover:") != std::string::npos ? 1 : 0;
  EXPECT_EQ(said, 2u) << err;
  EXPECT_NE(err.find(" info  [redis] " + there), std::string::npos) << "at info, by the redis logger\n" << err;
  EXPECT_EQ(err.find("lease lost"), std::string::npos) << err;
}

TEST_F(SentinelTask, TheMasterKilledWhileLeadingFollowsTheSentinelsFailoverWithoutAStorm) {
  SentinelSet set;
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.expire = "12s";
  spec.cron = "1s";
  spec.kill_grace = "1s";
  spec.io_timeout = "300ms";
  lead_then_hand_over(set, spec, [&] {
    StormMeter meter({&set.sentinel(0), &set.sentinel(1), &set.sentinel(2), &set.replica()},
                     {dir_.path() + "/a.err", dir_.path() + "/b.err"}, 2);
    meter.start();
    set.kill_master();
    meter.expect_bounds(meter.stop());
  });
}

/// Milliseconds into the day of a text log line ("2026-...T10:40:54.538Z info ..."); -1 if not one.
long long log_ms(const std::string& line) {
  int h = 0, m = 0, sec = 0, ms = 0;
  const auto t = line.find('T');
  if (t == std::string::npos || std::sscanf(line.c_str() + t + 1, "%d:%d:%d.%dZ", &h, &m, &sec, &ms) != 4) return -1;
  return ((h * 60LL + m) * 60 + sec) * 1000 + ms;
}

/// When the first log line containing `what` was written (log_ms); -1 if none.
long long logged_at(const std::string& log, const std::string& what) {
  for (const auto& line : split_lines(log)) {
    if (line.find(what) != std::string::npos) return log_ms(line);
  }
  return -1;
}

// once_per under Sentinel (docs/DESIGN.md "Restart guard", once_per claims): a failover is not
// a restart (the promoted replica has been up all along, so it counts as unclaimed), and
// replication is asynchronous. A claim therefore counts only once a replica has acknowledged
// it (WAIT), whatever restart_guard says: a run never starts on a claim that a failover can
// lose, and the slot is not run twice.
TEST_F(SentinelTask, AOncePerClaimWaitsForTheReplicaSoAFailoverDoesNotRunTheSlotTwice) {
  SentinelSet set(SentinelSet::Options{true});
  const std::string runs = dir_.path() + "/runs";
  const auto first = once_config(set, "first"), second = once_config(set, "second");
  auto run = [&](const std::string& cfg, const std::string& label) {
    return run_task_binary({"task", "--config", cfg, "--", "/bin/sh", "-c", "echo " + label + " >> " + runs}, 30s);
  };
  auto count = [&](const std::string& label) {
    std::size_t n = 0;
    for (const auto& l : split_lines(read_file(runs))) n += l == label ? 1 : 0;
    return n;
  };

  // The replica hears the master 600 ms late each way: the job starts only once the replica
  // has acknowledged the claim, more than a second after the lease was acquired.
  set.replication_link().latency(600ms);
  auto r = run(first, "first");
  ASSERT_EQ(r.code, 0) << r.err;
  const long long acquired = logged_at(r.err, "acquired key="), started = logged_at(r.err, "child started");
  ASSERT_GE(acquired, 0) << r.err;
  EXPECT_GE(started - acquired, 1000) << "the job did not wait for the replica's acknowledgement\n" << r.err;

  // The replica hears nothing: the claim of the second key is never acknowledged, so its
  // slot is not run (loudly); the master dies, the sentinels promote the replica, which never
  // had that claim, and the slot runs there, once.
  set.replication_link().blackhole();
  r = run(second, "second");
  EXPECT_EQ(r.code, 75) << r.err;
  EXPECT_NE(r.err.find("no replica acknowledged it"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("once_per slot skipped"), std::string::npos) << r.err;
  EXPECT_EQ(count("second"), 0u) << r.err;
  set.kill_master();
  r = run(second, "second");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("the master has no replica connected to acknowledge it"), std::string::npos) << r.err;
  EXPECT_EQ(count("second"), 1u) << "the slot ran twice across the failover\n" << r.err;
  // The first key's claim was acknowledged before the failover: the new master has it.
  r = run(first, "first");
  EXPECT_EQ(r.code, 75) << r.err;
  EXPECT_NE(r.err.find("was run already"), std::string::npos) << r.err;
  EXPECT_EQ(count("first"), 1u);
}

// A signal that stops nothing (SIGHUP, SIGWINCH) is discarded while no child runs. One that
// came while a claim waited for the replica's acknowledgement ended the round: the slot was
// "cannot claim ... cancelled" and exit 69, though nothing was wrong. The round is made
// again and the slot runs.
TEST_F(SentinelTask, ASighupDuringAClaimRoundDoesNotCostTheSlot) {
  SentinelSet set(SentinelSet::Options{true});
  const auto cfg = once_config(set, "hup");
  const std::string runs = dir_.path() + "/runs";
  // The acknowledgement takes 1.2 s or more: the SIGHUP lands inside the claim round.
  set.replication_link().latency(600ms);
  TaskProcess p(dir_.path(), "hup", {"task", "--config", cfg, "--", "/bin/sh", "-c", "echo ran >> " + runs});
  ASSERT_TRUE(p.wait_for_log("acquired key=", 20s)) << p.err();
  p.signal(SIGHUP);
  EXPECT_EQ(p.wait_for(30s), 0) << p.err();
  EXPECT_EQ(split_lines(read_file(runs)).size(), 1u) << p.err();
  EXPECT_EQ(p.err().find("cancelled"), std::string::npos) << p.err();
}

// A stop while the claim waits for the replica's acknowledgement: the run ends (75, nothing
// started), and its claim is dropped again. The drop, queued behind the WAIT, was lost when
// its reply deadline passed under the WAIT: the claim stayed with "no exit status recorded"
// and every later host skipped the slot as run already, though nothing had run.
TEST_F(SentinelTask, AStopDuringAClaimRoundDropsTheClaimAndTheSlotRunsLater) {
  SentinelSet set(SentinelSet::Options{true});
  const auto cfg = once_config(set, "term");
  const std::string runs = dir_.path() + "/runs";
  const std::vector<std::string> args{"task", "--config", cfg, "--", "/bin/sh", "-c", "echo ran >> " + runs};
  set.replication_link().latency(600ms);
  {
    TaskProcess p(dir_.path(), "term", args);
    ASSERT_TRUE(p.wait_for_log("acquired key=", 20s)) << p.err();
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait_for(30s), 75) << p.err();
  }
  EXPECT_TRUE(read_file(runs).empty());
  set.replication_link().pass();
  const auto r = run_task_binary(args, 30s);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(split_lines(read_file(runs)).size(), 1u) << r.err;
}

}  // namespace

namespace {

// Attack round 10: the sentinels' own password (sentinel_password_env) reached the child's
// environment, and a sentinel refusing our credentials exited 69 ("no quorum") instead of
// 77 like a refused Redis.
TEST(SentinelAuth, TheSentinelsPasswordStaysFromTheChildAndARefusalExits77) {
  SentinelSet set;
  for (std::size_t i = 0; i < 3; ++i) set.sentinel(i).cli({"ACL", "SETUSER", "default", "on", ">Sent-Pw-7"});
  TempDir dir;
  ConfigSpec spec;
  spec.nodes = set.config_lines() + "sentinel_password_env = \"RGT_SENT_PW\"\n";
  spec.key = test_key();
  const std::string cfg = dir.write("s.toml", make_config(spec));
  auto ok = run_task_binary({"task", "--config", cfg, "--", "env"}, 20s, {{"RGT_SENT_PW", "Sent-Pw-7"}});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("REDISGO_TASK_TOKEN="), std::string::npos) << ok.out;
  EXPECT_EQ(ok.out.find("RGT_SENT_PW"), std::string::npos) << ok.out;
  EXPECT_EQ(ok.out.find("Sent-Pw-7"), std::string::npos) << ok.out;
  auto refused = run_task_binary({"task", "--config", cfg, "--no-wait", "--", "true"}, 20s, {{"RGT_SENT_PW", "wrong"}});
  EXPECT_EQ(refused.code, 77) << refused.err;
  EXPECT_EQ(refused.err.find("Sent-Pw-7"), std::string::npos) << refused.err;
}

}  // namespace

}  // namespace redis_sentinel_test
