// Pure parts of the lock module: derived key names, token parsing, the quorum token,
// validity arithmetic and the per-node retry schedule.
#include <gtest/gtest.h>

#include <chrono>

#include "lock/fencing.h"
#include "lock/lease.h"
#include "lock/redlock.h"
#include "util/clock.h"

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
