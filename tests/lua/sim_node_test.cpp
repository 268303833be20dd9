// The simulated node's own behaviour where the table tests do not reach it: the clock (lazy
// expiry, PTTL at the exact millisecond, TIME, uptime), a crash, pub/sub counts, and the Lua
// engine's conversions and errors. Where a behaviour is Redis's, the same call is compared
// with a real redis-server in the Commands table (lua_tables_test.cpp).

#include <gtest/gtest.h>

#include "sim/node.h"

namespace redisgo::sim {
namespace {

constexpr std::int64_t kStart = 1'700'000'000'123'456;  // µs since the epoch

Resp run(Node& n, Node::ClientId c, std::vector<std::string> argv) { return n.call(c, argv); }

TEST(SimNode, ExpiryFollowsTheSimulatedClock) {
  Node n(kStart);
  auto c = n.connect();
  EXPECT_EQ(run(n, c, {"SET", "k", "v", "PX", "1000"}), Resp::ok());
  EXPECT_EQ(run(n, c, {"PTTL", "k"}), Resp::num(1000));
  n.set_now(kStart + 1'000'000);  // exactly at the expiry millisecond: still there (now > when)
  EXPECT_EQ(run(n, c, {"PTTL", "k"}), Resp::num(0));
  EXPECT_EQ(run(n, c, {"GET", "k"}), Resp::bulk("v"));
  n.set_now(kStart + 1'001'000);
  EXPECT_EQ(run(n, c, {"GET", "k"}), Resp::nil());
  EXPECT_EQ(run(n, c, {"PTTL", "k"}), Resp::num(-2));
  EXPECT_EQ(run(n, c, {"TIME"}), Resp::strings({"1700000001", "124456"}));
}

TEST(SimNode, UptimeIsTheDifferenceOfWholeSecondsAndACrashEmptiesTheNode) {
  Node n(kStart);
  auto c = n.connect();
  ASSERT_EQ(run(n, c, {"SET", "k", "v"}), Resp::ok());
  n.set_now(kStart + 900'000);  // 0.9 s later, but past a whole second of the clock
  EXPECT_NE(run(n, c, {"INFO", "server"}).text.find("uptime_in_seconds:1\r\n"), std::string::npos);
  n.crash();
  EXPECT_FALSE(n.connected(c));
  EXPECT_EQ(run(n, c, {"GET", "k"}).text.rfind("SIMCLOSED", 0), 0u);
  auto d = n.connect();
  EXPECT_EQ(run(n, d, {"GET", "k"}), Resp::nil());
  EXPECT_NE(run(n, d, {"INFO"}).text.find("uptime_in_seconds:0\r\n"), std::string::npos);
}

TEST(SimNode, PublishCountsTheSubscribersThatGotIt) {
  Node n(kStart);
  auto a = n.connect(), b = n.connect(), p = n.connect();
  EXPECT_EQ(run(n, a, {"SUBSCRIBE", "ch"}), Resp::array({Resp::bulk("subscribe"), Resp::bulk("ch"), Resp::num(1)}));
  EXPECT_EQ(run(n, a, {"GET", "x"}).text.rfind("ERR Can't execute 'get'", 0), 0u);
  run(n, b, {"SUBSCRIBE", "ch"});
  EXPECT_EQ(run(n, p, {"PUBLISH", "ch", "hi"}), Resp::num(2));
  EXPECT_EQ(n.take_pushes(a), std::vector<Resp>{Resp::strings({"message", "ch", "hi"})});
  n.disconnect(b);
  EXPECT_EQ(run(n, p, {"PUBLISH", "ch", "again"}), Resp::num(1));
  EXPECT_EQ(run(n, p, {"PUBSUB", "NUMSUB", "ch", "other"}),
            Resp::array({Resp::bulk("ch"), Resp::num(1), Resp::bulk("other"), Resp::num(0)}));
}

TEST(SimNode, LuaConversionsAndErrors) {
  Node n(kStart);
  auto c = n.connect();
  EXPECT_EQ(run(n, c, {"EVAL", "return {1, 2.9, -2.9, 'x', true, false, nil, 7}", "0"}),
            Resp::array({Resp::num(1), Resp::num(2), Resp::num(-2), Resp::bulk("x"), Resp::num(1), Resp::nil()}));
  EXPECT_EQ(run(n, c, {"EVAL", "return redis.status_reply('FINE')", "0"}), Resp::status("FINE"));
  EXPECT_EQ(run(n, c, {"EVAL", "return redis.error_reply('bad thing')", "0"}), Resp::error("bad thing"));
  EXPECT_EQ(run(n, c, {"EVAL", "return redis.error_reply('oops')", "0"}), Resp::error("ERR oops"));
  EXPECT_EQ(run(n, c, {"EVAL", "return redis.call('SET', KEYS[1], ARGV[1], 'PX', 1000)", "1", "k", "v"}),
            Resp::status("OK"));
  EXPECT_EQ(run(n, c, {"EVAL", "return redis.pcall('HGET', KEYS[1], 'f')", "1", "k"}), Resp::error(errors::kWrongType));
  const std::string script = "\nreturn redis.call('HGET', KEYS[1], 'f')";
  const Resp raised = run(n, c, {"EVAL", script, "1", "k"});
  EXPECT_EQ(raised.text.rfind(std::string(errors::kWrongType) + " script: ", 0), 0u) << to_string(raised);
  EXPECT_NE(raised.text.find(", on @user_script:2."), std::string::npos) << to_string(raised);
  const Resp global = run(n, c, {"EVAL", "return nosuch", "0"});
  EXPECT_EQ(global.text.rfind("ERR user_script:1: Script attempted to access nonexistent global variable 'nosuch'", 0), 0u)
      << to_string(global);
  EXPECT_EQ(run(n, c, {"EVAL", "string.foo = 1", "0"}).text.rfind("ERR user_script:1: Attempt to modify a readonly table script: ", 0), 0u);
  EXPECT_EQ(run(n, c, {"EVAL", "error({err='tbl'})", "0"}).text.rfind("tbl script: ", 0), 0u);
  EXPECT_EQ(run(n, c, {"EVALSHA", "0123456789012345678901234567890123456789", "0"}), Resp::error(errors::kNoScript));
  EXPECT_EQ(run(n, c, {"EVAL", "local ok, e = pcall(function() redis.call('NOPE') end) return e", "0"}),
            Resp::bulk("ERR Unknown Redis command called from script"));
}

TEST(SimNode, AclRefusalsDirectAndInsideAScript) {
  Node n(kStart);
  n.set_user(User{"ro", "pw", {"zrem", "pubsub|numsub"}, false, {}});
  auto c = n.connect();
  ASSERT_EQ(run(n, c, {"AUTH", "ro", "pw"}), Resp::ok());
  EXPECT_EQ(run(n, c, {"ZREM", "l", "m"}), Resp::error("NOPERM this user has no permissions to run the 'zrem' command"));
  EXPECT_EQ(run(n, c, {"PUBSUB", "NUMSUB", "x"}),
            Resp::error("NOPERM this user has no permissions to run the 'pubsub|numsub' command"));
  EXPECT_EQ(run(n, c, {"PUBLISH", "ch", "m"}),
            Resp::error("NOPERM this user has no permissions to access one of the channels used as arguments"));
  EXPECT_EQ(run(n, c, {"EVAL", "return redis.pcall('ZREM', 'l', 'm')", "0"}),
            Resp::error("ERR The user executing the script can't run this command or subcommand"));
  EXPECT_EQ(run(n, c, {"EVAL", "return redis.pcall('PUBLISH', 'ch', 'm')", "0"}),
            Resp::error("ERR The user executing the script can't publish to the channel mentioned in the command"));
}

TEST(SimNode, AclRefusalTextsOfRedis72AndLater) {
  NodeOptions o;
  o.version = "8.0.2";
  Node n(kStart, o);
  n.set_user(User{"ro", "pw", {"get"}, false, {}});
  auto c = n.connect();
  ASSERT_EQ(run(n, c, {"AUTH", "ro", "pw"}), Resp::ok());
  EXPECT_EQ(run(n, c, {"GET", "k"}), Resp::error("NOPERM User ro has no permissions to run the 'get' command"));
  EXPECT_EQ(run(n, c, {"PUBLISH", "ch", "m"}), Resp::error("NOPERM No permissions to access a channel"));
  EXPECT_EQ(run(n, c, {"EVAL", "return redis.pcall('GET', 'k')", "0"}),
            Resp::error("ERR ACL failure in script: User ro has no permissions to run the 'get' command"));
  EXPECT_EQ(run(n, c, {"EVAL", "return redis.pcall('PUBLISH', 'ch', 'm')", "0"}),
            Resp::error("ERR ACL failure in script: No permissions to access a channel"));
}

}  // namespace
}  // namespace redisgo::sim
