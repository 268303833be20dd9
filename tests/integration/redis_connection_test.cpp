// The non-blocking connection engine (AsyncConnection, drive, Subscriber) against a real
// redis-server, and against fake servers for what Redis itself never does: accept TCP
// and never answer, answer late, send garbage.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "lock/scripts.h"
#include "redis/connection.h"
#include "redis/credentials.h"
#include "redis/poller.h"
#include "redis/subscriber.h"
#include "support/fake_server.h"
#include "support/redis_server.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace redisgo::redis::redis_connection_test {
namespace {

using namespace std::chrono_literals;
using testing::FakeServer;
using testing::RedisServer;
using testing::RedisServerOptions;
using testing::test_key;
using testing::wait_until;

// Returns its first key's value (nil if absent), so a reply proves the script ran.
const Script kGetScript{"return redis.call('GET', KEYS[1])"};
const Script kEchoScript{"return ARGV[1] .. ':' .. KEYS[1]"};

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

/// One command, driven to completion.
CallPtr run(AsyncConnection& conn, std::vector<std::string> argv) {
  return run_commands(conn, {std::move(argv)}).front();
}

DriveOptions for_at_most(Millis d) {
  DriveOptions o;
  o.deadline = std::chrono::steady_clock::now() + d;
  return o;
}

std::string text(const CallPtr& c) {
  if (!c->ok()) return "<" + c->error() + ">";
  return c->reply().str();
}

CallPtr eval(AsyncConnection& conn, const Script& s, const std::vector<std::string>& keys,
             const std::vector<std::string>& args) {
  auto call = conn.eval(s, keys, args);
  drive({&conn}, [&] { return call->done(); });
  return call;
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

TEST(RedisScript, ShaIsTheSha1OfTheSource) {
  // Known SHA-1 vectors, and what Redis names the empty script.
  EXPECT_EQ(Script{""}.sha(), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Script{"abc"}.sha(), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Script{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"}.sha(),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  RedisServer server;
  for (const Script* s : lock::kLeaseScripts) EXPECT_EQ(server.cli({"SCRIPT", "LOAD", std::string(s->source)}), s->sha());
}

// ----------------------------------------------------------------------- Connection

TEST(RedisConnection, CommandsRoundTrip) {
  RedisServer server;
  AsyncConnection conn(options_for(server.address()));
  EXPECT_FALSE(conn.connected());
  EXPECT_EQ(text(run(conn, {"PING"})), "PONG");
  EXPECT_TRUE(conn.connected());
  const auto key = test_key();
  const std::string binary("a\0b\r\nc", 6);
  auto calls = run_commands(conn, {{"SET", key, binary}, {"GET", key}, {"GET", key + ":absent"}, {"INCR", key + ":n"},
                                   {"MGET", key, key + ":absent"}});
  EXPECT_EQ(text(calls[0]), "OK");
  EXPECT_EQ(text(calls[1]), binary);
  EXPECT_TRUE(calls[2]->reply().is_nil());
  EXPECT_EQ(calls[3]->reply().integer(), 1);
  const auto& arr = calls[4]->reply();
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
  AsyncConnection conn(options_for(server.address()));
  auto bad = run(conn, {"NOSUCHCOMMAND"});
  EXPECT_EQ(bad->state(), Call::State::kReplied);
  EXPECT_FALSE(bad->ok());
  EXPECT_EQ(bad->fault(), Fault::kReply);
  EXPECT_NE(bad->error().find("redis " + server.address() + ": ERR unknown command"), std::string::npos)
      << bad->error();
  EXPECT_TRUE(conn.connected());
  EXPECT_EQ(text(run(conn, {"PING"})), "PONG");
}

TEST(RedisConnection, UnixSocket) {
  RedisServer server;
  ASSERT_TRUE(wait_until([&] { return unix_socket_accepts(server.unix_socket()); }, 5000ms));
  AsyncConnection conn(options_for("unix://" + server.unix_socket()));
  EXPECT_EQ(conn.describe(), "redis unix://" + server.unix_socket());
  const auto key = test_key();
  EXPECT_EQ(text(run(conn, {"SET", key, "via-unix"})), "OK");
  EXPECT_EQ(server.cli({"GET", key}), "via-unix");
}

TEST(RedisConnection, SocketIsCloseOnExecAndNonBlocking) {
  RedisServer server;
  AsyncConnection conn(options_for(server.address()));
  run(conn, {"PING"});
  ASSERT_GE(conn.fd(), 0);
  int flags = ::fcntl(conn.fd(), F_GETFD);
  ASSERT_GE(flags, 0);
  EXPECT_TRUE(flags & FD_CLOEXEC);
  EXPECT_TRUE(::fcntl(conn.fd(), F_GETFL) & O_NONBLOCK);
  conn.close(Fault::kCancelled, "test");
  EXPECT_EQ(conn.fd(), -1);
}

TEST(RedisConnection, RefusedNamesTheAddressAndTheFault) {
  const std::string address = "127.0.0.1:" + std::to_string(testing::free_port());
  AsyncConnection conn(options_for(address));
  auto c = run(conn, {"PING"});
  EXPECT_EQ(c->state(), Call::State::kFailed);
  EXPECT_EQ(c->fault(), Fault::kConnect);
  EXPECT_NE(c->error().find("redis " + address), std::string::npos) << c->error();
  EXPECT_NE(c->error().find("refused"), std::string::npos) << c->error();
  EXPECT_NE(c->error().find("errno"), std::string::npos) << c->error();
  EXPECT_FALSE(conn.connected());
  EXPECT_EQ(conn.last_fault(), Fault::kConnect);
}

TEST(RedisConnection, HostnameIsResolvedOffThread) {
  RedisServer server;
  AsyncConnection conn(options_for("localhost:" + std::to_string(server.port())));
  EXPECT_EQ(text(run(conn, {"PING"})), "PONG");
  AsyncConnection unknown(options_for("no-such-host.invalid:6379"));
  auto c = run(unknown, {"PING"});
  EXPECT_EQ(c->fault(), Fault::kResolve);
  EXPECT_NE(c->error().find("cannot resolve 'no-such-host.invalid'"), std::string::npos) << c->error();
}

TEST(RedisConnection, WriteToAVanishedServerIsAnErrorNotSigpipe) {
  RedisServer server;
  AsyncConnection conn(options_for(server.address()));
  run(conn, {"PING"});
  server.kill();
  // SIGPIPE is at its default here (the test binary does not ignore it): a write to the
  // dead socket must fail, not kill the process.
  std::string big(1 << 20, 'x');
  auto c = run(conn, {"SET", test_key(), big});
  EXPECT_EQ(c->state(), Call::State::kFailed);
  EXPECT_TRUE(c->fault() == Fault::kClosed) << to_string(c->fault()) << ": " << c->error();
  EXPECT_FALSE(conn.connected());
}

TEST(RedisConnection, PausedServerTimesOutThenRecovers) {
  RedisServer server;
  AsyncConnection conn(options_for(server.address(), 300ms));
  run(conn, {"PING"});
  server.pause();
  const auto t0 = std::chrono::steady_clock::now();
  auto c = run(conn, {"PING"});
  const auto took = std::chrono::steady_clock::now() - t0;
  server.resume();
  EXPECT_EQ(c->fault(), Fault::kTimeout);
  EXPECT_NE(c->error().find("redis " + server.address() + ": no reply within 300 ms"), std::string::npos)
      << c->error();
  // Bounded by io_timeout (300 ms; measured 301 ms), not blocked until resume: the pause
  // lasts as long as the call does, so an unbounded call would never return. 2 s is the
  // slack of a loaded machine.
  EXPECT_GE(took, 280ms);
  EXPECT_LT(took, 2s);
  EXPECT_FALSE(conn.connected());
  EXPECT_EQ(text(run(conn, {"PING"})), "PONG");
}

// A call queued behind a command that blocks on the server (WAIT on a master without
// replicas blocks for its whole timeout) is answered only after it. Its reply deadline counted
// from its own send closed the connection under the WAIT, and the call was lost unrun.
TEST(RedisConnection, ACallBehindABlockingCommandWaitsForItAndIsNotLost) {
  RedisServer server;
  AsyncConnection conn(options_for(server.address(), 200ms));
  ASSERT_EQ(text(run(conn, {"PING"})), "PONG");
  const auto key = test_key();
  auto blocked = conn.send({"WAIT", "1", "800"}, 800ms);
  auto behind = conn.send({"SET", key, "behind"});
  auto both = [&] { return blocked->done() && behind->done(); };
  drive({&conn}, both, for_at_most(5000ms));
  EXPECT_TRUE(blocked->ok()) << text(blocked);
  EXPECT_EQ(text(behind), "OK");
  EXPECT_EQ(server.cli({"GET", key}), "behind");
  // Once the WAIT has been answered, io_timeout alone bounds a call again.
  EXPECT_EQ(text(run(conn, {"PING"})), "PONG");
}

TEST(RedisConnection, ReconnectsAfterRestart) {
  RedisServer server;
  AsyncConnection conn(options_for(server.address()));
  const auto key = test_key();
  EXPECT_EQ(text(run(conn, {"SET", key, "v"})), "OK");
  server.restart();
  // The old socket is dead: the first command fails (naming the node), the next reconnects.
  auto dead = run(conn, {"GET", key});
  if (dead->state() == Call::State::kFailed) {
    EXPECT_NE(dead->error().find("redis " + server.address()), std::string::npos) << dead->error();
    EXPECT_FALSE(conn.connected());
  }
  auto fresh = run(conn, {"GET", key});
  EXPECT_TRUE(fresh->reply().is_nil()) << text(fresh);  // empty dataset: it is the new server
}

TEST(RedisConnection, SelectsDb) {
  RedisServer server;
  auto o = options_for(server.address());
  o.db = 3;
  AsyncConnection conn(o);
  const auto key = test_key();
  EXPECT_EQ(text(run(conn, {"SET", key, "in-db-3"})), "OK");
  EXPECT_EQ(server.cli({"-n", "3", "GET", key}), "in-db-3");
  EXPECT_EQ(server.cli({"GET", key}), "");
  o.db = 99;
  AsyncConnection bad(o);
  auto c = run(bad, {"PING"});
  EXPECT_EQ(c->state(), Call::State::kFailed);
  EXPECT_NE(c->error().find("SELECT 99 failed"), std::string::npos) << c->error();
  EXPECT_FALSE(bad.connected());
}

TEST(RedisConnection, SetupAndCommandGoOutInOneWriteButNeverAheadOfAuthsAnswer) {
  // SELECT and the script (EVAL, its first use here) are pipelined: a reconnect costs one
  // round trip, not one per step, and never blocks.
  {
    FakeServer fake;
    auto o = options_for(fake.address(), 200ms);
    o.db = 2;
    AsyncConnection conn(o);
    conn.eval(kGetScript, {"k"}, {});
    // The fake never answers: the EVAL can only arrive if it went out behind SELECT without
    // waiting for SELECT's reply (a connection that waited would time out at 200 ms and
    // send nothing more). Its arrival is the property; the wait is only bounded.
    ASSERT_TRUE(wait_until([&] {
      drive({&conn}, nullptr, for_at_most(5ms));
      return fake.received().find("EVAL") != std::string::npos;
    }, 2s));
    const auto got = fake.received();
    EXPECT_LT(got.find("SELECT"), got.find("EVAL"));
  }
  // With a password the command waits for AUTH's answer: a server without a password
  // answers a pipelined AUTH with an error and then runs what follows (an acquire nobody
  // would hold). This one never answers: AUTH and SELECT go out, the EVAL never does.
  FakeServer fake;
  auto o = options_for(fake.address(), 300ms);
  o.password = "pw";
  o.db = 2;
  AsyncConnection conn(o);
  auto call = conn.eval(kGetScript, {"k"}, {});
  ASSERT_TRUE(wait_until([&] {
    drive({&conn}, nullptr, for_at_most(5ms));
    return fake.received().find("SELECT") != std::string::npos;
  }, 2s));
  drive({&conn}, [&] { return call->done(); }, for_at_most(1s));
  const auto got = fake.received();
  EXPECT_LT(got.find("AUTH"), got.find("SELECT"));
  EXPECT_EQ(got.find("EVAL"), std::string::npos) << "sent ahead of AUTH's answer";
  EXPECT_EQ(call->state(), Call::State::kFailed);
}

TEST(RedisAuth, APasswordForAServerWithoutOneIsRefusedAndRunsNothing) {
  RedisServer server;
  auto o = options_for(server.address());
  o.password = "needless-pw";
  AsyncConnection conn(o);
  auto c = run(conn, {"SET", "phantom", "1"});
  EXPECT_EQ(c->fault(), Fault::kAuth) << c->error();
  EXPECT_NE(c->error().find("AUTH failed"), std::string::npos) << c->error();
  EXPECT_EQ(c->error().find("needless-pw"), std::string::npos) << c->error();
  EXPECT_EQ(server.cli({"EXISTS", "phantom"}), "0") << "a command ran behind the refused AUTH";
}

// ----------------------------------------------------------------------------- AUTH

TEST(RedisAuth, RightPassword) {
  RedisServer server(testing::with_password("pw-right-7Hq"));
  auto o = options_for(server.address());
  o.password = "pw-right-7Hq";
  AsyncConnection conn(o);
  EXPECT_EQ(text(run(conn, {"PING"})), "PONG");
}

TEST(RedisAuth, WrongPasswordIsClearSecretFreeAndAnAuthFault) {
  RedisServer server(testing::with_password("pw-right-7Hq"));
  auto o = options_for(server.address());
  o.password = "wrong-Secret-42";
  AsyncConnection conn(o);
  auto c = run(conn, {"PING"});
  EXPECT_EQ(c->fault(), Fault::kAuth);
  EXPECT_NE(c->error().find("redis " + server.address() + ": AUTH failed"), std::string::npos) << c->error();
  EXPECT_NE(c->error().find("WRONGPASS"), std::string::npos) << c->error();
  EXPECT_EQ(c->error().find("wrong-Secret-42"), std::string::npos) << c->error();
  EXPECT_EQ(c->error().find("pw-right-7Hq"), std::string::npos) << c->error();
  EXPECT_FALSE(conn.connected());
}

TEST(RedisAuth, MissingPasswordIsAnAuthFault) {
  RedisServer server(testing::with_password("pw-right-7Hq"));
  AsyncConnection conn(options_for(server.address()));
  auto c = run(conn, {"GET", "k"});
  EXPECT_EQ(c->fault(), Fault::kAuth);
  EXPECT_NE(c->error().find("NOAUTH"), std::string::npos) << c->error();
  // A script's load meets the refusal first.
  auto o = options_for(server.address());
  AsyncConnection with_scripts(o);
  auto s = eval(with_scripts, kGetScript, {"k"}, {});
  EXPECT_EQ(s->fault(), Fault::kAuth);
  EXPECT_NE(s->error().find("NOAUTH"), std::string::npos) << s->error();
}

TEST(RedisAuth, AclUser) {
  RedisServer server(testing::with_acl_user("user alice on >alice-Pw-9 ~* &* +@all"));
  auto o = options_for(server.address());
  o.username = "alice";
  o.password = "alice-Pw-9";
  AsyncConnection conn(o);
  EXPECT_EQ(text(run(conn, {"ACL", "WHOAMI"})), "alice");
  o.password = "not-alices-S3cret";
  AsyncConnection wrong(o);
  auto c = run(wrong, {"PING"});
  EXPECT_EQ(c->fault(), Fault::kAuth);
  EXPECT_NE(c->error().find("AUTH failed as user alice"), std::string::npos) << c->error();
  EXPECT_NE(c->error().find("WRONGPASS"), std::string::npos) << c->error();
  EXPECT_EQ(c->error().find("not-alices-S3cret"), std::string::npos) << c->error();
}

// Issue 20: a password rotated in Redis and in its file is read again when AUTH is refused,
// and the refused connection retries once with it: the caller's commands (a script's first
// EVAL among them) run on the new connection, in order, and nothing fails. Before: the
// password was fixed at start, and every new connection was refused until a restart.
TEST(RedisAuth, ARefusedPasswordIsReadAgainAndTheCommandsRunOnce) {
  RedisServer server(testing::with_acl_user("user alice on >Old-Pw-1 ~* &* +@all"));
  std::string in_file = "Old-Pw-1";
  int rereads = 0;
  auto credentials = std::make_shared<Credentials>(
      "Old-Pw-1",
      [&](const std::string& current) -> std::optional<std::string> {
        ++rereads;
        if (in_file == current) return std::nullopt;
        return in_file;
      },
      1000ms);
  auto o = options_for(server.address());
  o.username = "alice";
  o.password = "ignored-with-credentials";
  o.credentials = credentials;
  AsyncConnection conn(o);
  EXPECT_EQ(text(run(conn, {"ACL", "WHOAMI"})), "alice");

  // The operator rotates: Redis first, then the file (existing connections stay signed in).
  server.cli({"ACL", "SETUSER", "alice", "resetpass", ">New-Pw-2"});
  server.cli({"CLIENT", "KILL", "USER", "alice"});
  EXPECT_EQ(run(conn, {"PING"})->fault(), Fault::kClosed);  // how the connection learns of it
  const std::string key = test_key();
  auto refused = run_commands(conn, {{"SET", key, "1"}});
  EXPECT_EQ(refused.front()->fault(), Fault::kAuth) << "the file still has the old one";
  EXPECT_EQ(rereads, 1);
  EXPECT_EQ(refused.front()->error().find("Old-Pw-1"), std::string::npos) << refused.front()->error();
  in_file = "New-Pw-2";
  // Within the second, the file is not read again: one read per second, not per refusal.
  EXPECT_EQ(run(conn, {"PING"})->fault(), Fault::kAuth);
  EXPECT_EQ(rereads, 1);
  std::this_thread::sleep_for(1100ms);
  auto calls = run_commands(conn, {{"INCR", key}, {"INCR", key}});
  ASSERT_TRUE(calls[0]->ok()) << calls[0]->error();
  ASSERT_TRUE(calls[1]->ok()) << calls[1]->error();
  EXPECT_EQ(calls[1]->reply().integer(), 2) << "each command ran once, in order";
  EXPECT_EQ(rereads, 2);
  EXPECT_EQ(credentials->current().password, "New-Pw-2");

  // A second connection starts with what the first learnt: no read at all.
  auto other = options_for(server.address());
  other.username = "alice";
  other.credentials = credentials;
  AsyncConnection second(other);
  EXPECT_EQ(text(run(second, {"ACL", "WHOAMI"})), "alice");

  // File first, then Redis: a new connection refused under New-Pw-2 reads Pw-3 at once and
  // its script runs, EVAL first, on the connection that AUTH with Pw-3 opened.
  in_file = "Pw-3";
  server.cli({"ACL", "SETUSER", "alice", "resetpass", ">Pw-3"});
  server.cli({"CLIENT", "KILL", "USER", "alice"});
  EXPECT_EQ(run(conn, {"PING"})->fault(), Fault::kClosed);
  EXPECT_EQ(run(second, {"PING"})->fault(), Fault::kClosed);
  std::this_thread::sleep_for(1100ms);
  auto s = eval(second, kEchoScript, {key}, {"x"});
  ASSERT_TRUE(s->ok()) << s->error();
  EXPECT_EQ(text(s), "x:" + key);
  EXPECT_EQ(rereads, 3);
  EXPECT_EQ(text(run(conn, {"ACL", "WHOAMI"})), "alice") << "the first connection follows without a read";
  EXPECT_EQ(rereads, 3);
}

// ---------------------------------------------------------------------------- Scripts

TEST(RedisEval, EvalOnFirstUseThenBySha) {
  RedisServer server;
  auto o = options_for(server.address());
  AsyncConnection conn(o);
  const auto key = test_key();
  server.cli({"SET", key, "v1"});
  EXPECT_EQ(text(eval(conn, kGetScript, {key}, {})), "v1");
  EXPECT_EQ(text(eval(conn, kGetScript, {key}, {})), "v1");
  EXPECT_EQ(text(eval(conn, kEchoScript, {"k"}, {"a"})), "a:k");
  EXPECT_EQ(calls_of(server, "eval"), 2);     // each script's first use on the connection
  EXPECT_EQ(calls_of(server, "evalsha"), 1);  // the second use of the first
  EXPECT_EQ(calls_of(server, "script|load"), 0);
}

TEST(RedisEval, ScriptErrorIsAnErrorReply) {
  RedisServer server;
  const Script failing{"return redis.error_reply('MYERR no')"};
  auto o = options_for(server.address());
  AsyncConnection conn(o);
  auto c = eval(conn, failing, {}, {});
  EXPECT_EQ(c->fault(), Fault::kReply);
  EXPECT_NE(c->error().find("MYERR no"), std::string::npos) << c->error();
  EXPECT_EQ(text(run(conn, {"PING"})), "PONG");
}

TEST(RedisEval, ScriptFlushUnderALoneCallIsSentAgainAsEval) {
  RedisServer server;
  auto o = options_for(server.address());
  AsyncConnection conn(o);
  EXPECT_EQ(text(eval(conn, kEchoScript, {"k"}, {"1"})), "1:k");
  EXPECT_EQ(server.cli({"SCRIPT", "FLUSH"}), "OK");
  // Nothing was pipelined behind the EVALSHA that met NOSCRIPT: sent again as EVAL, it runs.
  EXPECT_EQ(text(eval(conn, kEchoScript, {"k"}, {"2"})), "2:k");
  EXPECT_TRUE(conn.connected());
  EXPECT_EQ(text(eval(conn, kEchoScript, {"k"}, {"3"})), "3:k");
  EXPECT_EQ(calls_of(server, "eval"), 2);     // the first use, and the one sent again
  EXPECT_EQ(calls_of(server, "evalsha"), 2);  // the one that met NOSCRIPT, and the last
}

TEST(RedisEval, ScriptFlushUnderPipelinedCallsFailsThemNeverOutOfOrder) {
  RedisServer server;
  auto o = options_for(server.address());
  AsyncConnection conn(o);
  const auto key = test_key();
  server.cli({"SET", key, "before"});
  EXPECT_EQ(text(eval(conn, kGetScript, {key}, {})), "before");
  EXPECT_EQ(server.cli({"SCRIPT", "FLUSH"}), "OK");
  // The EVALSHA did not run, the SET behind it did: sending the script again now would run
  // it after the SET, so it fails instead, and the connection starts over.
  auto lost = conn.eval(kGetScript, {key}, {});
  auto set = conn.send({"SET", key, "after"});
  drive({&conn}, [&] { return lost->done() && set->done(); });
  EXPECT_NE(lost->error().find("NOSCRIPT"), std::string::npos) << lost->error();
  EXPECT_EQ(server.cli({"GET", key}), "after");  // it ran; its reply went with the connection
  EXPECT_EQ(text(eval(conn, kGetScript, {key}, {})), "after");
  EXPECT_EQ(calls_of(server, "evalsha"), 1);
}

TEST(RedisEval, AnEvalRefusedByAclCachedNothingSoTheNextIsAnEvalToo) {
  RedisServer server(testing::with_acl_user("user carol on >carol-Pw-7 ~mine* &* +@all"));
  auto o = options_for(server.address());
  o.username = "carol";
  o.password = "carol-Pw-7";
  AsyncConnection conn(o);
  server.cli({"SET", "mine:1", "v1"});
  server.cli({"SET", "mine:2", "v2"});
  // Pipelined: the first key is out of carol's patterns, refused before the script ran.
  auto refused = conn.eval(kGetScript, {"theirs"}, {});
  auto first = conn.eval(kGetScript, {"mine:1"}, {});
  drive({&conn}, [&] { return refused->done() && first->done(); });
  EXPECT_NE(refused->error().find("NOPERM"), std::string::npos) << refused->error();
  EXPECT_EQ(text(first), "v1");
  EXPECT_EQ(text(eval(conn, kGetScript, {"mine:2"}, {})), "v2");
  EXPECT_EQ(calls_of(server, "eval"), 1);
  EXPECT_EQ(calls_of(server, "evalsha"), 1);
}

TEST(RedisEval, RestartedServerGetsTheScriptsOnReconnect) {
  RedisServer server;
  auto o = options_for(server.address());
  AsyncConnection conn(o);
  const auto key = test_key();
  server.cli({"SET", key, "old"});
  EXPECT_EQ(text(eval(conn, kGetScript, {key}, {})), "old");
  server.restart();
  server.cli({"SET", key, "new"});
  eval(conn, kGetScript, {key}, {});  // may find the old socket dead
  EXPECT_EQ(text(eval(conn, kGetScript, {key}, {})), "new");
}

// ---------------------------------------------------------------------- Many nodes

TEST(RedisDrive, ThreeNodesInParallel) {
  RedisServer a, b, c;
  std::vector<AsyncConnection> conns;
  for (auto* s : {&a, &b, &c}) {
    auto o = options_for(s->address());
    conns.emplace_back(o);
  }
  std::vector<AsyncConnection*> ptrs;
  for (auto& conn : conns) ptrs.push_back(&conn);
  for (int round = 0; round < 3; ++round) {
    std::vector<CallPtr> calls;
    for (std::size_t i = 0; i < 3; ++i) {
      calls.push_back(conns[i].eval(kEchoScript, {"node" + std::to_string(i)}, {std::to_string(round)}));
    }
    EXPECT_EQ(drive(ptrs, [&] { return std::all_of(calls.begin(), calls.end(), [](auto& x) { return x->done(); }); }),
              DriveEnd::kDone);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(text(calls[i]), std::to_string(round) + ":node" + std::to_string(i));
    }
  }
}

TEST(RedisDrive, ASilentNodeNeverDelaysTheOthers) {
  // Two nodes accept TCP and never answer, with AUTH and SELECT to do: each costs only
  // its own timeout, and the healthy node's reply is read as soon as it arrives.
  RedisServer healthy(testing::with_password("pw"));
  FakeServer silent1, silent2;
  std::vector<AsyncConnection> conns;
  for (const auto& address : {silent1.address(), healthy.address(), silent2.address()}) {
    auto o = options_for(address, 1500ms);
    o.password = "pw";
    o.db = 1;
    conns.emplace_back(o);
  }
  std::vector<AsyncConnection*> ptrs;
  for (auto& conn : conns) ptrs.push_back(&conn);
  std::vector<CallPtr> calls;
  for (auto& conn : conns) calls.push_back(conn.send({"PING"}));
  const auto t0 = std::chrono::steady_clock::now();
  drive(ptrs, [&] { return calls[1]->done(); });
  // The healthy node's reply as it arrives (under 1 ms measured), not after the silent ones'
  // 1.5 s timeouts: 500 ms is a third of those.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
  EXPECT_EQ(text(calls[1]), "PONG");
  EXPECT_FALSE(calls[0]->done());
  EXPECT_FALSE(calls[2]->done());
  drive(ptrs, nullptr);  // until the silent ones time out
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(calls[0]->fault(), Fault::kTimeout);
  EXPECT_EQ(calls[2]->fault(), Fault::kTimeout);
  // Concurrently: one 1.5 s timeout for both silent nodes (measured 1.50 s), where one
  // after the other would be 3 s. 3.5 s is the sum plus slack: it catches nodes waited
  // for one by one with their AUTH and SELECT as well (4.5 s and more).
  EXPECT_LT(took, 3500ms);
}

TEST(RedisDrive, CancelFdEndsTheWaitAtOnce) {
  FakeServer silent;
  AsyncConnection conn(options_for(silent.address(), 10000ms));
  auto call = conn.send({"PING"});
  Interrupt stop;
  std::thread trigger([&] {
    std::this_thread::sleep_for(50ms);
    stop.trigger();
  });
  DriveOptions o;
  o.cancel_fd = stop.fd();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(drive({&conn}, [&] { return call->done(); }, o), DriveEnd::kCancelled);
  // At the cancel (50 ms after the start; measured 50 ms), not at the silent node's 10 s
  // timeout: 1 s leaves 950 ms of slack and is a tenth of the wrong value.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  trigger.join();
  EXPECT_FALSE(call->done());  // left to its connection; the owner decides
}

TEST(RedisDrive, ConnectTimeoutBoundsANodeThatNeverAccepts) {
  // A listener whose accept queue is full and never drained: the kernel drops further
  // SYNs, so a connect stays in progress until connect_timeout.
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  ASSERT_EQ(::listen(lfd, 0), 0);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int f = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ::connect(f, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers.push_back(f);
  }
  std::this_thread::sleep_for(50ms);  // let the handshakes that can complete, complete
  auto o = options_for("127.0.0.1:" + std::to_string(ntohs(addr.sin_port)));
  o.connect_timeout = 200ms;
  o.io_timeout = 200ms;
  AsyncConnection conn(o);
  const auto t0 = std::chrono::steady_clock::now();
  auto c = run(conn, {"PING"});
  const auto took = std::chrono::steady_clock::now() - t0;
  for (int f : fillers) ::close(f);
  ::close(lfd);
  EXPECT_EQ(c->state(), Call::State::kFailed);
  EXPECT_EQ(c->fault(), Fault::kTimeout) << c->error();
  // connect_timeout (200 ms; measured 201 ms), where the kernel's own connect timeout is
  // minutes: 1.5 s is slack for a loaded machine.
  EXPECT_LT(took, 1500ms);
}

// --------------------------------------------------------------- Not Redis at all

TEST(RedisProtocol, GarbageIsAProtocolFault) {
  FakeServer http([](const std::string&) { return std::string("HTTP/1.1 400 Bad Request\r\n\r\n"); });
  AsyncConnection conn(options_for(http.address()));
  auto c = run(conn, {"PING"});
  EXPECT_EQ(c->fault(), Fault::kProtocol);
  EXPECT_NE(c->error().find("protocol error"), std::string::npos) << c->error();
  EXPECT_FALSE(conn.connected());
}

TEST(RedisProtocol, HugeArrayCountIsRefused) {
  FakeServer liar([](const std::string&) { return std::string("*2147483647\r\n"); });
  AsyncConnection conn(options_for(liar.address()));
  auto c = run(conn, {"PING"});
  EXPECT_EQ(c->fault(), Fault::kProtocol);
  EXPECT_NE(c->error().find("too many elements"), std::string::npos) << c->error();
}

TEST(RedisProtocol, HugeBulkLengthTimesOutWithoutAllocating) {
  FakeServer liar([](const std::string&) { return std::string("$99999999999\r\nabc"); });
  AsyncConnection conn(options_for(liar.address(), 300ms));
  const auto t0 = std::chrono::steady_clock::now();
  auto c = run(conn, {"PING"});
  EXPECT_EQ(c->state(), Call::State::kFailed);
  // io_timeout (300 ms; measured 301 ms): the promised 100 GB never come and are not waited
  // for; 2 s is slack for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST(RedisProtocol, ReplyNobodyAskedForIsAProtocolFault) {
  // A server that answers twice per command: the second reply has no call to go to.
  FakeServer chatty([](const std::string&) { return std::string("+PONG\r\n+EXTRA\r\n"); });
  AsyncConnection conn(options_for(chatty.address()));
  auto c = run(conn, {"PING"});
  EXPECT_EQ(text(c), "PONG");
  drive({&conn}, nullptr, for_at_most(200ms));
  EXPECT_FALSE(conn.connected());
  EXPECT_EQ(conn.last_fault(), Fault::kProtocol);
}

TEST(RedisProtocol, EndlessReplyIsCutOff) {
  // A bulk string announced at 64 MiB and streamed: refused once 16 MiB are buffered.
  FakeServer flood([](const std::string&) {
    return "$67108864\r\n" + std::string(20u << 20, 'x');
  });
  AsyncConnection conn(options_for(flood.address(), 5000ms));
  auto c = run(conn, {"GET", "k"});
  EXPECT_EQ(c->fault(), Fault::kProtocol) << c->error();
  EXPECT_NE(c->error().find("larger than 16 MiB"), std::string::npos) << c->error();
}

// ------------------------------------------------------------------------ Subscriber

/// Polls a subscriber until `pred` (bounded).
template <class Pred>
bool pump(Subscriber& sub, Pred pred, Millis timeout = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    sub.maintain(std::chrono::steady_clock::now());
    if (pred()) return true;
    pollfd p{sub.fd(), sub.events(), 0};
    if (sub.fd() >= 0 && ::poll(&p, 1, 10) > 0) sub.on_ready(p.revents);
    if (sub.fd() < 0) std::this_thread::sleep_for(5ms);
  }
  return pred();
}

TEST(RedisSubscriber, DeliversTheChannelsMessages) {
  RedisServer server;
  const auto channel = test_key("chan");
  Subscriber sub(options_for(server.address()), channel);
  EXPECT_FALSE(sub.active());
  ASSERT_TRUE(pump(sub, [&] { return sub.active(); }));
  EXPECT_TRUE(sub.take_became_active());
  EXPECT_FALSE(sub.take_became_active());  // once
  EXPECT_EQ(server.cli({"PUBLISH", channel, "holder-1"}), "1");
  EXPECT_EQ(server.cli({"PUBLISH", channel + ":other", "x"}), "0");
  EXPECT_EQ(server.cli({"PUBLISH", channel, "holder-2"}), "1");
  std::vector<std::string> got;
  ASSERT_TRUE(pump(sub, [&] {
    for (auto& p : sub.take_payloads()) got.push_back(p);
    return got.size() >= 2;
  }));
  EXPECT_EQ(got, (std::vector<std::string>{"holder-1", "holder-2"}));
  int flags = ::fcntl(sub.fd(), F_GETFD);
  EXPECT_TRUE(flags >= 0 && (flags & FD_CLOEXEC));
}

TEST(RedisSubscriber, AuthenticatesLikeAConnection) {
  RedisServer server(testing::with_acl_user("user bob on >bob-Pw ~* &* +@all"));
  auto o = options_for(server.address());
  o.username = "bob";
  o.password = "bob-Pw";
  Subscriber sub(o, "chan");
  ASSERT_TRUE(pump(sub, [&] { return sub.active(); }));
  o.password = "bad-Bob-Secret";
  Subscriber wrong(o, "chan");
  ASSERT_TRUE(pump(wrong, [&] { return !wrong.last_error().empty(); }));
  EXPECT_FALSE(wrong.active());
  EXPECT_EQ(wrong.last_fault(), Fault::kAuth);
  EXPECT_NE(wrong.last_error().find("AUTH failed"), std::string::npos) << wrong.last_error();
  EXPECT_EQ(wrong.last_error().find("bad-Bob-Secret"), std::string::npos) << wrong.last_error();
}

TEST(RedisSubscriber, NoticesTheServerGoingAwayAndComesBack) {
  RedisServer server;
  Subscriber sub(options_for(server.address()), "chan");
  ASSERT_TRUE(pump(sub, [&] { return sub.active(); }));
  server.stop();
  ASSERT_TRUE(pump(sub, [&] { return !sub.active(); }));
  server.start();
  // Resubscribes after its retry delay (500 ms at first).
  ASSERT_TRUE(pump(sub, [&] { return sub.active(); }, 5000ms));
  EXPECT_EQ(server.cli({"PUBLISH", "chan", "m"}), "1");
}

TEST(RedisSubscriber, ADeadServerIsRetriedWithAGrowingDelayNotALoop) {
  const std::string address = "127.0.0.1:" + std::to_string(testing::free_port());
  Subscriber sub(options_for(address), "chan");
  auto now = std::chrono::steady_clock::now();
  sub.maintain(now);
  ASSERT_TRUE(pump(sub, [&] { return !sub.last_error().empty(); }, 2000ms));
  EXPECT_EQ(sub.last_fault(), Fault::kConnect);
  // The next attempt is due no sooner than the retry delay.
  EXPECT_GE(sub.next_wakeup(), std::chrono::steady_clock::now() + 300ms);
}

}  // namespace
}  // namespace redisgo::redis::redis_connection_test
