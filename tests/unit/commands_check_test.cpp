// The judgement half of `redisgo_task check` (commands/check_findings.h): every threshold
// and the exit status, without a server. The integration test (cli_check_test.cpp)
// trips the same findings on real redis-servers.

#include <gtest/gtest.h>

#include <sstream>

#include "commands/check_findings.h"

namespace commands_check_test {

using namespace std::chrono_literals;
using namespace redisgo::commands::check;
using redisgo::config::Topology;

namespace {

Finding with(Level level) {
  Finding f;
  f.level = level;
  f.check = "x";
  f.message = "m";
  return f;
}

redisgo::config::Config config_with(std::chrono::milliseconds expire, std::chrono::milliseconds cron,
                                    std::chrono::milliseconds kill_grace) {
  redisgo::config::Config c;
  c.redis.expire = expire;
  c.redis.cron = cron;
  c.task.kill_grace = kill_grace;
  c.redis.connect_timeout = 200ms;
  c.redis.io_timeout = 200ms;
  return c;
}

}  // namespace

TEST(CheckExit, OkWarnFailAndNoQuorum) {
  EXPECT_EQ(exit_code({}, true), 0);
  EXPECT_EQ(exit_code({with(Level::kOk), with(Level::kOk)}, true), 0);
  EXPECT_EQ(exit_code({with(Level::kOk), with(Level::kWarn)}, true), 1);
  EXPECT_EQ(exit_code({with(Level::kFail)}, true), 1);
  EXPECT_EQ(exit_code({with(Level::kOk)}, false), 69);  // no quorum decides, whatever the lines say
  EXPECT_EQ(exit_code({with(Level::kFail)}, false), 69);
  // A check this user may not make is no fault of the server: still 0.
  EXPECT_EQ(exit_code({with(Level::kOk), with(Level::kSkip)}, true), 0);
  EXPECT_EQ(exit_code({with(Level::kSkip), with(Level::kWarn)}, true), 1);
}

TEST(CheckClock, OffsetIsServerMinusTheMidpointOfTheRoundTrip) {
  // Sent at 1000 µs, back at 1200 µs: the server read its clock around 1100.
  auto o = offset_of({1000, 1200, 1100});
  EXPECT_EQ(o.offset_us, 0);
  EXPECT_EQ(o.uncertainty_us, 100);
  o = offset_of({1000, 1200, 6100});  // server 5 ms ahead
  EXPECT_EQ(o.offset_us, 5000);
  o = offset_of({1'000'000, 1'000'300, 500'150});  // server 0.5 s behind
  EXPECT_EQ(o.offset_us, -500'000);
  EXPECT_EQ(o.uncertainty_us, 150);
  // An odd round trip rounds the uncertainty up, never down.
  EXPECT_EQ(offset_of({0, 3, 1}).uncertainty_us, 2);
}

TEST(CheckClock, TheShortestRoundTripWins) {
  EXPECT_FALSE(best_offset({}).has_value());
  auto o = best_offset({{0, 1000, 900}, {2000, 2010, 2505}, {3000, 3500, 3250}});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->offset_us, 500);
  EXPECT_EQ(o->uncertainty_us, 5);
}

TEST(CheckClock, FiguresPrintWithoutANegativeZero) {
  EXPECT_EQ(format_us(-3), "0.00 ms");
  EXPECT_EQ(format_us(-30), "-0.03 ms");
  EXPECT_EQ(format_us(1500), "1.50 ms");
  EXPECT_EQ(format_us(-2'500'000), "-2.500 s");
  EXPECT_EQ(clock_finding("n", {3, 10}, 5s).message.find("+"), std::string::npos);
  EXPECT_NE(clock_finding("n", {30, 10}, 5s).message.find("+0.03 ms"), std::string::npos);
}

TEST(CheckClock, TimeReplyParses) {
  EXPECT_EQ(parse_time_reply("1700000000", "123456"), 1'700'000'000'123'456LL);
  EXPECT_FALSE(parse_time_reply("17x", "1"));
  EXPECT_FALSE(parse_time_reply("1", "1000000"));
  EXPECT_FALSE(parse_time_reply("", "1"));
}

TEST(CheckClock, WarnsBeyondATenthOfExpireCappedAtOneSecond) {
  EXPECT_EQ(clock_limit(5s), 500ms);
  EXPECT_EQ(clock_limit(60s), 1000ms);
  // once_per: hosts must agree on the slot, so a quarter of it at most.
  EXPECT_EQ(clock_limit(60s, std::chrono::milliseconds(2000)), 500ms);
  EXPECT_EQ(clock_limit(5s, std::chrono::milliseconds(900'000)), 500ms);
  auto slot = clock_finding("n", {600'000, 10}, 60s, std::chrono::milliseconds(2000));
  EXPECT_EQ(slot.level, Level::kWarn);
  EXPECT_NE(slot.message.find("once_per"), std::string::npos) << slot.message;
  EXPECT_EQ(clock_finding("n", {400'000, 10}, 5s).level, Level::kOk);
  EXPECT_EQ(clock_finding("n", {-600'000, 10}, 5s).level, Level::kWarn);
  // Within the uncertainty it is not proven to be off.
  EXPECT_EQ(clock_finding("n", {600'000, 200'000}, 5s).level, Level::kOk);
  EXPECT_EQ(clock_finding("n", {1'200'000, 0}, 60s).level, Level::kWarn);
  auto f = clock_finding("n", {-600'000, 10}, 5s);
  EXPECT_NE(f.hint.find("fencing"), std::string::npos) << f.hint;
  EXPECT_NE(f.hint.find("once_per"), std::string::npos) << f.hint;
  ASSERT_FALSE(f.fields.empty());
  EXPECT_EQ(f.fields[0].first, "offset_ms");
  EXPECT_EQ(f.fields[0].second, "-600");
}

TEST(CheckMargins, SameArithmeticAsTheConfigCrossCheck) {
  // expire 2s: drift = ceil(2000 × 0.01) + 2 + kill margin 100 = 122 ms.
  auto m = margins(config_with(2s, 500ms, 500ms));
  EXPECT_EQ(m.drift, 122ms);
  EXPECT_EQ(m.need, 1122ms);
  EXPECT_EQ(m.spare, 878ms);
  EXPECT_EQ(m.round_trip, 400ms);
  EXPECT_EQ(margin_finding(config_with(2s, 500ms, 500ms)).level, Level::kOk);
  // cron 0 in a Config built in code means expire/5.
  EXPECT_EQ(margins(config_with(3s, 0ms, 500ms)).cron, 600ms);
}

// A config that leaves every timing to its default passes our own check (issue 20 item 2):
// expire 5s, cron 1s, kill_grace 2s, timeouts 500ms leave 1848ms, more than one cron and one
// connect + io round trip.
TEST(CheckMargins, TheDefaultsPass) {
  const redisgo::config::Config defaults;
  const auto m = margins(defaults);
  EXPECT_EQ(m.cron, 1000ms);
  EXPECT_EQ(m.spare, 1848ms);
  const auto f = margin_finding(defaults);
  EXPECT_EQ(f.level, Level::kOk) << f.message;
}

TEST(CheckMargins, SmallSpareWarnsAndNoneFails) {
  // spare 2000 − (500 + 1250 + 122) = 128 ms < connect + io timeouts (400 ms).
  auto f = margin_finding(config_with(2s, 500ms, 1250ms));
  EXPECT_EQ(f.level, Level::kWarn);
  EXPECT_NE(f.message.find("connect_timeout + io_timeout"), std::string::npos) << f.message;
  // spare 10000 − (4000 + 4000 + 202) = 1798 ms: > 400 ms but < one cron.
  f = margin_finding(config_with(10s, 4s, 4s));
  EXPECT_EQ(f.level, Level::kWarn);
  EXPECT_NE(f.message.find("less than one cron"), std::string::npos) << f.message;
  EXPECT_EQ(margin_finding(config_with(2s, 1s, 1s)).level, Level::kFail);
  EXPECT_TRUE(f.node.empty());  // about the setup, not a node
}

TEST(CheckInfo, ParsesFieldsAndSkipsSections) {
  auto m = parse_info("# Server\r\nredis_version:7.0.15\r\nrun_id:abc\r\n\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n");
  EXPECT_EQ(m["redis_version"], "7.0.15");
  EXPECT_EQ(m["run_id"], "abc");
  EXPECT_EQ(m["maxmemory_policy"], "noeviction");
  EXPECT_EQ(m.count("# Server"), 0u);
}

// What the ACL user may not read (NOPERM) is a skip naming the right; anything else that
// could not be read (a timeout, a renamed command) is still a warn.
TEST(CheckSkip, NopermIsASkipThatNamesTheRight) {
  const std::string noperm = "NOPERM this user has no permissions to run the 'info' command";
  auto v = version_finding("n", "", false, noperm);
  EXPECT_EQ(v.level, Level::kSkip);
  EXPECT_NE(v.hint.find("+info"), std::string::npos) << v.hint;
  EXPECT_EQ(version_finding("n", "", false, "no answer in time").level, Level::kWarn);
  auto role = role_finding("n", "", "", "", redisgo::config::Topology::kSingle, "ROLE: " + noperm + "; INFO: " + noperm);
  EXPECT_EQ(role.level, Level::kSkip);
  EXPECT_NE(role.hint.find("+role"), std::string::npos) << role.hint;
  EXPECT_EQ(memory_finding("n", "", std::nullopt, "CONFIG GET: " + noperm).level, Level::kSkip);
  Persistence p;
  p.why = "INFO: " + noperm;
  EXPECT_EQ(persistence_finding("n", p, 5s, redisgo::config::Topology::kSingle, false).level, Level::kSkip);
  std::ostringstream text;
  write_text({v}, text);
  EXPECT_EQ(text.str().rfind("skip version n: not checked: this user may not read the version", 0), 0u) << text.str();
}

// Sentinel: the master's own count of online replicas (what WAIT counts) decides
// sentinel_wait_replicas; the sentinels' list only when the master could not tell; a list
// the sentinels refused is a skip, not "0 healthy of 0".
TEST(CheckSentinels, TheMastersOwnReplicasDecideWait) {
  const std::vector<std::string> none;
  EXPECT_EQ(replica_finding(none, "", "m:1", 1, 1).level, Level::kOk) << "sentinels not caught up yet";
  EXPECT_EQ(replica_finding({"r:1 (slave, link ok)"}, "", "m:1", 2, 1).level, Level::kFail);
  EXPECT_EQ(replica_finding(none, "NOPERM", "m:1", 1, std::nullopt).level, Level::kSkip);
  EXPECT_EQ(replica_finding(none, "", "m:1", 1, std::nullopt).level, Level::kFail);
  EXPECT_EQ(replica_finding(none, "", "m:1", 0, 1).level, Level::kOk);
  EXPECT_EQ(online_replicas({{"connected_slaves", "2"},
                             {"slave0", "ip=10.0.0.2,port=6379,state=online,offset=1,lag=0"},
                             {"slave1", "ip=10.0.0.3,port=6379,state=wait_bgsave,offset=0,lag=0"}}),
            1);
  EXPECT_EQ(online_replicas({{"role", "master"}}), std::nullopt);
}

TEST(CheckVersion, ParsesAndJudges) {
  EXPECT_EQ(parse_version("7.0.15"), (Version{7, 0, 15}));
  EXPECT_EQ(parse_version("6.2"), (Version{6, 2, 0}));
  EXPECT_FALSE(parse_version("x7"));
  EXPECT_EQ(version_finding("n", "7.0.15", false, "").level, Level::kOk);
  EXPECT_EQ(version_finding("n", "2.6.11", false, "").level, Level::kFail);
  EXPECT_EQ(version_finding("n", "4.0.14", false, "").level, Level::kFail);  // TIME before a write
  EXPECT_EQ(version_finding("n", "5.0.0", false, "").level, Level::kOk);
  EXPECT_EQ(version_finding("n", "5.0.7", true, "").level, Level::kFail);  // no ACL users before 6.0
  EXPECT_EQ(version_finding("n", "", false, "NOPERM").level, Level::kSkip);
}

TEST(CheckRole, ReplicaSentinelAndClusterModeFail) {
  EXPECT_EQ(role_finding("n", "master", "standalone", "", Topology::kSingle, "").level, Level::kOk);
  auto f = role_finding("n", "slave", "standalone", "10.0.0.1:6379", Topology::kRedlock, "");
  EXPECT_EQ(f.level, Level::kFail);
  EXPECT_NE(f.message.find("10.0.0.1:6379"), std::string::npos);
  EXPECT_NE(f.message.find("writes would fail"), std::string::npos);
  EXPECT_EQ(role_finding("n", "sentinel", "sentinel", "", Topology::kSingle, "").level, Level::kFail);
  EXPECT_EQ(role_finding("n", "master", "cluster", "", Topology::kSingle, "").level, Level::kFail);
  EXPECT_EQ(role_finding("n", "master", "cluster", "", Topology::kCluster, "").level, Level::kOk);
  EXPECT_EQ(role_finding("n", "", "", "", Topology::kSingle, "NOPERM").level, Level::kSkip);
}

TEST(CheckMemory, OnlyNoevictionIsOk) {
  EXPECT_EQ(memory_finding("n", "noeviction", 0, "").level, Level::kOk);
  auto f = memory_finding("n", "allkeys-lru", 100 << 20, "");
  EXPECT_EQ(f.level, Level::kWarn);
  EXPECT_NE(f.hint.find("noeviction"), std::string::npos);
  f = memory_finding("n", "volatile-ttl", 0, "");
  EXPECT_EQ(f.level, Level::kWarn);
  EXPECT_NE(f.message.find("once maxmemory is set"), std::string::npos) << f.message;
  EXPECT_EQ(memory_finding("n", "", std::nullopt, "NOPERM").level, Level::kSkip);
}

TEST(CheckPersistence, AofIsOkAnythingLessWarns) {
  EXPECT_EQ(persistence_finding("n", {true, "", "everysec", ""}, 5s, Topology::kSingle).level, Level::kOk);
  EXPECT_EQ(persistence_finding("n", {true, "3600 1", "always", ""}, 5s, Topology::kSingle).level, Level::kOk);
  auto none = persistence_finding("n", {false, "", "", ""}, 5s, Topology::kRedlock);
  EXPECT_EQ(none.level, Level::kWarn);
  EXPECT_NE(none.hint.find("one expire (5s)"), std::string::npos) << none.hint;
  EXPECT_NE(none.hint.find("TIME"), std::string::npos) << none.hint;
  EXPECT_EQ(persistence_finding("n", {false, "3600 1", "", ""}, 5s, Topology::kSingle).level, Level::kWarn);
  EXPECT_EQ(persistence_finding("n", {false, std::nullopt, "", "NOPERM"}, 5s, Topology::kSingle).level, Level::kSkip);
  EXPECT_EQ(persistence_finding("n", {std::nullopt, std::nullopt, "", "NOPERM"}, 5s, Topology::kSingle).level,
            Level::kSkip);
}

TEST(CheckPersistence, NoPersistenceIsOkWhileTheRestartGuardCanApply) {
  auto none = persistence_finding("n", {false, "", "", ""}, 5s, Topology::kSingle, true);
  EXPECT_EQ(none.level, Level::kOk);
  EXPECT_NE(none.message.find("restart guard"), std::string::npos) << none.message;
  EXPECT_EQ(persistence_finding("n", {false, "3600 1", "", ""}, 5s, Topology::kSingle, true).level, Level::kOk);
  // Unknown durability still warns: the guard does not make an unread setting known.
  EXPECT_EQ(persistence_finding("n", {std::nullopt, std::nullopt, "", "NOPERM"}, 5s, Topology::kSingle, true).level,
            Level::kSkip);
  // Without the guard the hint names it first.
  EXPECT_NE(persistence_finding("n", {false, "", "", ""}, 5s, Topology::kSingle).hint.find("restart_guard"),
            std::string::npos);
}

TEST(CheckRestartGuard, OnOffOrCannotApply) {
  auto on = guard_finding("n", true, 120, "");
  EXPECT_EQ(on.level, Level::kOk);
  EXPECT_NE(on.message.find("up 120 s"), std::string::npos) << on.message;
  EXPECT_EQ(guard_finding("n", false, std::nullopt, "").level, Level::kWarn);  // a safety feature turned off
  auto refused = guard_finding("n", true, std::nullopt, "NOPERM this user has no permissions to run the 'info' command");
  EXPECT_EQ(refused.level, Level::kWarn);
  EXPECT_NE(refused.message.find("NOPERM"), std::string::npos) << refused.message;
  EXPECT_NE(refused.hint.find("+info"), std::string::npos) << refused.hint;
}

TEST(CheckDuplicates, EqualRunIdsAreOneServer) {
  EXPECT_TRUE(duplicate_findings({{"a:1", "r1"}, {"b:1", "r2"}, {"c:1", ""}, {"d:1", ""}}, 3).empty());
  auto f = duplicate_findings({{"127.0.0.1:7000", "r1"}, {"10.0.0.2:7000", "r2"}, {"localhost:7000", "r1"}}, 2);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].level, Level::kFail);
  EXPECT_EQ(f[0].node, "127.0.0.1:7000");
  EXPECT_NE(f[0].message.find("127.0.0.1:7000 and localhost:7000 are the same server (run_id r1)"), std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].hint.find("list each server once"), std::string::npos);
}

TEST(CheckQuorum, AllSomeAndTooFew) {
  EXPECT_EQ(quorum_finding(3, 3, 2).level, Level::kOk);
  EXPECT_EQ(quorum_finding(2, 3, 2).level, Level::kWarn);
  EXPECT_EQ(quorum_finding(1, 3, 2).level, Level::kFail);
}

// Mixed settings on one key (DESIGN "The waiting line"): waiters outside the line beside a
// fair daemon, or a line beside a fair = false one, are warned; an unreadable line names
// the rights it needs.
TEST(CheckLine, MixedFairSettingsAreWarned) {
  const std::string line = "{k}:line", channel = "{k}:released";
  auto ok = line_finding("n", true, 3, 0, line, channel, "");
  EXPECT_EQ(ok.level, Level::kOk);
  EXPECT_EQ(ok.message, "3 waiting in line, none outside it");
  auto outside = line_finding("n", true, 2, 1, line, channel, "");
  EXPECT_EQ(outside.level, Level::kWarn);
  EXPECT_NE(outside.message.find("1 waiter(s) listen on {k}:released outside the waiting line"), std::string::npos);
  EXPECT_NE(outside.hint.find("fair the same on every daemon"), std::string::npos);
  auto unfair = line_finding("n", false, 2, 0, line, channel, "");
  EXPECT_EQ(unfair.level, Level::kWarn);
  EXPECT_NE(unfair.message.find("2 waiter(s) in the waiting line {k}:line"), std::string::npos);
  EXPECT_EQ(line_finding("n", false, 0, 4, line, channel, "").level, Level::kOk);  // its own kind, outside
  // A key the user may not touch, or a line of another type: every acquisition fails (a fail).
  auto refused = line_finding("n", true, std::nullopt, -1, line, channel, "NOPERM no permissions");
  EXPECT_EQ(refused.level, Level::kFail);
  EXPECT_NE(refused.message.find("may not read the waiting line {k}:line: NOPERM"), std::string::npos);
  EXPECT_NE(refused.hint.find("~{k}:*"), std::string::npos) << refused.hint;
  auto wrong = line_finding("n", true, std::nullopt, -1, line, channel, "WRONGTYPE Operation");
  EXPECT_EQ(wrong.level, Level::kFail);
  EXPECT_NE(wrong.hint.find("delete {k}:line"), std::string::npos);
  // A command refused inside the script: the rights to grant.
  auto unread = line_finding("n", true, std::nullopt, -1, line, channel, "ERR The user executing the script can't run");
  EXPECT_EQ(unread.level, Level::kWarn);
  EXPECT_NE(unread.message.find("could not read the waiting line {k}:line: ERR"), std::string::npos);
  EXPECT_NE(unread.hint.find("ZCARD and ZRANGE"), std::string::npos);
}

TEST(CheckTls, ExpiryDecidesTheLevel) {
  EXPECT_EQ(tls_finding("n", "TLS TLSv1.3, certificate /CN=x, expires Jan 1 (in 300 days)").level, Level::kOk);
  EXPECT_EQ(tls_finding("n", "TLS TLSv1.3, certificate /CN=x, expires Jan 1 (in 3 days)").level, Level::kWarn);
  EXPECT_EQ(tls_finding("n", "TLS TLSv1.3, certificate /CN=x, expires Jan 1 (in -2 days)").level, Level::kFail);
  EXPECT_EQ(tls_finding("n", "TLS TLSv1.3, no server certificate").level, Level::kOk);
}

TEST(CheckSentinels, MajorityDisagreementAndNoMajority) {
  using redisgo::redis::Endpoint;
  using redisgo::redis::SentinelReport;
  auto answer = [](std::string s, std::optional<std::string> master) {
    SentinelReport::Answer a;
    a.sentinel = std::move(s);
    a.reachable = master.has_value();
    if (master) a.master = Endpoint::parse(*master);
    if (!master) a.error = "refused";
    a.replicas = {"10.0.0.2:6379 (slave, link ok)"};
    return a;
  };
  SentinelReport agree{{answer("s1", "10.0.0.1:6379"), answer("s2", "10.0.0.1:6379"), answer("s3", "10.0.0.1:6379")}};
  auto v = sentinel_findings(agree, "mymaster", 0);
  ASSERT_TRUE(v.master);
  EXPECT_EQ(v.master->str(), "10.0.0.1:6379");
  for (const auto& f : v.findings) EXPECT_EQ(f.level, Level::kOk) << f.message;

  SentinelReport split{{answer("s1", "10.0.0.1:6379"), answer("s2", "10.0.0.9:6379"), answer("s3", "10.0.0.1:6379")}};
  v = sentinel_findings(split, "mymaster", 0);
  ASSERT_TRUE(v.master);
  EXPECT_EQ(v.master->str(), "10.0.0.1:6379");
  EXPECT_TRUE(std::any_of(v.findings.begin(), v.findings.end(),
                          [](const Finding& f) { return f.check == "sentinels" && f.level == Level::kWarn; }));

  SentinelReport minority{{answer("s1", "10.0.0.1:6379"), answer("s2", std::nullopt), answer("s3", std::nullopt)}};
  v = sentinel_findings(minority, "mymaster", 0);
  EXPECT_FALSE(v.master);
  EXPECT_TRUE(std::any_of(v.findings.begin(), v.findings.end(),
                          [](const Finding& f) { return f.check == "sentinels" && f.level == Level::kFail; }));

  // WAIT for more replicas than there are: every acquisition would be undone.
  v = sentinel_findings(agree, "mymaster", 2);
  EXPECT_TRUE(std::any_of(v.findings.begin(), v.findings.end(),
                          [](const Finding& f) { return f.check == "replicas" && f.level == Level::kFail; }));
}

TEST(CheckOutput, TextLinesStartWithTheLevelAndJsonIsOneObject) {
  Finding a;
  a.level = Level::kWarn;
  a.check = "maxmemory-policy";
  a.node = "127.0.0.1:6379";
  a.message = "allkeys-lru \"quoted\"";
  a.hint = "set noeviction";
  a.fields.emplace_back("policy", json_quote("allkeys-lru"));
  Finding b;
  b.check = "margins";
  b.message = "fine";
  std::ostringstream text;
  write_text({a, b}, text);
  EXPECT_EQ(text.str(),
            "warn maxmemory-policy 127.0.0.1:6379: allkeys-lru \"quoted\". Fix: set noeviction\n"
            "ok   margins: fine\n");
  Report r;
  r.config = "/etc/x.toml";
  r.key = "k";
  r.topology = "host";
  r.findings = {a, b};
  r.exit = 1;
  std::ostringstream js;
  write_json(r, js);
  EXPECT_EQ(js.str(),
            "{\"config\":\"/etc/x.toml\",\"key\":\"k\",\"topology\":\"host\",\"nodes\":0,\"reachable\":0,\"quorum\":0,"
            "\"findings\":[{\"level\":\"warn\",\"check\":\"maxmemory-policy\",\"node\":\"127.0.0.1:6379\","
            "\"message\":\"allkeys-lru \\\"quoted\\\"\",\"hint\":\"set noeviction\",\"policy\":\"allkeys-lru\"},"
            "{\"level\":\"ok\",\"check\":\"margins\",\"node\":null,\"message\":\"fine\",\"hint\":null}],\"exit\":1}\n");
  EXPECT_EQ(json_number(1.5), "1.5");
  EXPECT_EQ(json_number(-0.0001), "0");
  EXPECT_EQ(json_number(12.0), "12");
}

namespace {

/// A node as kReadOnce reports it, `up_s` seconds up at `now_ms`.
OnceProbe once_node(const std::string& name, std::int64_t now_ms, std::int64_t up_s, int aof = 0,
                    const std::string& version = "7.0.15", std::int64_t witness = 0) {
  OnceProbe p;
  p.node = name;
  redisgo::lock::OnceNode n;
  n.node = name;
  n.reachable = true;
  n.now_ms = now_ms;
  n.uptime_s = up_s;
  n.aof = aof;
  n.version = version;
  n.witness = witness;
  n.witness_durable = witness > 0;
  p.state = n;
  return p;
}

}  // namespace

TEST(CheckOncePer, SaysAheadWhetherTheNextSlotRunsAndWhatARestartWouldDo) {
  redisgo::config::Config c = config_with(5000ms, 1000ms, 1000ms);
  c.source = "/etc/redisgo_task/nightly.toml";
  c.redis.restart_guard = true;
  c.task.once_per = std::chrono::hours(24);
  const std::int64_t slot = 1'795'651'200;            // 2026-11-26T00:00:00Z
  const std::int64_t now = slot * 1000 - 9 * 3600'000;  // 15:00 the day before: the slot nearest is tonight's
  auto text = [](const std::vector<Finding>& fs) {
    std::ostringstream out;
    write_text(fs, out);
    return out.str();
  };
  // A first deployment: three servers up for an hour, since after the slot could begin (12:00).
  std::vector<OnceProbe> fresh{once_node("a", now, 3600), once_node("b", now, 3600), once_node("c", now, 3600)};
  auto fs = once_findings(fresh, c, now, 2);
  std::string t = text(fs);
  EXPECT_EQ(exit_code(fs, true), 1) << t;
  EXPECT_NE(t.find("warn once_per: the slot of 2026-11-26T00:00:00Z would be skipped: 0 node(s) count as unclaimed"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("redisgo_task adopt --config /etc/redisgo_task/nightly.toml"), std::string::npos) << t;
  EXPECT_NE(t.find("warn once_per a: does not count as unclaimed for the slot of 2026-11-26T00:00:00Z"),
            std::string::npos)
      << t;

  // Up since the morning: they count; a restart would leave them out (AOF off), except the
  // one with AOF on Redis 8 and a witness, which would still count.
  std::vector<OnceProbe> up{once_node("a", now, 8 * 3600), once_node("b", now, 8 * 3600),
                            once_node("c", now, 8 * 3600, 1, "8.0.2", slot - 86400)};
  fs = once_findings(up, c, now, 2);
  t = text(fs);
  EXPECT_EQ(exit_code(fs, true), 0) << t;
  EXPECT_NE(t.find("ok   once_per: the slot of 2026-11-26T00:00:00Z would run: 3 node(s) count"), std::string::npos) << t;
  EXPECT_NE(t.find("once_per a: counts as unclaimed"), std::string::npos) << t;
  EXPECT_NE(t.find("it would not count (AOF is off)"), std::string::npos) << t;
  EXPECT_NE(t.find("once_per c: counts as unclaimed for the slot of 2026-11-26T00:00:00Z (up since"), std::string::npos)
      << t;
  EXPECT_NE(t.find("after a restart it still counts, through its AOF and witness"), std::string::npos) << t;

  // The slot ran: the next one is judged. appendfsync no makes a node's claims never count.
  up[0].current = redisgo::lock::ClaimRecord{"h:1:x", "7", "1795651200000", "0"};
  up[2].appendfsync = "no";
  fs = once_findings(up, c, now, 2);
  t = text(fs);
  EXPECT_NE(t.find("the slot of 2026-11-26T00:00:00Z was run by holder h:1:x"), std::string::npos) << t;
  EXPECT_NE(t.find("the next, 2026-11-27T00:00:00Z, would run"), std::string::npos) << t;
  EXPECT_NE(t.find("fail once_per c: AOF with appendfsync no"), std::string::npos) << t;
  // A user without +waitaof on an AOF node of Redis >= 7.2: its claims never count either.
  up[2].appendfsync = "everysec";
  up[2].waitaof_error = "NOPERM this user has no permissions to run the 'waitaof' command";
  t = text(once_findings(up, c, now, 2));
  EXPECT_NE(t.find("fail once_per c: this user may not run WAITAOF"), std::string::npos) << t;
  EXPECT_NE(t.find("grant +waitaof"), std::string::npos) << t;
}

}  // namespace commands_check_test
