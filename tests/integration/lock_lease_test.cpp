// Lease primitives on one real redis-server (issue 2): acquire / contend / renew /
// release, ownership checks, expiry, fencing tokens (also across data loss), the release
// notification, inspect, and the renewal thread.

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "lock/lease.h"
#include "lock/renewer.h"
#include "redis/connection.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "util/clock.h"
#include "util/interrupt.h"

namespace redisgo::lock::lock_lease_test {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;
using testing::test_key;
using testing::wait_until;

redis::ConnectionOptions node(const std::string& address) {
  redis::ConnectionOptions o;
  std::string why;
  auto ep = redis::Endpoint::parse(address, &why);
  EXPECT_TRUE(ep) << address << ": " << why;
  if (ep) o.endpoint = *ep;
  o.connect_timeout = 1000ms;
  o.io_timeout = 1000ms;
  return o;
}

LeaseOptions options(const RedisServer& server, const std::string& holder, Millis ttl = 10s) {
  LeaseOptions o;
  o.nodes.push_back(node(server.address()));
  o.key = test_key();
  o.holder = holder;
  o.ttl = ttl;
  return o;
}

std::int64_t pttl(const RedisServer& s, const std::string& key) { return std::stoll(s.cli({"PTTL", key})); }

/// A renewer's backend factory over `o` (watching the renewer's stop fd).
Renewer::BackendFactory factory(LeaseOptions o) {
  return [o](int cancel_fd) {
    LeaseOptions copy = o;
    copy.cancel_fd = cancel_fd;
    return make_redis_backend(copy);
  };
}

TEST(LockLease, AcquireContendRenewRelease) {
  RedisServer server;
  auto a = make_redis_backend(options(server, "holder-a"));
  auto b = make_redis_backend(options(server, "holder-b"));
  const auto key = test_key();

  auto got = a->acquire();
  ASSERT_TRUE(got.acquired) << describe_errors(got.errors);
  EXPECT_EQ(got.votes, 1);
  EXPECT_GT(got.token, 0u);
  EXPECT_GT(got.valid_until, SystemClock::instance().now());
  EXPECT_LE(got.valid_until, SystemClock::instance().now() + 10s);
  EXPECT_EQ(holder_of(server.cli({"GET", key})), "holder-a");
  EXPECT_EQ(server.cli({"GET", "{" + key + "}:fence"}), std::to_string(got.token));

  auto busy = b->acquire();
  EXPECT_FALSE(busy.acquired);
  EXPECT_EQ(busy.token, 0u);
  EXPECT_EQ(busy.holder, "holder-a");
  EXPECT_GT(busy.holder_ttl_ms, 0);
  EXPECT_LE(busy.holder_ttl_ms, 10000);
  EXPECT_TRUE(busy.errors.empty());
  // No re-entrancy: the holder itself is refused too, and its lease is untouched.
  EXPECT_FALSE(a->acquire().acquired);
  EXPECT_EQ(holder_of(server.cli({"GET", key})), "holder-a");

  server.cli({"PEXPIRE", key, "3000"});
  auto renewed = a->renew();
  EXPECT_TRUE(renewed.confirmed);
  EXPECT_FALSE(renewed.lost);
  EXPECT_GT(pttl(server, key), 3000);  // back to the full 10 s

  EXPECT_EQ(a->release().released, 1);
  EXPECT_EQ(server.cli({"EXISTS", key}), "0");
  EXPECT_EQ(a->release().released, 0);  // already gone: nothing of ours to delete

  auto next = b->acquire();
  ASSERT_TRUE(next.acquired);
  EXPECT_GT(next.token, got.token);
  EXPECT_EQ(b->release().released, 1);
}

TEST(LockLease, NonHolderRenewAndReleaseChangeNothing) {
  RedisServer server;
  auto a = make_redis_backend(options(server, "holder-a", 10s));
  auto b = make_redis_backend(options(server, "holder-b", 60s));
  const auto key = test_key();
  ASSERT_TRUE(a->acquire().acquired);

  auto r = b->renew();
  EXPECT_FALSE(r.confirmed);
  EXPECT_TRUE(r.lost);  // the only node says the key is not b's
  const auto left = pttl(server, key);
  EXPECT_GT(left, 0);
  EXPECT_LE(left, 10000);  // b's 60 s TTL was not applied

  EXPECT_EQ(b->release().released, 0);
  EXPECT_EQ(holder_of(server.cli({"GET", key})), "holder-a");
  EXPECT_LE(pttl(server, key), left);
  EXPECT_EQ(a->release().released, 1);
}

TEST(LockLease, LeaseExpiresWhenNotRenewed) {
  RedisServer server;
  auto a = make_redis_backend(options(server, "holder-a", 200ms));
  auto b = make_redis_backend(options(server, "holder-b", 200ms));
  ASSERT_TRUE(a->acquire().acquired);
  EXPECT_FALSE(b->acquire().acquired);
  ASSERT_TRUE(wait_until([&] { return server.cli({"EXISTS", test_key()}) == "0"; }, 5s));
  EXPECT_TRUE(b->acquire().acquired);
  auto late = a->renew();  // a's lease is gone: renewing must not revive it
  EXPECT_FALSE(late.confirmed);
  EXPECT_TRUE(late.lost);
  EXPECT_EQ(holder_of(server.cli({"GET", test_key()})), "holder-b");
}

TEST(LockLease, TokensStrictlyIncreaseOverAlternatingHolders) {
  RedisServer server;
  auto a = make_redis_backend(options(server, "holder-a"));
  auto b = make_redis_backend(options(server, "holder-b"));
  std::uint64_t last = 0;
  for (int i = 0; i < 1000; ++i) {
    auto& who = (i % 2 == 0) ? a : b;
    auto got = who->acquire();
    ASSERT_TRUE(got.acquired) << "attempt " << i;
    ASSERT_GT(got.token, last) << "attempt " << i;
    last = got.token;
    ASSERT_EQ(who->release().released, 1) << "attempt " << i;
  }
  // The stored counter is the exact decimal (not Lua's 14-digit "1.79e+15").
  EXPECT_EQ(server.cli({"GET", "{" + test_key() + "}:fence"}), std::to_string(last));
}

TEST(LockLease, TokenIncreasesAcrossRestartThatLostAllData) {
  RedisServer server;
  auto a = make_redis_backend(options(server, "holder-a"));
  std::uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto got = a->acquire();
    ASSERT_TRUE(got.acquired);
    last = got.token;
    a->release();
  }
  server.restart();
  ASSERT_EQ(server.cli({"EXISTS", "{" + test_key() + "}:fence"}), "0");  // the counter is gone
  // The same backend reconnects (and re-sends the scripts the new server lacks); its
  // first round may meet the dead socket and put the node in a short retry backoff.
  Acquisition got;
  ASSERT_TRUE(wait_until([&] { return (got = a->acquire()).acquired; }, 5s))
      << describe_errors(got.errors);
  EXPECT_GT(got.token, last);  // the TIME floor, not 1
}

TEST(LockLease, ReleasePublishesOnTheReleaseChannel) {
  RedisServer server;
  auto a = make_redis_backend(options(server, "holder-a"));
  const auto channel = "{" + test_key() + "}:released";

  // An independent subscriber, straight hiredis: the test's own view of the server.
  timeval tv{5, 0};
  struct ContextDeleter {
    void operator()(redisContext* c) const noexcept { redisFree(c); }
  };
  std::unique_ptr<redisContext, ContextDeleter> sub(redisConnectWithTimeout("127.0.0.1", server.port(), tv));
  ASSERT_TRUE(sub && !sub->err);
  redisSetTimeout(sub.get(), tv);
  redis::ReplyPtr confirm(static_cast<redisReply*>(redisCommand(sub.get(), "SUBSCRIBE %s", channel.c_str())));
  ASSERT_TRUE(confirm);

  ASSERT_TRUE(a->acquire().acquired);
  EXPECT_EQ(a->release().released, 1);
  void* raw = nullptr;
  ASSERT_EQ(redisGetReply(sub.get(), &raw), REDIS_OK);
  redis::ReplyPtr msg(static_cast<redisReply*>(raw));
  ASSERT_EQ(msg->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(msg->elements, 3u);
  EXPECT_EQ(std::string(msg->element[0]->str), "message");
  EXPECT_EQ(std::string(msg->element[1]->str), channel);
  EXPECT_EQ(std::string(msg->element[2]->str), "holder-a");

  // A release that deletes nothing publishes nothing.
  EXPECT_EQ(a->release().released, 0);
  EXPECT_EQ(server.cli({"PUBLISH", channel, "marker"}), "1");
  ASSERT_EQ(redisGetReply(sub.get(), &raw), REDIS_OK);
  redis::ReplyPtr next(static_cast<redisReply*>(raw));
  EXPECT_EQ(std::string(next->element[2]->str), "marker");
}

TEST(LockLease, InspectReportsHolderTtlAndToken) {
  RedisServer server;
  auto a = make_redis_backend(options(server, "holder-a"));
  auto got = a->acquire();
  ASSERT_TRUE(got.acquired);
  auto views = a->inspect();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].node, server.address());
  EXPECT_TRUE(views[0].reachable);
  EXPECT_TRUE(views[0].held);
  EXPECT_EQ(views[0].holder, "holder-a");
  EXPECT_GT(views[0].pttl_ms, 0);
  EXPECT_LE(views[0].pttl_ms, 10000);
  EXPECT_EQ(views[0].token, got.token);

  a->release();
  views = a->inspect();
  EXPECT_TRUE(views[0].reachable);
  EXPECT_FALSE(views[0].held);
  EXPECT_EQ(views[0].holder, "");
  EXPECT_EQ(views[0].pttl_ms, -2);
  EXPECT_EQ(views[0].token, got.token);  // the counter outlives the lease
}

TEST(LockLease, UnreachableNodeIsANoVoteNotAnException) {
  LeaseOptions o;
  o.nodes.push_back(node("127.0.0.1:" + std::to_string(testing::free_port())));
  o.key = test_key();
  o.holder = "holder-a";
  auto a = make_redis_backend(o);
  auto got = a->acquire();
  EXPECT_FALSE(got.acquired);
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_NE(got.errors[0].message.find("127.0.0.1"), std::string::npos) << got.errors[0].message;
  EXPECT_EQ(got.errors[0].fault, redis::Fault::kConnect);
  // Now in its retry backoff: acquire and renew skip it and say so.
  auto again = a->acquire();
  ASSERT_EQ(again.errors.size(), 1u);
  EXPECT_NE(again.errors[0].message.find("not retried"), std::string::npos) << again.errors[0].message;
  EXPECT_EQ(again.errors[0].fault, redis::Fault::kConnect);  // the cause that put it there
  EXPECT_GT(again.not_before, SystemClock::instance().now());  // nothing to send before then
  auto r = a->renew();
  EXPECT_FALSE(r.confirmed);
  EXPECT_FALSE(r.lost);  // no node said "not yours": unreachable proves nothing
  EXPECT_EQ(a->release().released, 0);
  auto views = a->inspect();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_FALSE(views[0].reachable);
  EXPECT_FALSE(views[0].error.empty());
}

TEST(LockLease, WrongTypeKeyIsAFailureNotAGrant) {
  RedisServer server;
  auto a = make_redis_backend(options(server, "holder-a"));
  server.cli({"SET", "{" + test_key() + "}:fence", "not-a-number"});
  auto got = a->acquire();
  EXPECT_FALSE(got.acquired);
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_NE(got.errors[0].message.find("fence counter"), std::string::npos) << got.errors[0].message;
  EXPECT_EQ(server.cli({"EXISTS", test_key()}), "0");  // the SET was undone in the same script
}

TEST(LockRenewer, KeepsTheLeaseAlivePastSeveralTtls) {
  RedisServer server;
  auto opts = options(server, "holder-a", 500ms);
  auto a = make_redis_backend(opts);
  auto got = a->acquire();
  ASSERT_TRUE(got.acquired);
  Interrupt wake;
  opts.lease_id = got.lease_id;  // told the lease, as the daemon's renewal thread is
  Renewer renewer(factory(opts), 50ms, got.started, got.valid_until, wake);
  // 30 renewals at 50 ms take ~3 TTLs; without them the key would be gone after one.
  ASSERT_TRUE(wait_until([&] { return renewer.renewals() >= 30 || renewer.lost(); }, 10s));
  EXPECT_FALSE(renewer.lost()) << renewer.lost_reason();
  EXPECT_EQ(holder_of(server.cli({"GET", test_key()})), "holder-a");
  EXPECT_GT(renewer.valid_until(), got.valid_until);
  EXPECT_TRUE(wake.triggered());
  renewer.stop();
  EXPECT_EQ(a->release().released, 1);
}

TEST(LockRenewer, PausedServerEndsInLostLease) {
  RedisServer server;
  auto opts = options(server, "holder-a", 300ms);
  opts.nodes[0].io_timeout = 50ms;
  opts.nodes[0].connect_timeout = 50ms;
  auto a = make_redis_backend(opts);
  auto got = a->acquire();
  ASSERT_TRUE(got.acquired);
  Interrupt wake;
  opts.lease_id = got.lease_id;  // told the lease, as the daemon's renewal thread is
  Renewer renewer(factory(opts), 60ms, got.started, got.valid_until, wake);
  ASSERT_TRUE(wait_until([&] { return renewer.renewals() >= 1; }, 5s));
  server.pause();
  ASSERT_TRUE(wait_until([&] { return renewer.lost(); }, 5s));
  server.resume();
  EXPECT_NE(renewer.lost_reason().find("deadline passed"), std::string::npos) << renewer.lost_reason();
  EXPECT_TRUE(wake.triggered());
  // The deadline it reports is the last confirmed one, already in the past.
  EXPECT_LE(renewer.valid_until(), SystemClock::instance().now());
}

TEST(LockRenewer, TakenOverKeyIsReportedLost) {
  RedisServer server;
  auto opts = options(server, "holder-a", 5s);
  auto a = make_redis_backend(opts);
  auto got = a->acquire();
  ASSERT_TRUE(got.acquired);
  Interrupt wake;
  opts.lease_id = got.lease_id;  // told the lease, as the daemon's renewal thread is
  Renewer renewer(factory(opts), 20ms, got.started, got.valid_until, wake);
  server.cli({"SET", test_key(), "intruder"});
  ASSERT_TRUE(wait_until([&] { return renewer.lost(); }, 5s));
  EXPECT_NE(renewer.lost_reason().find("no longer ours"), std::string::npos) << renewer.lost_reason();
  EXPECT_EQ(server.cli({"GET", test_key()}), "intruder");  // never overwritten by renew
}

}  // namespace
}  // namespace redisgo::lock::lock_lease_test

namespace redisgo::lock::lock_lease_test {
namespace {

std::int64_t uptime_s(const RedisServer& s) {
  const std::string info = s.cli({"INFO", "server"});
  const auto at = info.find("uptime_in_seconds:");
  return at == std::string::npos ? -1 : std::stoll(info.substr(at + 18));
}

/// A 2 s lease under a 1 s restart guard: a server grants an absent key once it says it has
/// been up for 2 s.
LeaseOptions guarded(const RedisServer& server, const std::string& holder) {
  LeaseOptions o = options(server, holder, 2s);
  o.restart_guard = 1000ms;
  return o;
}

TEST(LockRestartGuard, AFreshServerGrantsAnAbsentKeyOnlyOnceUpForTheGuard) {
  RedisServer server;  // just started: up 0 or 1 s
  auto a = make_redis_backend(guarded(server, "holder-a"));
  const auto t0 = std::chrono::steady_clock::now();
  auto first = a->acquire();
  ASSERT_FALSE(first.acquired);
  ASSERT_EQ(first.guarded.size(), 1u);
  EXPECT_GT(first.guarded[0].left_ms, 0);
  EXPECT_LE(first.guarded[0].left_ms, 2000);  // (uptime - 1) s must reach the guard
  EXPECT_EQ(first.guard_wait_ms, first.guarded[0].left_ms);
  EXPECT_EQ(first.busy, 0);
  EXPECT_TRUE(first.errors.empty());
  EXPECT_EQ(server.cli({"EXISTS", test_key()}), "0");  // the SET was undone in the script
  // Paced as a waiter would be (the guard's wait is the hint): granted once it opens.
  Acquisition got;
  ASSERT_TRUE(wait_until([&] { return (got = a->acquire()).acquired; }, 5s, 100ms));
  const auto waited = std::chrono::steady_clock::now() - t0;
  // The guard's cost is the wait until the server's uptime reaches the lease's 2 s and no
  // more: at most 2 s from the server's start (before t0) plus one 100 ms poll; measured
  // 1.2 s. 2.5 s leaves 400 ms for a slow acquire, and a guard that waited a second round
  // (or for the lease's own 2 s after opening) would exceed it.
  EXPECT_LE(waited, 2500ms);
  EXPECT_GE(uptime_s(server), 2);
  EXPECT_TRUE(got.unguarded.empty());
  std::cout << "first use of a key on a fresh server waited "
            << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms (guard 1000 ms)\n";
}

TEST(LockRestartGuard, AServerUpLongerThanTheGuardGrantsAtOnceAndAHeldKeyIsBusyNotGuarded) {
  RedisServer server;
  ASSERT_TRUE(wait_until([&] { return uptime_s(server) >= 2; }, 5s, 100ms));
  auto a = make_redis_backend(guarded(server, "holder-a"));
  auto got = a->acquire();
  ASSERT_TRUE(got.acquired);  // first use of the key: no wait
  EXPECT_TRUE(got.guarded.empty());
  // After an empty restart the holder's key is busy for nobody: the guard holds others off...
  server.kill();
  server.start();
  auto b = make_redis_backend(guarded(server, "holder-b"));
  auto miss = b->acquire();
  ASSERT_FALSE(miss.acquired) << "a second holder got the lease of a restarted server";
  EXPECT_EQ(miss.guarded.size(), 1u);
  // ...while the holder sets its key again at its next renewal.
  Renewal r;
  ASSERT_TRUE(wait_until([&] { return (r = a->renew()).confirmed; }, 3s, 50ms));
  EXPECT_EQ(r.repaired, 1);
  miss = b->acquire();
  EXPECT_FALSE(miss.acquired);
  EXPECT_EQ(miss.busy, 1);
  EXPECT_TRUE(miss.guarded.empty());
  EXPECT_EQ(miss.holder, "holder-a");
}

TEST(LockRestartGuard, AUserWithoutInfoIsGrantedAsBeforeAndToldTheGuardCannotApply) {
  RedisServer server(testing::with_acl_user("user noinfo on >pw ~* &* +@all -info"));
  LeaseOptions o = guarded(server, "holder-a");
  o.nodes[0].username = "noinfo";
  o.nodes[0].password = "pw";
  auto a = make_redis_backend(o);
  auto got = a->acquire();
  ASSERT_TRUE(got.acquired) << (got.errors.empty() ? "" : got.errors[0].message);
  ASSERT_EQ(got.unguarded.size(), 1u);
  EXPECT_TRUE(got.guarded.empty());
  // inspect() says the uptime is unknown rather than failing.
  auto views = a->inspect();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_TRUE(views[0].reachable) << views[0].error;
  EXPECT_EQ(views[0].uptime_s, -1);
}

TEST(LockRestartGuard, AHolderWithALongerLeaseRaisesTheGuard) {
  RedisServer server;
  ASSERT_TRUE(wait_until([&] { return uptime_s(server) >= 2; }, 5s, 100ms));
  auto a = make_redis_backend(guarded(server, "holder-a"));
  // A value set by hand with a long TTL (a maintenance hold) is no daemon's lease: it says
  // nothing about another expire, and deleting it lets the job run at once.
  server.cli({"SET", test_key(), "maintenance", "PX", "600000"});
  auto miss = a->acquire();
  ASSERT_FALSE(miss.acquired);
  EXPECT_EQ(miss.longer_lease_ms, -1);
  server.cli({"DEL", test_key()});
  auto got = a->acquire();
  ASSERT_TRUE(got.acquired);
  a->release();
  // Another daemon's lease with 8 s left: it runs a longer expire.
  server.cli({"SET", test_key(), "web-2:77:0123456789abcdef0123456789abcdef", "PX", "8000"});
  miss = a->acquire();
  ASSERT_FALSE(miss.acquired);
  EXPECT_GT(miss.longer_lease_ms, 2000);
  // The holder's key vanishes (a restart would do it): our guard now covers its 8 s lease.
  server.cli({"DEL", test_key()});
  miss = a->acquire();
  ASSERT_FALSE(miss.acquired) << "a 1 s guard on a server up 2 s would have granted";
  ASSERT_EQ(miss.guarded.size(), 1u);
  EXPECT_GT(miss.guarded[0].left_ms, 4000);
}

}  // namespace
}  // namespace redisgo::lock::lock_lease_test

namespace redisgo::lock::lock_lease_test {
namespace {

TEST(LockRestartGuard, AHolderWhoseKeyVanishedAfterANewerGrantDoesNotTakeItBack) {
  // A FLUSHALL or a DEL is not a restart: the server's uptime stays, so the guard cannot
  // see it, and a newcomer may be granted the key. The fence counter then shows a token
  // above ours: the holder must not set the key again as if nothing happened.
  RedisServer server;
  auto a = make_redis_backend(options(server, "holder-a", 2s));
  ASSERT_TRUE(a->acquire().acquired);
  server.cli({"DEL", test_key()});
  auto b = make_redis_backend(options(server, "holder-b", 2s));
  ASSERT_TRUE(b->acquire().acquired);  // a newer token
  b->release();                        // the key is absent again, the counter stays
  auto r = a->renew();
  EXPECT_TRUE(r.lost);
  EXPECT_FALSE(r.confirmed);
  EXPECT_EQ(server.cli({"EXISTS", test_key()}), "0");
}

}  // namespace
}  // namespace redisgo::lock::lock_lease_test

namespace redisgo::lock::lock_lease_test {
namespace {

/// A renewal round in flight while the lease is released (docs/DESIGN.md "One acquisition",
/// step 5): the renewer's connections reach the servers through proxies that hold each
/// chunk 300 ms, the release's fallback (the connections that acquired) goes direct. The
/// renew script sets a missing key of ours again (the repair path, which a token enables
/// and no fence check stops on our own release), so a release that overtook the round
/// would leave a ghost lease until its TTL. It must follow the round on its connections.
void expect_no_ghost_after_a_release_during_a_renewal(std::size_t n) {
  std::vector<std::unique_ptr<RedisServer>> servers;
  std::vector<std::unique_ptr<testing::FaultProxy>> proxies;
  LeaseOptions direct;
  direct.key = test_key();
  direct.holder = "holder-a";
  direct.ttl = 10s;
  LeaseOptions proxied = direct;
  for (std::size_t i = 0; i < n; ++i) {
    servers.push_back(std::make_unique<RedisServer>());
    proxies.push_back(std::make_unique<testing::FaultProxy>(servers.back()->port()));
    direct.nodes.push_back(node(servers.back()->address()));
    proxied.nodes.push_back(node(proxies.back()->address()));
    proxied.nodes.back().io_timeout = 3000ms;
  }
  auto main = make_redis_backend(direct);
  const Acquisition got = main->acquire();
  ASSERT_TRUE(got.acquired);
  for (auto& p : proxies) p->latency(300ms);
  Interrupt wake;
  Renewer renewer(factory(Renewer::backend_options(proxied, got, 50ms)), 50ms, got.started, got.valid_until, wake);
  ASSERT_TRUE(wait_until([&] { return renewer.rounds() >= 1; }, 5s));  // on its way: 600 ms there and back
  const Release r = renewer.stop_and_release(*main);
  EXPECT_GE(r.released, static_cast<int>(n / 2 + 1));
  // Everything the renewer sent has reached its server once the proxies have passed it on
  // (300 ms each way): the key must not come back on any node.
  const auto any_key = [&] {
    return std::any_of(servers.begin(), servers.end(), [](const auto& s) { return s->cli({"EXISTS", test_key()}) != "0"; });
  };
  EXPECT_FALSE(wait_until(any_key, 1500ms));
}

TEST(LockRenewer, ARenewalInFlightWhenTheReleaseGoesOutLeavesNoKeyOneNode) {
  expect_no_ghost_after_a_release_during_a_renewal(1);
}

TEST(LockRenewer, ARenewalInFlightWhenTheReleaseGoesOutLeavesNoKeyThreeNodes) {
  expect_no_ghost_after_a_release_during_a_renewal(3);
}

}  // namespace
}  // namespace redisgo::lock::lock_lease_test
