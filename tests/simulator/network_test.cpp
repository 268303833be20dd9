// The simulated network: calls answered in order, a partition that holds requests until it
// heals (they still run), a lost message as a timeout, a crash that resets connections and
// restarts the node empty, and pushes to a subscribed connection.
#include "simulator/network.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace redisgo::simulator {
namespace {

struct Bench {
  World world{42};
  Network net{world, 2, {0, 0}};
  Process client{"client"};

  /// Runs `body` in a fiber of `client` until the simulated time `limit`.
  void run(const std::function<void()>& body, Time limit = 30 * kSecond) {
    world.spawn(&client, "test", body);
    world.run_until(limit);
  }
  /// Waits (in a fiber) until `call` is done.
  void await(Wire& w, const WireCallPtr& call) {
    w.set_listener(world.current());
    while (!call->done()) world.wait(kNever);
    w.set_listener(nullptr);
  }
};

TEST(SimNetwork, CallsAreAnsweredInOrder) {
  Bench b;
  Wire w(b.net, 0, 0, &b.client, {});
  std::vector<std::string> got;
  b.run([&] {
    auto set = w.send({"SET", "k", "v"});
    auto get = w.send({"GET", "k"});
    b.await(w, get);
    ASSERT_TRUE(set->done());
    got = {set->reply.text, get->reply.text};
  });
  EXPECT_EQ(got, (std::vector<std::string>{"OK", "v"}));
}

TEST(SimNetwork, APartitionTimesTheCallOutAndTheRequestStillRunsWhenItHeals) {
  Bench b;
  Wire w(b.net, 0, 0, &b.client, {});
  WireCallPtr set;
  b.run([&] {
    b.await(w, w.send({"PING"}));  // connected first
    b.net.partition(0, 0, b.world.now() + 2 * kSecond);
    set = w.send({"SET", "k", "late"});
    b.await(w, set);
  });
  ASSERT_EQ(set->state, WireCall::State::kFailed);
  EXPECT_EQ(set->fault, redis::Fault::kTimeout);
  const auto id = b.net.node(0).connect();
  EXPECT_EQ(b.net.node(0).call(id, {"GET", "k"}).text, "late");
}

TEST(SimNetwork, ACrashResetsTheConnectionAndTheNodeComesBackEmpty) {
  Bench b;
  Wire w(b.net, 0, 1, &b.client, {});
  WireCallPtr after;
  std::string value = "unset";
  b.run([&] {
    b.await(w, w.send({"SET", "k", "v"}));
    b.net.crash(1, 300 * kMs);
    auto during = w.send({"GET", "k"});
    b.await(w, during);
    EXPECT_EQ(during->state, WireCall::State::kFailed);
    b.world.sleep_until(b.world.now() + kSecond);
    after = w.send({"GET", "k"});
    b.await(w, after);
  });
  ASSERT_EQ(after->state, WireCall::State::kReplied);
  EXPECT_TRUE(after->reply.is_nil());
  EXPECT_EQ(b.net.restarts(), 1);
}

TEST(SimNetwork, ASubscribedConnectionHearsPublishes) {
  Bench b;
  Wire sub(b.net, 0, 0, &b.client, {});
  Wire pub(b.net, 1, 0, &b.client, {});
  std::vector<sim::Resp> heard;
  long long receivers = -1;
  b.run([&] {
    b.await(sub, sub.send({"SUBSCRIBE", "ch"}));
    auto p = pub.send({"PUBLISH", "ch", "hello"});
    b.await(pub, p);
    receivers = p->reply.integer;
    sub.set_listener(b.world.current());
    while (!sub.has_pushes()) b.world.wait(kNever);
    heard = sub.take_pushes();
  });
  EXPECT_EQ(receivers, 1);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(sim::to_string(heard[0]), "[\"message\", \"ch\", \"hello\"]");
}

TEST(SimNetwork, AClosedSubscriberIsNoLongerCountedOnceItsFinArrives) {
  Bench b;
  auto sub = std::make_unique<Wire>(b.net, 0, 0, &b.client, WireOptions{});
  Wire pub(b.net, 1, 0, &b.client, {});
  long long receivers = -1;
  b.run([&] {
    b.await(*sub, sub->send({"SUBSCRIBE", "ch"}));
    sub.reset();
    b.world.sleep_until(b.world.now() + 10 * kMs);
    auto p = pub.send({"PUBLISH", "ch", "hello"});
    b.await(pub, p);
    receivers = p->reply.integer;
  });
  EXPECT_EQ(receivers, 0);
}

}  // namespace
}  // namespace redisgo::simulator
