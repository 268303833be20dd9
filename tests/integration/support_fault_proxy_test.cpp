// The fault proxy itself (tests/support/fault_proxy.h), through a real redis-server and
// the code under test's own connection: pass, latency (order kept), blackhole, reset.

#include <gtest/gtest.h>

#include <chrono>

#include "redis/connection.h"
#include "redis/poller.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"

namespace support_fault_proxy_test {

using namespace std::chrono_literals;
using namespace redisgo;
using redisgo::testing::FaultProxy;
using redisgo::testing::RedisServer;
using redisgo::testing::wait_until;

namespace {

redis::ConnectionOptions via(const FaultProxy& p, std::chrono::milliseconds io = 1000ms) {
  redis::ConnectionOptions o;
  o.endpoint = *redis::Endpoint::parse(p.address());
  o.connect_timeout = io;
  o.io_timeout = io;
  return o;
}

redis::CallPtr run(redis::AsyncConnection& c, std::vector<std::string> argv) {
  return redis::run_commands(c, {std::move(argv)}).front();
}

}  // namespace

/// After pass(): under load the proxy thread can still be applying the previous mode (it
/// accepts what is queued under the mode it read before pass()), so a PING made once it
/// has caught up must pass, within a bound.
void expect_healed(redis::AsyncConnection& conn) {
  auto healed = run(conn, {"PING"});
  ASSERT_TRUE(wait_until([&] { return healed->ok() || (healed = run(conn, {"PING"}))->ok(); }, 2s, 20ms))
      << healed->error();
  EXPECT_EQ(healed->reply().str(), "PONG");
}

TEST(FaultProxy, PassesAndDelaysInOrder) {
  RedisServer server;
  FaultProxy proxy(server.port());
  redis::AsyncConnection conn(via(proxy));
  EXPECT_EQ(run(conn, {"PING"})->reply().str(), "PONG");
  proxy.latency(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  auto calls = redis::run_commands(conn, {{"SET", "k", "1"}, {"INCR", "k"}, {"INCR", "k"}, {"GET", "k"}});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(calls[3]->reply().str(), "3");  // order kept
  EXPECT_GE(took, 190ms);                   // 100 ms each way
  proxy.pass();
  expect_healed(conn);
}

TEST(FaultProxy, BlackholeHoldsConnectionsOpenAndSilent) {
  RedisServer server;
  FaultProxy proxy(server.port());
  redis::AsyncConnection conn(via(proxy, 300ms));
  EXPECT_EQ(run(conn, {"PING"})->reply().str(), "PONG");
  proxy.blackhole();
  auto c = run(conn, {"PING"});
  EXPECT_EQ(c->fault(), redis::Fault::kTimeout) << c->error();  // no RST, no reply
  auto fresh = run(conn, {"PING"});  // a new connection is accepted and held too
  EXPECT_EQ(fresh->fault(), redis::Fault::kTimeout) << fresh->error();
  proxy.pass();
  EXPECT_EQ(run(conn, {"PING"})->reply().str(), "PONG");
}

TEST(FaultProxy, ResetCutsEveryConnectionAndRefusesNewOnes) {
  RedisServer server;
  FaultProxy proxy(server.port());
  redis::AsyncConnection conn(via(proxy));
  EXPECT_EQ(run(conn, {"PING"})->reply().str(), "PONG");
  proxy.reset();
  auto c = run(conn, {"PING"});
  EXPECT_EQ(c->state(), redis::Call::State::kFailed);
  EXPECT_TRUE(c->fault() == redis::Fault::kClosed || c->fault() == redis::Fault::kConnect) << c->error();
  auto again = run(conn, {"PING"});
  EXPECT_EQ(again->state(), redis::Call::State::kFailed) << again->error();
  proxy.pass();
  expect_healed(conn);
}

}  // namespace support_fault_proxy_test
