// Connection and Subscriber against a real redis-server (tests/support/redis_server.h).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
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

// The fixture waits for the TCP port only; redis-server starts listening on its unix
// socket slightly later. Probe it with a raw socket, independent of the code under test.
bool unix_socket_accepts(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
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
  ASSERT_TRUE(wait_until([&] { return unix_socket_accepts(server.unix_socket()); }, 5000ms));
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

TEST(RedisConnection, HostnameAndZeroTimeoutsMeanBlocking) {
  RedisServer server;
  auto opts = options_for("localhost:" + std::to_string(server.port()));
  opts.connect_timeout = 0ms;
  opts.io_timeout = 0ms;
  Connection conn(opts);
  EXPECT_EQ(conn.command({"PING"}).str(), "PONG");
}

// The mapping table itself, on contexts in each error state hiredis can leave behind.
TEST(RedisErrors, MapsHiredisErrorsInOnePlace) {
  auto thrown = [](int type, const char* errstr, int err) -> std::pair<std::string, std::string> {
    redisContext c{};
    c.err = type;
    std::strncpy(c.errstr, errstr, sizeof c.errstr - 1);
    try {
      detail::throw_context_error(&c, err, "redis h:1", 250ms);
    } catch (const TimeoutError& e) {
      return {"timeout", e.what()};
    } catch (const IoError& e) {
      return {"io", e.what()};
    } catch (const ClosedError& e) {
      return {"closed", e.what()};
    }
    return {"none", ""};
  };
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(thrown(REDIS_ERR_IO, "Resource temporarily unavailable", EAGAIN),
            P("timeout", "redis h:1: timed out after 250ms"));
  EXPECT_EQ(thrown(REDIS_ERR_IO, "Connection timed out", ETIMEDOUT), P("timeout", "redis h:1: timed out after 250ms"));
  EXPECT_EQ(thrown(REDIS_ERR_IO, "Connection timed out", 0), P("timeout", "redis h:1: timed out after 250ms"));
  EXPECT_EQ(thrown(REDIS_ERR_IO, "Connection refused", ECONNREFUSED),
            P("io", "redis h:1: Connection refused (errno 111)"));
  EXPECT_EQ(thrown(REDIS_ERR_EOF, "Server closed the connection", 0),
            P("closed", "redis h:1: connection closed by server"));
  EXPECT_EQ(thrown(REDIS_ERR_PROTOCOL, "Protocol error, got \"x\" as reply type byte", 0).first, "io");
  EXPECT_EQ(thrown(REDIS_ERR_OTHER, "Name or service not known", 0),
            P("io", "redis h:1: Name or service not known"));
}

TEST(RedisConnection, WriteToAVanishedServerIsAnErrorNotSigpipe) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  conn.command({"PING"});
  server.stop();
  // Far larger than the socket buffers: the writes continue after the peer's RST, and
  // write() then fails with EPIPE, which would kill the process by SIGPIPE by default.
  const std::string big(16 << 20, 'x');
  EXPECT_THROW(conn.command({"SET", test_key(), big}), Error);
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

// ---------------------------------------------------------------- send_eval/read_reply

// Polls every connection with a reply in flight and reads it when POLLIN says so, the
// way lock/redlock talks to N nodes from one thread. Bounded by `timeout`.
std::vector<std::optional<Reply>> collect(std::vector<Connection*> conns, Millis timeout = 5000ms) {
  std::vector<std::optional<Reply>> out(conns.size());
  // A reply can already be complete in hiredis's buffer; read_reply() looks there first.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if (conns[i]->reply_pending()) {
        fds.push_back({conns[i]->fd(), POLLIN, 0});
        which.push_back(i);
      }
    }
    if (fds.empty()) return out;
    auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left <= 0ms) {
      ADD_FAILURE() << "replies did not arrive in time";
      return out;
    }
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    EXPECT_GE(n, 0);
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents) out[which[k]] = conns[which[k]]->read_reply();
    }
  }
}

TEST(RedisPipeline, ThreeNodesInParallel) {
  RedisServer a, b, c;
  std::vector<Connection> conns;
  for (auto* s : {&a, &b, &c}) conns.emplace_back(options_for(s->address()));
  Script echo{kEchoScript};
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < conns.size(); ++i) {
      conns[i].send_eval(echo, {"node" + std::to_string(i)}, {std::to_string(round)});
      EXPECT_TRUE(conns[i].reply_pending());
    }
    auto replies = collect({&conns[0], &conns[1], &conns[2]});
    for (std::size_t i = 0; i < conns.size(); ++i) {
      ASSERT_TRUE(replies[i]) << i;
      EXPECT_EQ(replies[i]->str(), std::to_string(round) + ":node" + std::to_string(i));
      EXPECT_FALSE(conns[i].reply_pending());
    }
  }
  // The first send pipelines SCRIPT LOAD with an EVAL (no blocking round trip); later
  // sends run by SHA.
  for (auto* s : {&a, &b, &c}) {
    EXPECT_EQ(calls_of(*s, "script|load"), 1);
    EXPECT_EQ(calls_of(*s, "eval"), 1);
    EXPECT_EQ(calls_of(*s, "evalsha"), 2);
  }
}

TEST(RedisPipeline, NoscriptIsResentAsEval) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  Script echo{kEchoScript};
  conn.send_eval(echo, {"k"}, {"1"});
  EXPECT_EQ(collect({&conn})[0]->str(), "1:k");
  EXPECT_EQ(server.cli({"SCRIPT", "FLUSH"}), "OK");
  {
    // The Script and the argument vectors are temporaries gone before the re-send.
    std::string source(kEchoScript);
    conn.send_eval(Script{source}, {"k"}, {"2"});
    source.assign(source.size(), 'x');
  }
  auto replies = collect({&conn});
  auto& r = replies[0];
  ASSERT_TRUE(r);
  EXPECT_EQ(r->str(), "2:k");
  // One EVAL with the first send, one after NOSCRIPT.
  EXPECT_EQ(calls_of(server, "eval"), 2);
  EXPECT_EQ(calls_of(server, "evalsha"), 1);
}

TEST(RedisPipeline, ScriptErrorIsThrownByReadReply) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  conn.send_eval(Script{"return redis.error_reply('MYERR no')"}, {}, {});
  std::string msg = message_of<ReplyError>([&] { collect({&conn}); });
  EXPECT_NE(msg.find("MYERR no"), std::string::npos) << msg;
  EXPECT_FALSE(conn.reply_pending());
  EXPECT_EQ(conn.command({"PING"}).str(), "PONG");
}

TEST(RedisPipeline, AbandonedReplyIsNotTakenForTheNextCommand) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  conn.send_eval(Script{kEchoScript}, {"k"}, {"stale"});
  // The caller gave up on that reply (say the node was too slow) and moves on.
  EXPECT_EQ(conn.command({"ECHO", "fresh"}).str(), "fresh");
  conn.send_eval(Script{kEchoScript}, {"k"}, {"stale"});
  conn.send_eval(Script{kEchoScript}, {"k"}, {"second"});
  EXPECT_EQ(collect({&conn})[0]->str(), "second:k");
}

TEST(RedisPipeline, SendConnectsAndReportsBrokenNodes) {
  RedisServer server;
  Connection conn(options_for(server.address()));
  EXPECT_FALSE(conn.connected());
  conn.send_eval(Script{kEchoScript}, {"k"}, {"x"});  // connects on demand
  EXPECT_EQ(collect({&conn})[0]->str(), "x:k");
  server.stop();
  // Either the send or the read notices; it is an error naming the node, not a hang.
  std::string msg;
  try {
    conn.send_eval(Script{kEchoScript}, {"k"}, {"y"});
    collect({&conn});
    ADD_FAILURE() << "no error from a stopped server";
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("redis " + server.address()), std::string::npos) << msg;
  EXPECT_FALSE(conn.connected());
  EXPECT_EQ(conn.fd(), -1);
  EXPECT_THROW(conn.send_eval(Script{kEchoScript}, {"k"}, {"z"}), IoError);  // refused
}

// ---------------------------------------------------------------------- Subscriber

// Waits for POLLIN on the subscriber and drains until `want` messages were counted.
int drain_until(Subscriber& sub, int want, Millis timeout = 5000ms) {
  int got = 0;
  wait_until(
      [&] {
        if (!sub.active()) return true;
        pollfd p{sub.fd(), POLLIN, 0};
        if (::poll(&p, 1, 50) > 0) got += sub.drain();
        return got >= want;
      },
      timeout);
  return got;
}

TEST(RedisSubscriber, CountsMessagesOnItsChannel) {
  RedisServer server;
  Subscriber sub(options_for(server.address()));
  EXPECT_FALSE(sub.active());
  EXPECT_EQ(sub.fd(), -1);
  const std::string channel = test_key("released");
  sub.subscribe(channel);
  EXPECT_TRUE(sub.active());
  EXPECT_EQ(sub.channel(), channel);
  EXPECT_EQ(sub.drain(), 0);  // nothing yet, and it does not block
  EXPECT_EQ(server.cli({"PUBLISH", channel, "holder-1"}), "1");
  EXPECT_EQ(server.cli({"PUBLISH", channel + ":other", "x"}), "0");
  EXPECT_EQ(server.cli({"PUBLISH", channel, "holder-2"}), "1");
  EXPECT_EQ(drain_until(sub, 2), 2);
  EXPECT_TRUE(sub.active());
  EXPECT_EQ(sub.drain(), 0);
  int flags = ::fcntl(sub.fd(), F_GETFD);
  EXPECT_TRUE(flags >= 0 && (flags & FD_CLOEXEC));
}

TEST(RedisSubscriber, AuthenticatesLikeConnection) {
  RedisServerOptions so;
  so.acl_users = {"user bob on >bob-Pw-9 ~* &* +@all"};
  so.password = "default-Pw-1";
  RedisServer server(so);
  auto opts = options_for(server.address());
  opts.username = "bob";
  opts.password = "bob-Pw-9";
  Subscriber sub(opts);
  sub.subscribe("chan");
  EXPECT_EQ(server.cli({"PUBLISH", "chan", "m"}), "1");
  EXPECT_EQ(drain_until(sub, 1), 1);

  opts.password = "bad-Bob-Secret";
  Subscriber wrong(opts);
  std::string msg = message_of<ReplyError>([&] { wrong.subscribe("chan"); });
  EXPECT_NE(msg.find("AUTH failed"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("bad-Bob-Secret"), std::string::npos) << msg;
  EXPECT_FALSE(wrong.active());
}

TEST(RedisSubscriber, NoticesTheServerGoingAway) {
  RedisServer server;
  Subscriber sub(options_for(server.address()));
  sub.subscribe("chan");
  server.stop();
  EXPECT_TRUE(wait_until(
      [&] {
        pollfd p{sub.fd(), POLLIN, 0};
        if (::poll(&p, 1, 50) > 0) sub.drain();
        return !sub.active();
      },
      5000ms));
  EXPECT_EQ(sub.fd(), -1);
  EXPECT_EQ(sub.drain(), 0);
  // Resubscribing after the server is back works.
  server.start();
  sub.subscribe("chan");
  EXPECT_TRUE(sub.active());
}

TEST(RedisSubscriber, SubscribeToADeadServerThrows) {
  const std::string address = "127.0.0.1:" + std::to_string(testing::free_port());
  Subscriber sub(options_for(address));
  std::string msg = message_of<IoError>([&] { sub.subscribe("chan"); });
  EXPECT_NE(msg.find("redis " + address), std::string::npos) << msg;
  EXPECT_FALSE(sub.active());
}

}  // namespace
}  // namespace redisgo::redis
