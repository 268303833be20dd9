// The seam (src/redis/link.h, docs/DESIGN.md "The seam"): the real RedlockBackend, through
// LeaseOptions::network, over simulated nodes (tests/sim/network.h) on a simulated clock. One
// thread, no socket: what it shows is that the lease's own decisions run unchanged when a
// scheduler delivers its calls, and that the same inputs give the same run.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "lock/fencing.h"
#include "lock/lease.h"
#include "sim/network.h"
#include "sim/node.h"

namespace redisgo {
namespace sim {
void PrintTo(const Resp& r, std::ostream* os) { *os << to_string(r); }
}  // namespace sim
namespace {

using namespace std::chrono_literals;
using lock::Acquisition;
using lock::Release;
using lock::Renewal;
using redis::Fault;
using sim::Resp;

/// 2026-01-01T00:00:00.250Z.
constexpr std::int64_t kStartUs = 1'767'225'600'250'000;
/// ttl 5000 ms: drift 5000 * 0.01 + 2 ms.
constexpr auto kTtl = 5000ms;
constexpr auto kDrift = 52ms;

/// N simulated nodes at 10.0.0.<i+1>:6379 on one simulated network.
struct World {
  explicit World(int n, redis::Millis latency = 1ms) {
    for (int i = 0; i < n; ++i) {
      sim::NodeOptions o;
      o.seed = static_cast<std::uint64_t>(i + 1);
      nodes.push_back(std::make_unique<sim::Node>(kStartUs, o));
      at.push_back(*redis::Endpoint::parse("10.0.0." + std::to_string(i + 1) + ":6379"));
      net.serve(at.back(), *nodes.back(), latency);
    }
  }

  lock::LeaseOptions options(const std::string& holder) {
    lock::LeaseOptions o;
    for (const auto& e : at) {
      redis::ConnectionOptions c;
      c.endpoint = e;
      c.on_fault = [this](Fault f) { faults.push_back(f); };
      o.nodes.push_back(std::move(c));
    }
    o.key = "job";
    o.holder = holder;
    o.attempts = std::make_shared<std::atomic<std::uint64_t>>(0);
    o.ttl = kTtl;
    o.network = &net;
    return o;
  }
  std::unique_ptr<lock::RedisLease> backend(const std::string& holder) {
    return lock::make_redis_backend(options(holder), net.clock());
  }

  /// A command of the test's own on node i, outside the network (no time passes).
  Resp on(std::size_t i, const std::vector<std::string>& argv) {
    sim::Node& node = *nodes[i];
    node.set_now(net.now_us());
    const auto id = node.connect();
    Resp r = node.call(id, argv);
    node.disconnect(id);
    return r;
  }
  Clock::time_point now() const { return net.clock().now(); }

  sim::Network net{kStartUs};
  std::vector<std::unique_ptr<sim::Node>> nodes;
  std::vector<redis::Endpoint> at;
  std::vector<Fault> faults;  // what on_fault was told
};

std::string faults_of(const std::vector<lock::NodeError>& errors) {
  std::string out;
  for (const auto& e : errors) out += std::string(out.empty() ? "" : ", ") + redis::to_string(e.fault) + " " + e.message;
  return out;
}

TEST(SimSeam, OneNodeAcquireRenewReleaseOnTheSimulatedClock) {
  World w(1);
  auto a = w.backend("a");
  const auto t0 = w.now();
  const Acquisition acq = a->acquire();
  ASSERT_TRUE(acq.acquired) << faults_of(acq.errors);
  EXPECT_EQ(acq.votes, 1);
  EXPECT_GT(acq.token, 0u);
  // Sent at the start, decided one round trip later: time is the network's, not the host's.
  EXPECT_EQ(acq.started, t0);
  EXPECT_EQ(acq.valid_until, t0 + kTtl - kDrift);
  EXPECT_EQ(w.now() - t0, 2ms);
  EXPECT_EQ(w.on(0, {"GET", "job"}), Resp::bulk("a#1"));  // the lease id of a's first attempt
  EXPECT_EQ(w.on(0, {"PTTL", "job"}), Resp::num(4999));  // set at 1 ms

  w.net.advance(1000ms);
  const Renewal rn = a->renew();
  EXPECT_TRUE(rn.confirmed) << faults_of(rn.errors);
  EXPECT_EQ(rn.votes, 1);
  EXPECT_EQ(rn.sent, t0 + 1002ms);
  EXPECT_EQ(rn.valid_until, rn.sent + kTtl - kDrift);
  EXPECT_EQ(rn.took, 2ms);
  EXPECT_EQ(w.on(0, {"PTTL", "job"}), Resp::num(4999));

  const Release rel = a->release();
  EXPECT_EQ(rel.released, 1) << rel.error;
  EXPECT_EQ(w.on(0, {"EXISTS", "job"}), Resp::num(0));
  EXPECT_TRUE(w.faults.empty());
}

TEST(SimSeam, ThreeNodesAgreeOnOneProposedToken) {
  World w(3);
  auto a = w.backend("a");
  const Acquisition acq = a->acquire();
  ASSERT_TRUE(acq.acquired) << faults_of(acq.errors);
  // The proposal is the network's wall clock plus the lead (lock/fencing.h): every node
  // issued it, so no raise was needed.
  const std::uint64_t proposed = static_cast<std::uint64_t>(kStartUs) + lock::kInitialLeadUs;
  EXPECT_EQ(acq.token, proposed);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(w.on(i, {"GET", "job"}), Resp::bulk("a#1")) << i;
    EXPECT_EQ(w.on(i, {"GET", "{job}:fence"}), Resp::bulk(std::to_string(proposed))) << i;
  }
  w.net.advance(1000ms);
  const Renewal rn = a->renew();
  EXPECT_TRUE(rn.confirmed);
  EXPECT_EQ(rn.votes, 3);
  const Release rel = a->release();
  EXPECT_EQ(rel.released, 3);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(w.on(i, {"EXISTS", "job"}), Resp::num(0)) << i;
}

TEST(SimSeam, AReplyAfterIoTimeoutIsATimeoutAndTheCommandStillRan) {
  World w(1, 600ms);  // 1200 ms round trip; a first command is given connect + io = 1000 ms
  auto a = w.backend("a");
  const auto t0 = w.now();
  const Acquisition acq = a->acquire();
  EXPECT_FALSE(acq.acquired);
  ASSERT_EQ(acq.errors.size(), 1u) << faults_of(acq.errors);
  EXPECT_EQ(acq.errors[0].fault, Fault::kTimeout);
  EXPECT_EQ(acq.errors[0].message, "redis 10.0.0.1:6379: no reply within 500 ms");
  EXPECT_EQ(w.now() - t0, 1000ms);
  EXPECT_EQ(w.faults, std::vector<Fault>{Fault::kTimeout});
  // The script reached the node at 600 ms and ran: the late grant a socket leaves too, and
  // what its TTL (or the next attempt's undo) ends.
  EXPECT_EQ(w.on(0, {"GET", "job"}), Resp::bulk("a#1"));
}

TEST(SimSeam, ARenewalThatMissesIoTimeoutOnAnOpenLinkFailsAtIoTimeout) {
  World w(1);
  auto a = w.backend("a");
  ASSERT_TRUE(a->acquire().acquired);
  w.net.advance(1000ms);
  w.net.set_latency(w.at[0], 300ms);  // 600 ms round trip on an open link: io_timeout is 500
  const auto t0 = w.now();
  const Renewal rn = a->renew();
  EXPECT_FALSE(rn.confirmed);
  EXPECT_FALSE(rn.lost);
  EXPECT_EQ(w.now() - t0, 500ms);
  ASSERT_EQ(rn.errors.size(), 1u) << faults_of(rn.errors);
  EXPECT_EQ(rn.errors[0].fault, Fault::kTimeout);
  EXPECT_EQ(rn.errors[0].message, "redis 10.0.0.1:6379: no reply within 500 ms");
}

TEST(SimSeam, ASlowNodeCostsTheRoundNothingAndTimesOutOnItsOwn) {
  World w(3);
  auto a = w.backend("a");
  ASSERT_TRUE(a->acquire().acquired);
  w.net.advance(1000ms);
  w.net.set_latency(w.at[2], 400ms);
  const auto t0 = w.now();
  const Renewal rn = a->renew();
  // Decided by the two quick nodes one round trip in (docs/DESIGN.md, invariant 8).
  EXPECT_TRUE(rn.confirmed);
  EXPECT_EQ(rn.votes, 2);
  EXPECT_EQ(w.now() - t0, 2ms);
  // Its call is still out; the next round's look finds its deadline passed, and the node
  // waits out its retry time.
  w.net.advance(600ms);
  const Renewal next = a->renew();
  EXPECT_TRUE(next.confirmed);
  EXPECT_EQ(next.votes, 2);
  ASSERT_EQ(next.errors.size(), 1u) << faults_of(next.errors);
  EXPECT_EQ(next.errors[0].fault, Fault::kTimeout);
  EXPECT_EQ(next.errors[0].message, "redis 10.0.0.3:6379: no reply within 500 ms (not retried until its retry time)");
}

TEST(SimSeam, ANodeThatCrashedMidLeaseIsSetAgainByTheRenewal) {
  World w(3);
  auto a = w.backend("a");
  const Acquisition acq = a->acquire();
  ASSERT_TRUE(acq.acquired);
  w.net.advance(1000ms);
  w.net.crash(w.at[1]);
  EXPECT_EQ(w.on(1, {"EXISTS", "job"}), Resp::num(0));
  const Renewal rn = a->renew();
  // The idle link's connection is seen gone before the round (a fresh one carries it), and
  // the renewal sets the key there again with the lease's token.
  EXPECT_TRUE(rn.confirmed);
  EXPECT_EQ(rn.votes, 3);
  EXPECT_EQ(rn.repaired, 1);
  ASSERT_EQ(rn.errors.size(), 1u) << faults_of(rn.errors);
  EXPECT_EQ(rn.errors[0].node, "10.0.0.2:6379 (set again)");
  EXPECT_EQ(w.on(1, {"GET", "job"}), Resp::bulk("a#1"));
  EXPECT_EQ(w.on(1, {"GET", "{job}:fence"}), Resp::bulk(std::to_string(acq.token)));
}

TEST(SimSeam, ANodeRestartedAndTakenByAnotherIsALostLease) {
  World w(1);
  auto a = w.backend("a");
  ASSERT_TRUE(a->acquire().acquired);
  w.net.advance(1000ms);
  w.net.crash(w.at[0]);
  auto b = w.backend("b");
  ASSERT_TRUE(b->acquire().acquired);  // no restart guard here: the empty node grants
  const Renewal rn = a->renew();
  EXPECT_FALSE(rn.confirmed);
  EXPECT_TRUE(rn.lost);
  ASSERT_EQ(rn.errors.size(), 1u) << faults_of(rn.errors);
  EXPECT_EQ(rn.errors[0].node, "10.0.0.1:6379 (lease)");
}

TEST(SimSeam, ABusyLeaseNamesItsHolderAndWhenItEnds) {
  World w(3);
  auto a = w.backend("a");
  ASSERT_TRUE(a->acquire().acquired);
  w.net.advance(1000ms);
  auto b = w.backend("b");
  const Acquisition got = b->acquire();
  EXPECT_FALSE(got.acquired);
  EXPECT_EQ(got.busy, 3);
  EXPECT_EQ(got.holder, "a");
  EXPECT_EQ(got.holder_ttl_ms, 3998);  // 5000 ms set at 1 ms, read at 1003 ms
  EXPECT_TRUE(got.errors.empty()) << faults_of(got.errors);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(w.on(i, {"GET", "job"}), Resp::bulk("a#1")) << i;
}

TEST(SimSeam, ARefusedNodeIsAConnectFailureAndANoVote) {
  World w(3);
  w.net.set_down(w.at[0], true);
  auto a = w.backend("a");
  const Acquisition acq = a->acquire();
  EXPECT_TRUE(acq.acquired);
  EXPECT_EQ(acq.votes, 2);
  ASSERT_EQ(acq.errors.size(), 1u) << faults_of(acq.errors);
  EXPECT_EQ(acq.errors[0].fault, Fault::kConnect);
  EXPECT_EQ(acq.errors[0].message, "redis 10.0.0.1:6379: connect to 10.0.0.1:6379: Connection refused (errno 111)");
}

/// Everything above in one run, the outcomes noted into the network's trace.
std::vector<std::string> scenario() {
  World w(3);
  auto a = w.backend("a");
  auto b = w.backend("b");
  auto say = [&](const std::string& what, bool yes, const std::vector<lock::NodeError>& errors) {
    w.net.note(what + (yes ? " yes " : " no ") + faults_of(errors));
  };
  const Acquisition acq = a->acquire();
  say("a acquire", acq.acquired, acq.errors);
  w.net.advance(700ms);
  const Acquisition busy = b->acquire();
  say("b acquire", busy.acquired, busy.errors);
  w.net.set_latency(w.at[2], 400ms);
  const Renewal r1 = a->renew();
  say("a renew", r1.confirmed, r1.errors);
  w.net.advance(900ms);
  w.net.crash(w.at[0]);
  w.net.set_latency(w.at[2], 1ms);
  const Renewal r2 = a->renew();
  say("a renew", r2.confirmed, r2.errors);
  const Release rel = a->release();
  w.net.note("a release " + std::to_string(rel.released));
  const Acquisition next = b->acquire();
  say("b acquire", next.acquired, next.errors);
  w.net.note("b token " + std::to_string(next.token));
  return w.net.trace();
}

TEST(SimSeam, TheSameInputsGiveTheSameTraceByteForByte) {
  const auto first = scenario();
  const auto second = scenario();
  ASSERT_GT(first.size(), 20u);
  EXPECT_EQ(first, second);
  // What the trace holds: the commands as they ran on each node, and the notes.
  const auto has = [&](const std::string& part) {
    return std::any_of(first.begin(), first.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has("10.0.0.1:6379 #1.1 > EVAL <"));
  EXPECT_TRUE(has("10.0.0.2:6379 #2.2 > EVALSHA "));  // the script ran there once: by SHA
  EXPECT_TRUE(has("10.0.0.1:6379 crashed"));
  EXPECT_TRUE(has("10.0.0.1:6379 #1.1 closed (closed): connection closed by the server"));
  EXPECT_TRUE(has("a renew yes reply redis 10.0.0.1:6379: the lease was gone from this node"));
  EXPECT_TRUE(has("b acquire yes"));
}

TEST(SimSeam, TheSocketNetworkRefusesALinkItDidNotMake) {
  // A backend wired to two networks at once would poll() a link that has no fd: refused.
  World w(1);
  auto link = w.net.link(w.options("a").nodes[0]);
  EXPECT_THROW(redis::sockets().drive({link.get()}, nullptr, {}), std::invalid_argument);
}

}  // namespace
}  // namespace redisgo
