// Pure parts of the lock module: derived key names, token parsing, the quorum token,
// validity arithmetic and the per-node retry schedule.
#include <gtest/gtest.h>

#include <chrono>

#include "lock/fencing.h"
#include "lock/lease.h"
#include "lock/redlock.h"
#include "util/clock.h"

namespace lock_keys_test {

using namespace std::chrono_literals;
using redisgo::Clock;
using redisgo::lock::LeaseKeys;

TEST(LeaseKeys, UntaggedKeyBecomesTheTag) {
  auto k = LeaseKeys::derive("Redisgo_Task_Lock_key");
  EXPECT_EQ(k.key, "Redisgo_Task_Lock_key");
  EXPECT_EQ(k.fence, "{Redisgo_Task_Lock_key}:fence");
  EXPECT_EQ(k.channel, "{Redisgo_Task_Lock_key}:released");
}

TEST(LeaseKeys, TaggedKeyKeepsItsTag) {
  auto k = LeaseKeys::derive("jobs:{backup}:lock");
  EXPECT_EQ(k.fence, "jobs:{backup}:lock:fence");
  EXPECT_EQ(k.channel, "jobs:{backup}:lock:released");
}

TEST(LeaseKeys, EmptyOrUnclosedBracesAreNoTag) {
  // Redis Cluster: "{}" is no tag (the whole key is hashed), nor is a '{' without '}'.
  EXPECT_EQ(LeaseKeys::derive("a{}b").fence, "{a{}b}:fence");
  EXPECT_EQ(LeaseKeys::derive("a{b").fence, "{a{b}:fence");
  EXPECT_EQ(LeaseKeys::derive("a}b{").fence, "{a}b{}:fence");
  // The first '{' counts: "{}x}" has an empty first tag, so no tag.
  EXPECT_EQ(LeaseKeys::derive("{}x}").channel, "{{}x}}:released");
  EXPECT_EQ(LeaseKeys::derive("x{y}{z}").fence, "x{y}{z}:fence");
}

TEST(Fencing, ParseToken) {
  using redisgo::lock::parse_token;
  EXPECT_EQ(parse_token("1795308875124417"), 1795308875124417ULL);
  EXPECT_EQ(parse_token("1"), 1ULL);
  EXPECT_FALSE(parse_token(""));
  EXPECT_FALSE(parse_token("-1"));
  EXPECT_FALSE(parse_token("1.7953087939339e+15"));  // what tostring() would have sent
  EXPECT_FALSE(parse_token("12x"));
  EXPECT_FALSE(parse_token("99999999999999999999999"));
}

TEST(Fencing, QuorumTokenAndRaiseSet) {
  using redisgo::lock::nodes_to_raise;
  using redisgo::lock::quorum_token;
  std::vector<std::uint64_t> tokens{5, 0, 9, 9, 3};
  EXPECT_EQ(quorum_token(tokens), 9u);
  EXPECT_EQ(nodes_to_raise(tokens, 9), (std::vector<bool>{true, false, false, false, true}));
  EXPECT_EQ(quorum_token({0, 0}), 0u);
}

TEST(Fencing, TheProposalsLeadGrowsOnlyWhenANodeIssuedMoreThanItAndDisagreed) {
  using redisgo::lock::kInitialLeadUs;
  using redisgo::lock::kMaxLeadUs;
  using redisgo::lock::next_lead_us;
  const std::uint64_t sent = 1'000'000'000'000'000;
  const std::uint64_t proposal = sent + kInitialLeadUs;
  // Every granting node issued the proposal: nothing to learn.
  EXPECT_EQ(next_lead_us(kInitialLeadUs, sent, {proposal, proposal, 0}), kInitialLeadUs);
  // They agree on more than the proposal (a counter ahead everywhere): one token, no raise.
  EXPECT_EQ(next_lead_us(kInitialLeadUs, sent, {proposal + 9, proposal + 9, proposal + 9}), kInitialLeadUs);
  // One node's clock was 8 ms ahead of ours: its TIME won there, the others issued the
  // proposal. Next time 1.5 x 8 ms.
  EXPECT_EQ(next_lead_us(kInitialLeadUs, sent, {proposal, sent + 8'000, proposal}), 12'000u);
  // Never shorter than it was.
  EXPECT_EQ(next_lead_us(4'000, sent, {sent + 4'000, sent + 6'000}), 9'000u);
  EXPECT_EQ(next_lead_us(12'000, sent, {sent + 12'000, sent + 13'000}), 12'000u);  // 19.5 ms: beyond the cap
  // A node far ahead (a counter set by hand, a clock minutes fast): raised once, not learnt.
  EXPECT_EQ(next_lead_us(kInitialLeadUs, sent, {proposal, sent + kMaxLeadUs}), kInitialLeadUs);
  EXPECT_EQ(next_lead_us(kInitialLeadUs, sent, {proposal, sent + 600'000'000}), kInitialLeadUs);
  // Nodes that disagree below the proposal (one behind, e.g. restarted with an old counter
  // but a slow clock) do not lengthen it either.
  EXPECT_EQ(next_lead_us(kInitialLeadUs, sent, {proposal, proposal - 3}), kInitialLeadUs);
}

TEST(Redlock, ValidityDeadlineSubtractsDrift) {
  Clock::time_point start(std::chrono::seconds(100));
  // 10 s lease, 1% + 2 ms drift: 10000 - 100 - 2 = 9898 ms.
  EXPECT_EQ(redisgo::lock::validity_deadline(start, 10000ms, 0.01, 2ms), start + 9898ms);
  EXPECT_EQ(redisgo::lock::validity_deadline(start, 1000ms, 0.0, 0ms), start + 1000ms);
}

TEST(Redlock, NodeBackoffDoublesToCap) {
  using redisgo::lock::next_node_backoff;
  EXPECT_EQ(next_node_backoff(0ms, 100ms, 2000ms), 100ms);
  EXPECT_EQ(next_node_backoff(100ms, 100ms, 2000ms), 200ms);
  EXPECT_EQ(next_node_backoff(1600ms, 100ms, 2000ms), 2000ms);
  EXPECT_EQ(next_node_backoff(2000ms, 100ms, 2000ms), 2000ms);
}

TEST(Redlock, RejectsBadOptions) {
  redisgo::lock::LeaseOptions o;
  o.key = "k";
  o.holder = "h";
  EXPECT_THROW(redisgo::lock::make_redis_backend(o), std::invalid_argument);  // no node
  o.nodes.emplace_back();
  o.ttl = 0ms;
  EXPECT_THROW(redisgo::lock::make_redis_backend(o), std::invalid_argument);
}

TEST(Redlock, QuorumIsMajority) {
  redisgo::lock::LeaseOptions o;
  o.key = "k";
  o.holder = "h";
  for (int n = 1; n <= 5; ++n) {
    o.nodes.resize(static_cast<std::size_t>(n));
    auto b = redisgo::lock::make_redis_backend(o);
    EXPECT_EQ(b->node_count(), n);
    EXPECT_EQ(b->quorum(), n / 2 + 1);
  }
}

TEST(LeaseKeys, SlotsClaimsAndControlShareTheKeysHashSlot) {
  auto k = LeaseKeys::derive("backup");
  EXPECT_EQ(k.slot(0), "backup");  // limit = 1 is the plain lease
  EXPECT_EQ(k.slot(3), "{backup}:slot:3");
  EXPECT_EQ(k.claim(1800000000), "{backup}:once:1800000000");
  EXPECT_EQ(k.witness(), "{backup}:once:witness");
  EXPECT_EQ(k.control, "{backup}:control");
  auto t = LeaseKeys::derive("jobs:{backup}:lock");
  EXPECT_EQ(t.slot(1), "jobs:{backup}:lock:slot:1");
  EXPECT_EQ(t.claim(60), "jobs:{backup}:lock:once:60");
  EXPECT_EQ(t.control, "jobs:{backup}:lock:control");
}

TEST(OncePer, TheSlotIsTheNearestMultipleOfThePeriod) {
  using redisgo::lock::nearest_slot;
  const auto p = std::chrono::minutes(15);  // 900 s
  EXPECT_EQ(nearest_slot(900'000, p), 900);
  // Hosts whose clocks differ by less than P/2 around a boundary agree on it.
  EXPECT_EQ(nearest_slot(900'000 - 449'999, p), 900);
  EXPECT_EQ(nearest_slot(900'000 + 449'999, p), 900);
  // Exactly half way rounds up; just before it rounds down.
  EXPECT_EQ(nearest_slot(900'000 + 450'000, p), 1800);
  EXPECT_EQ(nearest_slot(900'000 - 450'001, p), 0);
  EXPECT_EQ(nearest_slot(1'795'600'423'748, std::chrono::seconds(60)), 1'795'600'440);
  // Before 1970 (a broken clock) is still arithmetic, not a crash.
  EXPECT_EQ(nearest_slot(-1'000, std::chrono::seconds(60)), 0);
  EXPECT_EQ(nearest_slot(-40'000, std::chrono::seconds(60)), -60);
}

TEST(RestartGuard, CountsOneSecondLessThanRedisSays) {
  using redisgo::lock::restart_guard_left;
  // Redis's uptime_in_seconds is whole seconds of a cached clock: "1" may mean 0.1 s.
  EXPECT_EQ(restart_guard_left(0, 3000ms), 4000ms);
  EXPECT_EQ(restart_guard_left(1, 3000ms), 3000ms);
  EXPECT_EQ(restart_guard_left(3, 3000ms), 1000ms);
  EXPECT_EQ(restart_guard_left(4, 3000ms), 0ms);
  EXPECT_EQ(restart_guard_left(86400, 3000ms), 0ms);
  EXPECT_EQ(restart_guard_left(2, 1500ms), 500ms);
  EXPECT_EQ(restart_guard_left(3, 1500ms), 0ms);
  EXPECT_EQ(restart_guard_left(0, 0ms), 0ms);  // off
}

TEST(RestartGuard, OnlyADaemonsHolderIdSpeaksForAnotherExpire) {
  using redisgo::lock::is_daemon_holder;
  EXPECT_TRUE(is_daemon_holder("web-1:4242:0123456789abcdef0123456789abcdef"));
  EXPECT_TRUE(is_daemon_holder("a:b:c:1:0123456789abcdef0123456789abcdef"));  // a prefix with colons
  EXPECT_FALSE(is_daemon_holder("maintenance"));
  EXPECT_FALSE(is_daemon_holder("held-by-redis-cli"));
  EXPECT_FALSE(is_daemon_holder("web-1:4242:0123456789abcdef0123456789abcde"));    // 31 hex digits
  EXPECT_FALSE(is_daemon_holder("web-1:4242:0123456789ABCDEF0123456789ABCDEF"));   // not ours: lower case
  EXPECT_FALSE(is_daemon_holder("web-1:42x2:0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(is_daemon_holder("web-1::0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(is_daemon_holder(":0123456789abcdef0123456789abcdef"));
}

// Renewals refused: the note beside the key reads back as written (the probe script adds the
// right and the error after the head), and says who holds back, since when and why.
TEST(RefusalNote, ReadsBackAndSaysWhoHoldsBackAndWhy) {
  using namespace redisgo::lock;
  EXPECT_EQ(LeaseKeys::derive("worker").refused(), "{worker}:refused");
  EXPECT_EQ(LeaseKeys::derive("{jobs}x").probe(), "{jobs}x:probe");
  const std::string head = refusal_note_head("web1:10:abc", 1795000000000, "redisgo");
  const auto n = parse_refusal_note(head + "\n+pexpire\nERR The user executing the script can't run this command\nx");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->holder, "web1:10:abc");
  EXPECT_EQ(n->since_ms, 1795000000000);
  EXPECT_EQ(n->user, "redisgo");
  EXPECT_EQ(n->right, "+pexpire");
  EXPECT_EQ(n->error, "ERR The user executing the script can't run this command\nx");
  EXPECT_EQ(describe_refusal(*n), "renewals refused since 2026-11-18T11:06:40Z: the ACL user 'redisgo' of web1 lacks "
                                  "+pexpire; its daemon does not take the lease until it is granted");
  EXPECT_FALSE(parse_refusal_note(head));
  EXPECT_FALSE(parse_refusal_note(""));
  EXPECT_FALSE(parse_refusal_note("\n1\nu\n+x\ne")) << "no holder";
}

}  // namespace lock_keys_test
