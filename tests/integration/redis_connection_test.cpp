// Connection and Subscriber against a real redis-server (tests/support/redis_server.h).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <string>
#include <vector>

#include "redis/connection.h"
#include "redis/subscriber.h"
#include "support/redis_server.h"
#include "util/error.h"

namespace redisgo::redis {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;
using testing::RedisServerOptions;
using testing::test_key;
using testing::wait_until;

// Returns its first key's value (nil if absent), so a reply proves the script ran.
constexpr std::string_view kGetScript = "return redis.call('GET', KEYS[1])";
constexpr std::string_view kEchoScript = "return ARGV[1] .. ':' .. KEYS[1]";

ConnectionOptions options_for(const std::string& address, Millis io_timeout = 2000ms) {
  ConnectionOptions o;
  std::string why;
  auto ep = Endpoint::parse(address, &why);
  EXPECT_TRUE(ep) << address << ": " << why;
  if (ep) o.endpoint = *ep;
  o.connect_timeout = 2000ms;
  o.io_timeout = io_timeout;
  return o;
}

// Runs `f`, which must throw E; returns the message (empty and a failure otherwise).
template <class E, class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception";
  return "";
}

// Counts "cmdstat_<name>:calls=N" in INFO commandstats (0 if the command never ran).
int calls_of(const RedisServer& server, const std::string& name) {
  std::string info = server.cli({"INFO", "commandstats"});
  std::string tag = "cmdstat_" + name + ":calls=";
  auto at = info.find(tag);
  if (at == std::string::npos) return 0;
  return std::stoi(info.substr(at + tag.size()));
}

// ------------------------------------------------------------------------- Endpoint

TEST(RedisEndpoint, ParsesHostPortUnixAndIpv6) {
  auto tcp = Endpoint::parse("127.0.0.1:6379");
  ASSERT_TRUE(tcp);
  EXPECT_EQ(tcp->kind, Endpoint::Kind::kTcp);
  EXPECT_EQ(tcp->host, "127.0.0.1");
  EXPECT_EQ(tcp->port, 6379);
  EXPECT_EQ(tcp->str(), "127.0.0.1:6379");

  auto name = Endpoint::parse("redis-a.example:7001");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->host, "redis-a.example");

  auto v6 = Endpoint::parse("[::1]:6380");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 6380);
  EXPECT_EQ(v6->str(), "[::1]:6380");

  auto unix_ep = Endpoint::parse("unix:///run/redis/redis.sock");
  ASSERT_TRUE(unix_ep);
  EXPECT_EQ(unix_ep->kind, Endpoint::Kind::kUnix);
  EXPECT_EQ(unix_ep->path, "/run/redis/redis.sock");
  EXPECT_EQ(unix_ep->str(), "unix:///run/redis/redis.sock");
}

TEST(RedisEndpoint, RejectsMalformed) {
  for (const char* bad : {"", "localhost", ":6379", "host:", "host:0", "host:65536", "host:12x", "host:-1",
                          "unix://relative.sock", "unix://", "[::1:6379", "[]:6379"}) {
    std::string why;
    EXPECT_FALSE(Endpoint::parse(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

// ----------------------------------------------------------------------- Connection

TEST(RedisConnection, CommandsRoundTrip) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  EXPECT_FALSE(conn.connected());
  EXPECT_EQ(conn.command({"PING"}).str(), "PONG");
  EXPECT_TRUE(conn.connected());
  const std::string key = test_key();
  std::string binary("a\0b\r\nc", 6);
  EXPECT_EQ(conn.command({"SET", key, binary}).str(), "OK");
  EXPECT_EQ(conn.command({"GET", key}).str(), binary);
  EXPECT_TRUE(conn.command({"GET", key + ":absent"}).is_nil());
  EXPECT_EQ(conn.command({"INCR", key + ":n"}).integer(), 1);
  Reply arr = conn.command({"MGET", key, key + ":absent"});
  ASSERT_TRUE(arr.is_array());
  EXPECT_EQ(arr.size(), 2u);
  ASSERT_NE(arr.element(0), nullptr);
  EXPECT_EQ(std::string(arr.element(0)->str, arr.element(0)->len), binary);
  EXPECT_EQ(arr.element(2), nullptr);
  EXPECT_THROW(arr.integer(), ReplyError);
  EXPECT_EQ(server.cli({"GET", key + ":n"}), "1");
}

TEST(RedisConnection, ErrorReplyKeepsTheConnection) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  std::string msg = message_of<ReplyError>([&] { conn.command({"NOSUCHCOMMAND"}); });
  EXPECT_NE(msg.find("redis " + server.address() + ": ERR unknown command"), std::string::npos) << msg;
  EXPECT_TRUE(conn.connected());
  EXPECT_EQ(conn.command({"PING"}).str(), "PONG");
}

TEST(RedisConnection, UnixSocket) {
  RedisServer server;
  Connection conn(options_for("unix://" + server.unix_socket()));
  EXPECT_EQ(conn.describe(), "redis unix://" + server.unix_socket());
  const std::string key = test_key();
  conn.command({"SET", key, "via-unix"});
  EXPECT_EQ(server.cli({"GET", key}), "via-unix");
}

TEST(RedisConnection, SocketIsCloseOnExec) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  conn.connect();
  ASSERT_GE(conn.fd(), 0);
  int flags = ::fcntl(conn.fd(), F_GETFD);
  ASSERT_GE(flags, 0);
  EXPECT_TRUE(flags & FD_CLOEXEC);
  conn.disconnect();
  EXPECT_EQ(conn.fd(), -1);
}

TEST(RedisConnection, RefusedNamesTheAddress) {
  const std::string address = "127.0.0.1:" + std::to_string(testing::free_port());
  Connection conn(options_for(address));
  std::string msg = message_of<IoError>([&] { conn.command({"PING"}); });
  EXPECT_NE(msg.find("redis " + address), std::string::npos) << msg;
  EXPECT_NE(msg.find("refused"), std::string::npos) << msg;
  EXPECT_NE(msg.find("errno"), std::string::npos) << msg;
  EXPECT_FALSE(conn.connected());
}

TEST(RedisConnection, PausedServerTimesOutThenRecovers) {
  RedisServer server;
  Connection conn(options_for(server.address(), 300ms));
  conn.command({"PING"});
  server.pause();
  auto start = std::chrono::steady_clock::now();
  std::string msg = message_of<TimeoutError>([&] { conn.command({"PING"}); });
  auto took = std::chrono::steady_clock::now() - start;
  server.resume();
  EXPECT_NE(msg.find("redis " + server.address() + ": timed out after 300ms"), std::string::npos) << msg;
  EXPECT_LT(took, 5s);  // bounded by io_timeout, not blocked until resume
  EXPECT_FALSE(conn.connected());
  EXPECT_EQ(conn.command({"PING"}).str(), "PONG");
}

TEST(RedisConnection, ReconnectsAfterRestart) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  const std::string key = test_key();
  conn.command({"SET", key, "before"});
  server.restart();
  // The call that finds the old socket dead throws (and drops it); the next reconnects.
  try {
    conn.command({"PING"});
    ADD_FAILURE() << "a command on the pre-restart socket succeeded";
  } catch (const ClosedError& e) {
    EXPECT_NE(std::string(e.what()).find("redis " + server.address()), std::string::npos);
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("redis " + server.address()), std::string::npos);
  }
  EXPECT_FALSE(conn.connected());
  EXPECT_TRUE(conn.command({"GET", key}).is_nil());  // empty dataset: it is the new server
  EXPECT_EQ(conn.command({"PING"}).str(), "PONG");
}

TEST(RedisConnection, SelectsDb) {
  RedisServer server;
  auto opts = options_for(server.address());
  opts.db = 3;
  Connection conn(opts);
  const std::string key = test_key();
  conn.command({"SET", key, "in-db-3"});
  EXPECT_EQ(server.cli({"-n", "3", "GET", key}), "in-db-3");
  EXPECT_EQ(server.cli({"GET", key}), "");
  // Reconnects select it again.
  conn.disconnect();
  EXPECT_EQ(conn.command({"GET", key}).str(), "in-db-3");

  opts.db = 99;
  Connection bad(opts);
  std::string msg = message_of<ReplyError>([&] { bad.connect(); });
  EXPECT_NE(msg.find("SELECT 99 failed"), std::string::npos) << msg;
  EXPECT_FALSE(bad.connected());
}

// --------------------------------------------------------------------------- AUTH

TEST(RedisAuth, RightPassword) {
  RedisServerOptions so;
  so.password = "pw-right-7Hq";
  RedisServer server(so);
  auto opts = options_for(server.address());
  opts.password = so.password;
  Connection conn(opts);
  EXPECT_EQ(conn.command({"PING"}).str(), "PONG");
}

TEST(RedisAuth, WrongPasswordIsClearAndSecretFree) {
  RedisServerOptions so;
  so.password = "pw-right-7Hq";
  RedisServer server(so);
  auto opts = options_for(server.address());
  opts.password = "wrong-Secret-42";
  Connection conn(opts);
  std::string msg = message_of<ReplyError>([&] { conn.command({"PING"}); });
  EXPECT_NE(msg.find("redis " + server.address() + ": AUTH failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("WRONGPASS"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("wrong-Secret-42"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("pw-right-7Hq"), std::string::npos) << msg;
  EXPECT_FALSE(conn.connected());
}

TEST(RedisAuth, MissingPasswordIsAReplyError) {
  RedisServerOptions so;
  so.password = "pw-right-7Hq";
  RedisServer server(so);
  Connection conn(options_for(server.address()));
  std::string msg = message_of<ReplyError>([&] { conn.command({"PING"}); });
  EXPECT_NE(msg.find("NOAUTH"), std::string::npos) << msg;
}

TEST(RedisAuth, AclUser) {
  RedisServerOptions so;
  so.acl_users = {"user alice on >s3cret-alice ~* &* +@all"};
  RedisServer server(so);
  auto opts = options_for(server.address());
  opts.username = "alice";
  opts.password = "s3cret-alice";
  Connection conn(opts);
  EXPECT_EQ(conn.command({"ACL", "WHOAMI"}).str(), "alice");

  opts.password = "not-alices-S3cret";
  Connection wrong(opts);
  std::string msg = message_of<ReplyError>([&] { wrong.connect(); });
  EXPECT_NE(msg.find("AUTH failed as user alice"), std::string::npos) << msg;
  EXPECT_NE(msg.find("WRONGPASS"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("not-alices-S3cret"), std::string::npos) << msg;
}

// --------------------------------------------------------------------------- eval

TEST(RedisEval, LoadsOnceThenRunsBySha) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  const std::string key = test_key();
  server.cli({"SET", key, "v1"});
  Script get{kGetScript};
  EXPECT_EQ(conn.eval(get, {key}, {}).str(), "v1");
  EXPECT_EQ(conn.eval(get, {key}, {}).str(), "v1");
  EXPECT_EQ(conn.eval(Script{kEchoScript}, {"k"}, {"a"}).str(), "a:k");
  EXPECT_EQ(calls_of(server, "script|load"), 2);
  EXPECT_EQ(calls_of(server, "evalsha"), 3);
  EXPECT_EQ(calls_of(server, "eval"), 0);
}

TEST(RedisEval, ScriptErrorIsReplyError) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  std::string msg = message_of<ReplyError>([&] { conn.eval(Script{"return redis.call('NOPE')"}, {}, {}); });
  EXPECT_NE(msg.find("redis " + server.address()), std::string::npos) << msg;
  EXPECT_EQ(conn.command({"PING"}).str(), "PONG");
}

TEST(RedisEval, RecoversFromNoscriptAfterFlush) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  Script echo{kEchoScript};
  EXPECT_EQ(conn.eval(echo, {"k"}, {"1"}).str(), "1:k");
  EXPECT_EQ(server.cli({"SCRIPT", "FLUSH"}), "OK");
  EXPECT_EQ(conn.eval(echo, {"k"}, {"2"}).str(), "2:k");
  EXPECT_EQ(calls_of(server, "eval"), 1);  // the NOSCRIPT fallback
  EXPECT_EQ(conn.eval(echo, {"k"}, {"3"}).str(), "3:k");
  EXPECT_EQ(calls_of(server, "eval"), 1);  // EVAL cached it again: back to EVALSHA
}

TEST(RedisEval, RestartBetweenCallsReconnectsAndRecoversFromNoscript) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  const std::string key = test_key();
  Script get{kGetScript};
  conn.command({"SET", key, "old"});
  EXPECT_EQ(conn.eval(get, {key}, {}).str(), "old");
  server.restart();
  EXPECT_THROW(conn.eval(get, {key}, {}), Error);  // finds the old socket dead
  server.cli({"SET", key, "new"});
  EXPECT_EQ(conn.eval(get, {key}, {}).str(), "new");
  // The restarted server knew no script: EVALSHA got NOSCRIPT and EVAL ran it.
  EXPECT_EQ(calls_of(server, "eval"), 1);
  EXPECT_EQ(conn.eval(get, {key}, {}).str(), "new");
  EXPECT_EQ(calls_of(server, "eval"), 1);
}

}  // namespace
}  // namespace redisgo::redis
