// once_per's rule for a node without a claim (lock/once.h), as a table: which branch lets
// it count as unclaimed, and what it says when none does. The claim script applies the same
// rule on the server (tests/integration/task_once_durable_test.cpp runs it).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "lock/once.h"

namespace lock_once_test {

using namespace std::chrono_literals;
using redisgo::lock::Counted;
using redisgo::lock::OnceNode;

namespace {

constexpr std::int64_t kSlot = 1'795'651'200;                     // 2026-11-26T00:00:00Z
constexpr std::int64_t kGuardFrom = kSlot * 1000 - 12 * 3600'000;  // once_per 24h: half a period before
constexpr std::int64_t kNow = kSlot * 1000 - 3600'000;             // an hour before the slot

/// A node that says it has been up `up_s` seconds at kNow.
OnceNode node(std::int64_t up_s) {
  OnceNode n;
  n.reachable = true;
  n.uptime_s = up_s;
  n.now_ms = kNow;
  n.aof = 0;
  n.version = "7.0.15";
  return n;
}

OnceNode aof8(std::int64_t up_s, std::int64_t witness, bool durable = true) {
  OnceNode n = node(up_s);
  n.aof = 1;
  n.version = "8.0.2";
  n.witness = witness;
  n.witness_durable = durable;
  return n;
}

}  // namespace

TEST(OnceRule, EachBranchAndWhyANodeDoesNotCount) {
  const std::int64_t yesterday = kSlot - 86400;
  const std::int64_t up_since_before = (kNow - kGuardFrom) / 1000 + 1;  // started at kGuardFrom exactly
  struct Case {
    const char* name;
    OnceNode n;
    std::int64_t highest;
    Counted how;
    const char* says;
  };
  OnceNode adopted = node(60);
  adopted.adopted = kSlot;
  adopted.adopted_ms = kNow - 30'000;  // written 30 s ago, the node up 60 s
  adopted.adopted_by = "alice@ops1";
  OnceNode restarted_after_adopt = adopted;
  restarted_after_adopt.uptime_s = 10;
  OnceNode other_slot = adopted;
  other_slot.adopted = yesterday;
  OnceNode noinfo = node(-1);
  const Case cases[] = {
      {"up since before the slot could begin", node(up_since_before), 0, Counted::kUptime, "before the slot could begin"},
      {"one second short (uptime rounded against us)", node(up_since_before - 1), 0, Counted::kNo, "after the slot could begin"},
      {"fresh, no persistence", node(60), 0, Counted::kNo, "AOF off"},
      {"adopted while up", adopted, 0, Counted::kAdopt, "alice@ops1"},
      {"restarted after the adopt", restarted_after_adopt, 0, Counted::kNo, "after `adopt`"},
      {"an adopt of another slot", other_slot, 0, Counted::kNo, "AOF off"},
      {"AOF on Redis 7.0: no WAITAOF", [] { auto n = aof8(60, 1); n.version = "7.0.15"; return n; }(), 0, Counted::kNo,
       "no WAITAOF"},
      {"AOF on Redis 7.2, its witness the highest", [] { auto n = aof8(60, 1); n.version = "7.2.4"; return n; }(), 1,
       Counted::kWitness, "witness"},
      {"AOF, WAITAOF, witness of yesterday's run", aof8(60, yesterday), yesterday, Counted::kWitness, "as high as any"},
      {"AOF, WAITAOF, no witness (wiped)", aof8(60, 0), yesterday, Counted::kNo, "no witness"},
      {"AOF, WAITAOF, an older witness than another node's", aof8(60, yesterday - 86400), yesterday, Counted::kNo,
       "lower than another node's"},
      {"AOF, WAITAOF, witness written without fsync (7.0 then)", aof8(60, yesterday, false), yesterday, Counted::kNo,
       "not fsynced"},
      {"AOF with its setting unreadable", [] { auto n = aof8(60, 1); n.aof = -1; return n; }(), 0, Counted::kNo,
       "could not be read"},
      {"INFO refused: it cannot say it kept its claims, so it does not count", noinfo, 0, Counted::kNo, "grant +info"},
  };
  for (const auto& c : cases) {
    const auto v = redisgo::lock::once_verdict(c.n, kSlot, kGuardFrom, c.highest);
    EXPECT_EQ(v.how, c.how) << c.name << ": " << v.why;
    EXPECT_NE(v.why.find(c.says), std::string::npos) << c.name << ": " << v.why;
  }
  // The guard off: every node counts, as before.
  EXPECT_EQ(redisgo::lock::once_verdict(node(1), kSlot, 0, 0).how, Counted::kGuardOff);
}

TEST(OnceRule, WaitaofFromRedis72AndTheWitnessOutlivesTheGapBetweenRuns) {
  using redisgo::lock::supports_waitaof;
  EXPECT_FALSE(supports_waitaof("7.0.15"));
  EXPECT_FALSE(supports_waitaof("7.1.242"));
  EXPECT_TRUE(supports_waitaof("7.2.0"));
  EXPECT_TRUE(supports_waitaof("8.0.2"));
  EXPECT_TRUE(supports_waitaof("10.0.0"));
  EXPECT_FALSE(supports_waitaof(""));
  EXPECT_FALSE(supports_waitaof("8"));
  EXPECT_FALSE(supports_waitaof("x.y"));
  EXPECT_EQ(redisgo::lock::witness_ttl(std::chrono::minutes(15)), std::chrono::hours(24 * 7));
  EXPECT_EQ(redisgo::lock::witness_ttl(std::chrono::hours(24 * 7)), std::chrono::hours(24 * 28));
  OnceNode n = node(5);
  EXPECT_EQ(redisgo::lock::server_started_ms(n), kNow - 4000);  // one second later than it says
  n.uptime_s = -1;
  EXPECT_FALSE(redisgo::lock::server_started_ms(n));
  std::vector<OnceNode> nodes{aof8(1, 10), aof8(1, 30), aof8(1, 20)};
  nodes[1].reachable = false;  // what an unreachable node said before counts for nothing
  EXPECT_EQ(redisgo::lock::highest_witness(nodes), 20);
}

// The adopt it advises adopts the key the run used: a --key is named, as one shell word.
TEST(OnceRule, TheAdviceNamesTheKeyAGivenKeyFlagChose) {
  using redisgo::lock::once_advice;
  const std::string file = once_advice("/etc/redisgo_task/nightly.toml");
  EXPECT_NE(file.find("`redisgo_task adopt --config /etc/redisgo_task/nightly.toml`"), std::string::npos) << file;
  const std::string flag = once_advice("/etc/redisgo_task/nightly.toml", "jobs:odd");
  EXPECT_NE(flag.find("`redisgo_task adopt --config /etc/redisgo_task/nightly.toml --key jobs:odd`"), std::string::npos)
      << flag;
  const std::string quoted = once_advice("/tmp/my jobs/a.toml", "{it's}");
  EXPECT_NE(quoted.find("`redisgo_task adopt --config '/tmp/my jobs/a.toml' --key '{it'\\''s}'`"), std::string::npos)
      << quoted;
}

}  // namespace lock_once_test
