// The daemon as systemd sees it (redisgo_task(1), SYSTEMD): the real binary in supervise mode
// with NOTIFY_SOCKET and WATCHDOG_USEC pointing at a socket this test owns, path and
// abstract. It must report READY=1, then STATUS= standby -> leader token=N -> lease lost
// (when Redis goes away), WATCHDOG=1 at half of WATCHDOG_USEC from its own pid, and
// STOPPING=1 on SIGTERM; and its child must not inherit the notify variables.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "support/notify_socket.h"
#include "support/redis_server.h"
#include "support/task_process.h"

namespace ops_notify_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

constexpr int kWatchdogUsec = 400'000;  // pings every 200 ms

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

/// The datagrams that are not watchdog pings, in order.
std::vector<std::string> states(const std::vector<NotifySocket::Datagram>& history) {
  std::vector<std::string> out;
  for (const auto& d : history) {
    if (d.text != "WATCHDOG=1") out.push_back(d.text);
  }
  return out;
}

std::string dump(const std::vector<NotifySocket::Datagram>& history) {
  std::ostringstream s;
  for (const auto& d : history) s << "  [" << d.pid << "] " << d.text << "\n";
  return s.str();
}

class OpsNotify : public ::testing::TestWithParam<NotifySocket::Kind> {};

TEST_P(OpsNotify, ReadyStatusTransitionsWatchdogAndStopping) {
  RedisServer redis;
  TempDir dir;
  NotifySocket sock(GetParam());
  const std::string key = test_key();

  ConfigSpec spec;
  spec.nodes = "host = \"" + redis.address() + "\"";
  spec.key = key;
  spec.mode = "supervise";
  spec.expire = "1500ms";
  spec.cron = "300ms";
  spec.kill_grace = "400ms";
  auto cfg = dir.write("notify.toml", make_config(spec));

  // The child records its fencing token, its pid (exec keeps it) and its environment.
  const std::string token_file = dir.path() + "/token";
  const std::string pid_file = dir.path() + "/child.pid";
  const std::string env_file = dir.path() + "/child.env";
  std::string script = "env > " + env_file + "; echo $$ > " + pid_file + "; echo $REDISGO_TASK_TOKEN > " +
                       token_file + "; exec sleep 60";

  // Another holder has the key: the daemon must first report standby, not leader.
  ASSERT_EQ(redis.cli({"SET", key, "other-host", "PX", "1500"}), "OK");

  // sd_watchdog_enabled accepts an absent WATCHDOG_PID; one inherited from whatever runs
  // the tests would name another process and switch the daemon's watchdog off.
  ScopedEnvVars no_pid;
  no_pid.set("WATCHDOG_PID", std::nullopt);
  TaskProcess daemon(dir.path(), "daemon", {"task", "--config", cfg, "--", "/bin/sh", "-c", script},
                     {{"NOTIFY_SOCKET", sock.address()}, {"WATCHDOG_USEC", std::to_string(kWatchdogUsec)}});

  // --- READY, then standby while the other holder's lease lasts.
  ASSERT_TRUE(sock.wait_for("STATUS=standby", 5s)) << dump(sock.history()) << daemon.err();
  EXPECT_EQ(redis.cli({"GET", key}), "other-host") << "standby reported while the key was still taken";
  {
    auto seen = states(sock.history());
    ASSERT_EQ(seen.size(), 2u) << dump(sock.history());
    EXPECT_EQ(seen[0], "READY=1");
    EXPECT_EQ(seen[1], "STATUS=standby");
  }

  // --- leader, once the other lease expires; N is the child's REDISGO_TASK_TOKEN.
  auto leader = sock.wait_for([](const std::string& s) { return starts_with(s, "STATUS=leader"); }, 10s);
  ASSERT_TRUE(leader) << dump(sock.history()) << daemon.err();
  ASSERT_TRUE(wait_until([&] { return !trim(read_file(token_file)).empty(); }, 5s)) << daemon.err();
  EXPECT_EQ(leader->text, "STATUS=leader token=" + trim(read_file(token_file)));
  EXPECT_EQ(leader->pid, daemon.pid());

  // --- the child does not get the variables that address the daemon.
  ASSERT_TRUE(wait_until([&] { return !trim(read_file(pid_file)).empty(); }, 5s));
  const pid_t child_pid = std::stoi(trim(read_file(pid_file)));
  std::string child_env = read_file(env_file);
  EXPECT_NE(child_env.find("REDISGO_TASK_TOKEN="), std::string::npos) << child_env;
  for (const char* name : {"NOTIFY_SOCKET=", "WATCHDOG_USEC=", "WATCHDOG_PID="}) {
    EXPECT_EQ(child_env.find(std::string("\n") + name), std::string::npos) << name << " reached the child";
    EXPECT_FALSE(starts_with(child_env, name)) << name << " reached the child";
  }

  // --- watchdog: WATCHDOG_USEC/2 = 200 ms, so about 5 pings per second, all from the daemon.
  sock.drain();
  const std::size_t before = sock.history().size();
  sock.recv_all(1000ms);
  int pings = 0;
  for (std::size_t i = before; i < sock.history().size(); ++i) {
    const auto& d = sock.history()[i];
    if (d.text != "WATCHDOG=1") continue;
    ++pings;
    EXPECT_EQ(d.pid, daemon.pid()) << "watchdog ping from another process";
  }
  EXPECT_GE(pings, 3) << dump(sock.history());
  EXPECT_LE(pings, 8) << dump(sock.history());

  // --- Redis goes away: the lease cannot be renewed, the daemon says so and stops the child.
  redis.stop();
  auto lost = sock.wait_for([](const std::string& s) { return starts_with(s, "STATUS=lease lost: "); }, 5s);
  ASSERT_TRUE(lost) << dump(sock.history()) << daemon.err();
  EXPECT_EQ(lost->pid, daemon.pid());
  EXPECT_TRUE(wait_until([&] { return !alive(child_pid); }, 5s)) << "child still running after lease loss";
  // Back to contending, and the watchdog keeps going without Redis: a Redis outage is
  // the lease logic's business, not a reason for systemd to restart the daemon. But the
  // status says that nobody can acquire, not "standby" as if all were well.
  EXPECT_TRUE(sock.wait_for("STATUS=standby", 5s)) << dump(sock.history()) << daemon.err();
  EXPECT_TRUE(sock.wait_for([](const std::string& s) { return starts_with(s, "STATUS=cannot acquire: no quorum"); },
                            5s))
      << dump(sock.history()) << daemon.err();
  sock.drain();
  const std::size_t outage_start = sock.history().size();
  sock.recv_all(600ms);
  EXPECT_GE(std::count_if(sock.history().begin() + static_cast<std::ptrdiff_t>(outage_start), sock.history().end(),
                          [](const auto& d) { return d.text == "WATCHDOG=1"; }),
            2)
      << dump(sock.history());

  // --- SIGTERM: STOPPING=1, exit 0 (supervise stopped on request).
  daemon.signal(SIGTERM);
  EXPECT_TRUE(sock.wait_for("STOPPING=1", 5s)) << dump(sock.history()) << daemon.err();
  auto code = daemon.wait_for(10s);
  ASSERT_TRUE(code.has_value()) << daemon.err();
  EXPECT_EQ(*code, 0) << daemon.err();

  // The whole conversation, pings aside, came from the daemon and in this order.
  std::vector<std::string> expected_prefixes{"READY=1",
                                             "STATUS=standby",
                                             "STATUS=leader token=",
                                             "STATUS=lease lost: ",
                                             "STATUS=standby",
                                             "STATUS=cannot acquire: no quorum of Redis nodes (0 of 1 answered",
                                             "STOPPING=1"};
  auto seen = states(sock.history());
  ASSERT_EQ(seen.size(), expected_prefixes.size()) << dump(sock.history());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_TRUE(starts_with(seen[i], expected_prefixes[i])) << i << ": " << seen[i];
  }
  for (const auto& d : sock.history()) EXPECT_EQ(d.pid, daemon.pid()) << d.text;
}

// Refused credentials in supervise: the daemon keeps trying (the password or the ACL may be
// fixed), but systemd's STATUS=, the metrics and the log say that this host cannot run the
// job, and why; once the ACL user exists, it acquires and the status and metrics clear.
TEST(OpsNotifyBlocked, RefusedCredentialsAreSaidInStatusAndMetricsUntilFixed) {
  RedisServer redis;
  TempDir dir;
  NotifySocket sock;
  ConfigSpec spec;
  spec.nodes = "host = \"" + redis.address() + "\"";
  spec.key = test_key();
  spec.mode = "supervise";
  spec.expire = "1500ms";
  spec.cron = "300ms";
  spec.kill_grace = "300ms";
  spec.log_level = "info";
  spec.extra_redis = "username = \"job\"\npassword_env = \"RGT_JOB_PW\"\n";
  const std::string textfile = dir.path() + "/m.prom";
  const auto cfg = dir.write("blocked.toml", make_config(spec) + "\n[metrics]\ntextfile = \"" + textfile + "\"\n");
  ScopedEnvVars no_pid;
  no_pid.set("WATCHDOG_PID", std::nullopt);
  TaskProcess daemon(dir.path(), "daemon", {"task", "--config", cfg, "--", "/bin/sh", "-c", "exec sleep 60"},
                     {{"NOTIFY_SOCKET", sock.address()}, {"RGT_JOB_PW", "job-secret"}});

  // Said of this host: the password is its own, and says nothing of the other hosts.
  auto refused = sock.wait_for(
      [](const std::string& s) { return starts_with(s, "STATUS=this host cannot acquire: Redis refused its credentials"); },
      5s);
  ASSERT_TRUE(refused) << dump(sock.history()) << daemon.err();
  EXPECT_NE(refused->text.find("WRONGPASS"), std::string::npos) << refused->text;
  EXPECT_NE(refused->text.find(redis.address()), std::string::npos) << "names the node: " << refused->text;
  EXPECT_EQ(refused->text.find("job-secret"), std::string::npos);
  const std::string series = "redisgo_task_state{key=\"" + spec.key + "\",state=\"credentials_refused\"} ";
  EXPECT_TRUE(wait_until([&] { return read_file(textfile).find(series + "1") != std::string::npos; }, 5s))
      << read_file(textfile);
  // It keeps trying, paced; and says it once, not at every attempt.
  sock.recv_all(1000ms);
  EXPECT_TRUE(alive(daemon.pid()));
  EXPECT_EQ(std::count_if(sock.history().begin(), sock.history().end(),
                          [](const auto& d) { return starts_with(d.text, "STATUS=this host cannot acquire"); }),
            1)
      << dump(sock.history());
  EXPECT_TRUE(wait_until([&] { return daemon.err().find("this host cannot acquire: Redis refused its credentials (") !=
                                      std::string::npos; },
                         5s))
      << daemon.err();
  EXPECT_EQ(daemon.err().find("no host with this config"), std::string::npos) << daemon.err();

  // The operator creates the ACL user: the daemon acquires; the status and the metric clear.
  ASSERT_EQ(redis.cli({"ACL", "SETUSER", "job", "on", ">job-secret", "~*", "&*", "+@all"}), "OK");
  EXPECT_TRUE(sock.wait_for([](const std::string& s) { return starts_with(s, "STATUS=leader token="); }, 5s))
      << dump(sock.history()) << daemon.err();
  EXPECT_TRUE(wait_until([&] { return read_file(textfile).find(series + "0") != std::string::npos; }, 5s))
      << read_file(textfile);
  EXPECT_NE(daemon.err().find("a quorum of Redis nodes answers again"), std::string::npos) << daemon.err();
  EXPECT_EQ(daemon.err().find("job-secret"), std::string::npos);
  daemon.signal(SIGTERM);
  auto code = daemon.wait_for(10s);
  ASSERT_TRUE(code.has_value()) << daemon.err();
  EXPECT_EQ(*code, 0) << daemon.err();
}

INSTANTIATE_TEST_SUITE_P(Sockets, OpsNotify, ::testing::Values(NotifySocket::Kind::kPath, NotifySocket::Kind::kAbstract),
                         [](const ::testing::TestParamInfo<NotifySocket::Kind>& p) {
                           return p.param == NotifySocket::Kind::kPath ? std::string("Path") : std::string("Abstract");
                         });

}  // namespace

}  // namespace ops_notify_test
