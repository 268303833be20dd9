// Refusals said as what they are (redisgo_task(1), SYSTEMD): a host whose own password is
// refused speaks of itself, not of the fleet, and names the leader where a node that accepted
// it says who that is.

#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "support/notify_socket.h"
#include "support/redis_server.h"
#include "support/task_process.h"

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

/// A supervise config on key "k" for the ACL user "ro" (its password in RGT_PW), holder ids
/// starting with `host`, a textfile at <dir>/<name>.prom.
std::string ro_supervise(const TempDir& dir, const std::string& name, const std::string& nodes, const std::string& host,
                         const std::string& user = "ro") {
  ConfigSpec spec;
  spec.nodes = nodes;
  spec.key = "k";
  spec.mode = "supervise";
  spec.expire = "2s";
  spec.cron = "500ms";
  spec.kill_grace = "300ms";
  spec.log_level = "info";
  spec.extra_redis = "username = \"" + user + "\"\npassword_env = \"RGT_PW\"\nvalue = \"" + host + "\"\n";
  return dir.write(name + ".toml",
                   make_config(spec) + "\n[metrics]\ntextfile = \"" + dir.path() + "/" + name + ".prom\"\n");
}

// Three nodes; this host's password is right only on the third (a rotation half done). Two
// refuse it, so it cannot acquire; but that is this host's fault, not the fleet's (another host
// leads), and the third node, which accepted it, says who leads (attack round: it said that no
// host with this config could run the job, and that no holder had a quorum).
TEST(RefusedCredentials, AHostWithAWrongPasswordSpeaksOfItselfAndNamesTheLeader) {
  RedisServer a(with_acl_user("user job on >good ~* &* +@all"));
  RedisServer b(with_acl_user("user job on >good ~* &* +@all"));
  RedisServer c(with_acl_user("user job on >good >stale ~* &* +@all"));
  TempDir dir;
  NotifySocket sock;
  const std::string nodes =
      "nodes = [\"" + a.address() + "\", \"" + b.address() + "\", \"" + c.address() + "\"]";
  const auto lead_cfg = ro_supervise(dir, "leader", nodes, "leader-host", "job");
  const auto wrong_cfg = ro_supervise(dir, "wrong", nodes, "wrong-host", "job");
  TaskProcess leader(dir.path(), "leader", {"task", "--config", lead_cfg, "--", "/bin/sh", "-c", "exec sleep 60"},
                     {{"RGT_PW", "good"}});
  ASSERT_TRUE(leader.wait_for_log("child started", 10s)) << leader.err();
  TaskProcess wrong(dir.path(), "wrong", {"task", "--config", wrong_cfg, "--", "/bin/sh", "-c", "exec sleep 60"},
                    {{"RGT_PW", "stale"}, {"NOTIFY_SOCKET", sock.address()}});
  ASSERT_TRUE(wrong.wait_for_log("this host cannot acquire: Redis refused its credentials (", 10s)) << wrong.err();
  EXPECT_TRUE(wrong.wait_for_log("; the key is held by leader-host:", 5s)) << wrong.err();
  EXPECT_NE(wrong.err().find("(as " + c.address() + " says)"), std::string::npos) << wrong.err();
  auto status = sock.wait_for(
      [](const std::string& s) { return starts_with(s, "STATUS=this host cannot acquire: Redis refused its credentials"); },
      5s);
  ASSERT_TRUE(status) << wrong.err();
  EXPECT_NE(status->text.find("held by leader-host:"), std::string::npos) << status->text;
  EXPECT_EQ(wrong.err().find("no host with this config"), std::string::npos) << wrong.err();
  EXPECT_EQ(wrong.err().find("no holder with a quorum"), std::string::npos) << wrong.err();
  EXPECT_TRUE(wait_until(
      [&] {
        return read_file(dir.path() + "/wrong.prom")
                   .find("redisgo_task_state{key=\"k\",state=\"credentials_refused\"} 1") != std::string::npos;
      },
      5s))
      << read_file(dir.path() + "/wrong.prom");
  for (TaskProcess* p : {&wrong, &leader}) {
    p->signal(SIGTERM);
    auto code = p->wait_for(10s);
    ASSERT_TRUE(code.has_value()) << p->err();
    EXPECT_EQ(*code, 0) << p->err();
  }
}

// One node, a wrong password, another host leads: nothing can be seen of the key from here,
// and the waiting line says so rather than "no holder with a quorum".
TEST(RefusedCredentials, OneNodeThatRefusesUsLeavesTheHolderUnknownNotAbsent) {
  RedisServer redis(with_acl_user("user job on >good ~* &* +@all"));
  TempDir dir;
  const std::string node = "host = \"" + redis.address() + "\"";
  TaskProcess leader(dir.path(), "leader",
                     {"task", "--config", ro_supervise(dir, "leader", node, "leader-host", "job"), "--", "/bin/sh",
                      "-c", "exec sleep 60"},
                     {{"RGT_PW", "good"}});
  ASSERT_TRUE(leader.wait_for_log("child started", 10s)) << leader.err();
  TaskProcess wrong(dir.path(), "wrong",
                    {"task", "--config", ro_supervise(dir, "wrong", node, "wrong-host", "job"), "--", "/bin/true"},
                    {{"RGT_PW", "bad"}});
  ASSERT_TRUE(wrong.wait_for_log("this host cannot acquire: Redis refused its credentials (", 10s)) << wrong.err();
  EXPECT_TRUE(wrong.wait_for_log("holder unknown: too few nodes answer this host", 5s)) << wrong.err();
  EXPECT_EQ(wrong.err().find("no host with this config"), std::string::npos) << wrong.err();
  EXPECT_EQ(wrong.err().find("no holder with a quorum"), std::string::npos) << wrong.err();
  for (TaskProcess* p : {&wrong, &leader}) {
    p->signal(SIGTERM);
    EXPECT_TRUE(p->wait_for(10s).has_value()) << p->err();
  }
}

}  // namespace
