// The operator contract of the command line (redisgo_task(1), EXIT STATUS, COMMANDS): every
// cause of a failed `task` has its own exit status, so a cron wrapper can stay silent on
// "busy" (75) and be loud on "nobody could run it" (69, 77); `status` tells held, free and
// unknown apart for a monitor; mistakes on the command line and in the command or workdir
// fail at start with 78 and the line that is wrong.

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/fake_server.h"
#include "support/redis_server.h"
#include "support/task_process.h"

namespace cli_exit_status_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

/// Whether `err` carries Redis's own words for a command the ACL refused inside a script:
/// 7.0 says "The user executing the script can't run this command or subcommand", 7.2 and
/// later "ACL failure in script: User u has no permissions to run the 'cmd' command".
bool says_acl_refused(const std::string& err) {
  return err.find("can't run this command") != std::string::npos ||
         err.find("has no permissions to run the") != std::string::npos;
}

std::string hostname() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

/// A oneshot config that gives up after one attempt (what cron runs with --no-wait).
std::string config_for(const TempDir& dir, const std::string& name, const std::string& nodes,
                       const std::string& extra_redis = "", const std::string& task = "command = [\"/bin/true\"]\n") {
  return dir.write(name, "[redis]\n" + nodes + "\nkey = \"rgt:exit\"\nexpire = \"5s\"\nconnect_timeout = \"300ms\"\n" +
                             "io_timeout = \"300ms\"\nrestart_guard = false\n" + extra_redis + "[task]\n" + task);
}

// ---- task: one exit status per cause ------------------------------------------------------

struct Cause {
  const char* name;
  int code;
  const char* says;  ///< in stderr
};

TEST(CliExitStatus, EachCauseOfAFailedTaskHasItsOwnStatus) {
  TempDir dir;
  RedisServer plain;
  RedisServer guarded(with_password("right-password"));
  // An HTTP server on the port: not Redis.
  FakeServer http([](const std::string&) { return std::string("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"); });
  const int closed_port = free_port();
  plain.cli({"SET", "rgt:exit", "other-host:1:abc", "PX", "30000"});

  const std::vector<std::pair<Cause, std::string>> table = {
      {{"busy", 75, "held by other-host:1:abc"}, config_for(dir, "busy.toml", "host = \"" + plain.address() + "\"")},
      {{"down", 69, "no quorum"}, config_for(dir, "down.toml", "host = \"127.0.0.1:" + std::to_string(closed_port) + "\"")},
      {{"wrong password", 77, "refused our credentials"},
       config_for(dir, "wrongpass.toml", "host = \"" + guarded.address() + "\"", "password_env = \"RGT_PASS\"\n")},
      {{"NOAUTH", 77, "refused our credentials"}, config_for(dir, "noauth.toml", "host = \"" + guarded.address() + "\"")},
      // With limit = 64 the lease script sends 1 + 64 keys: unauthenticated, that is more
      // arguments than Redis reads ("Protocol error: unauthenticated multibulk length").
      {{"NOAUTH, limit 64", 77, "refused our credentials"},
       config_for(dir, "noauth64.toml", "host = \"" + guarded.address() + "\"", "",
                  "command = [\"/bin/true\"]\nlimit = 64\n")},
      {{"wrong password, limit 64", 77, "refused our credentials"},
       config_for(dir, "wrongpass64.toml", "host = \"" + guarded.address() + "\"", "password_env = \"RGT_PASS\"\n",
                  "command = [\"/bin/true\"]\nlimit = 64\n")},
      {{"not Redis", 69, "is this a Redis server?"}, config_for(dir, "http.toml", "host = \"" + http.address() + "\"")},
  };
  for (const auto& [cause, cfg] : table) {
    SCOPED_TRACE(cause.name);
    auto r = run_task_binary({"task", "--config", cfg, "--no-wait"}, 10s, {{"RGT_PASS", "wrong-password"}});
    EXPECT_EQ(r.code, cause.code) << r.err;
    EXPECT_NE(r.err.find(cause.says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("wrong-password"), std::string::npos) << "a secret in the log: " << r.err;
  }
  // NOAUTH with no password in the config: said so (the attack round found only Redis's words).
  {
    auto r = run_task_binary({"task", "--config", table[3].second, "--no-wait"}, 10s);
    EXPECT_NE(r.err.find("the config gives none"), std::string::npos) << r.err;
  }
  // Without --no-wait (monitor_try_all, the default): refused credentials end the run at once
  // (77), and an unreachable Redis after unreachable_timeout (69): a cron job must end, loudly.
  {
    auto t0 = std::chrono::steady_clock::now();
    auto r = run_task_binary({"task", "--config", table[2].second}, 10s, {{"RGT_PASS", "wrong-password"}});
    EXPECT_EQ(r.code, 77) << r.err;
    // At once: one connect and AUTH (300 ms timeouts), ~120 ms measured under ASan; a run that
    // went on retrying would last until run_task_binary's 10 s. 3 s is 25 times the measure.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s) << r.err;
    const auto down = config_for(dir, "down-waited.toml", "host = \"127.0.0.1:" + std::to_string(closed_port) + "\"",
                                 "unreachable_timeout = \"1500ms\"\n");
    t0 = std::chrono::steady_clock::now();
    r = run_task_binary({"task", "--config", down}, 20s);
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(r.code, 69) << r.err;
    EXPECT_NE(r.err.find("no quorum"), std::string::npos) << r.err;
    // unreachable_timeout bounds the wait both ways: not before it (1.5 s), and not long after
    // it (measured 1.65 s: the last attempt's 300 ms timeout, the exit); 6 s is 4.5 s of
    // slack, and a run that ignored the bound would last until run_task_binary's 20 s.
    EXPECT_GE(took, 1500ms) << r.err;
    EXPECT_LT(took, 6s) << r.err;
  }
  // A password for a server that has none: refused credentials (no retry fixes it), and the
  // acquire pipelined behind the AUTH did not run there: no lease left that nobody holds
  // (it used to take the key for `expire`, again at every retry, keeping every daemon out).
  {
    RedisServer open_server;
    const auto cfg = config_for(dir, "needless.toml", "host = \"" + open_server.address() + "\"",
                                "password_env = \"RGT_PASS\"\n");
    auto r = run_task_binary({"task", "--config", cfg, "--no-wait"}, 10s, {{"RGT_PASS", "wrong-password"}});
    EXPECT_EQ(r.code, 77) << r.err;
    EXPECT_NE(r.err.find("refused our credentials"), std::string::npos) << r.err;
    EXPECT_EQ(open_server.cli({"EXISTS", "rgt:exit"}), "0") << "a lease taken behind a failed AUTH";
    EXPECT_EQ(script_calls(open_server), 0) << "a script ran behind a failed AUTH";
  }
  // Giving up after retries (monitor_try_all = false): the last attempt's cause decides.
  const std::vector<std::pair<int, std::string>> retried = {
      {69, config_for(dir, "down2.toml", "host = \"127.0.0.1:" + std::to_string(closed_port) + "\"",
                      "monitor_try_all = false\nretries_count = 2\n")},
      {77, config_for(dir, "noauth2.toml", "host = \"" + guarded.address() + "\"",
                      "monitor_try_all = false\nretries_count = 2\n")},
      {75, config_for(dir, "busy2.toml", "host = \"" + plain.address() + "\"", "monitor_try_all = false\nretries_count = 2\n")},
  };
  for (const auto& [code, cfg] : retried) {
    auto r = run_task_binary({"task", "--config", cfg}, 10s);
    EXPECT_EQ(r.code, code) << cfg << "\n" << r.err;
  }
}

// What README's exit table and the manual's unreachable_timeout say: unreachable_timeout
// bounds the waiting of a run that would wait; a --no-wait run makes its one attempt and
// exits 69 then, on a silent node (an address that answers nothing) as on a closed port.
TEST(CliExitStatus, NoWaitExits69AfterItsOneAttemptNotAfterUnreachableTimeout) {
  TempDir dir;
  FakeServer silent;  // accepts, never answers
  const std::vector<std::string> nodes = {"host = \"127.0.0.1:" + std::to_string(free_port()) + "\"",
                                          "host = \"" + silent.address() + "\""};
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    SCOPED_TRACE(nodes[i]);
    const auto cfg = config_for(dir, "down" + std::to_string(i) + ".toml", nodes[i], "unreachable_timeout = \"1m\"\n");
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run_task_binary({"task", "--config", cfg, "--no-wait"}, 30s);
    EXPECT_EQ(r.code, 69) << r.err;
    EXPECT_NE(r.err.find("no quorum"), std::string::npos) << r.err;
    // One attempt: a closed port at once, a silent node its 300 ms timeouts (0.1-0.4 s
    // measured under ASan); the wrong run waits out unreachable_timeout (1 minute). 5 s is
    // twelve times the measure and a twelfth of the wrong value.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << r.err;
  }
}

TEST(CliExitStatus, ATlsVerificationFailureIs77) {
  TempDir dir;
  const TlsFiles& certs = test_certificates();
  RedisServerOptions options;
  options.tls = &certs;
  options.tls_auth_clients = false;
  RedisServer tls(options);
  const auto cfg = config_for(dir, "tls.toml", "host = \"" + tls.address() + "\"",
                              "tls = true\ntls_ca_file = \"" + certs.other_ca + "\"\n");
  auto r = run_task_binary({"task", "--config", cfg, "--no-wait"}, 10s);
  EXPECT_EQ(r.code, 77) << r.err;
  // Said as what it is (it read "Redis refused our credentials", as for a wrong password).
  EXPECT_NE(r.err.find("TLS verification failed"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("refused our credentials"), std::string::npos) << r.err;
  auto st = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_EQ(st.code, 77) << st.out << st.err;
  EXPECT_NE(st.out.find("TLS failed"), std::string::npos) << st.out;
}

// ---- the command line and what validate checks without Redis -------------------------------

TEST(CliExitStatus, CommandLineMistakesAre78WithWhatExists) {
  TempDir dir;
  const auto cfg = config_for(dir, "ok.toml", "host = \"127.0.0.1:1\"");
  auto r = run_task_binary({"tsak", "--config", cfg}, 10s);
  EXPECT_EQ(r.code, 78);
  EXPECT_NE(r.err.find("unknown command 'tsak'; did you mean 'task'?"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("task status validate check handover list pause resume adopt version"), std::string::npos) << r.err;

  r = run_task_binary({"task", "--config", cfg, "--key", ""}, 10s);
  EXPECT_EQ(r.code, 78);
  EXPECT_NE(r.err.find("--key"), std::string::npos) << r.err;

  const auto sup = config_for(dir, "sup.toml", "host = \"127.0.0.1:1\"", "",
                              "command = [\"/bin/true\"]\nmode = \"supervise\"\n");
  r = run_task_binary({"task", "--config", sup, "--no-wait"}, 10s);
  EXPECT_EQ(r.code, 78);
  EXPECT_NE(r.err.find("--no-wait applies to mode = \"oneshot\" only"), std::string::npos) << r.err;

  r = run_task_binary({"--version"}, 10s);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("redisgo_task ", 0), 0u) << r.out;
}

TEST(CliExitStatus, ValidateChecksTheCommandAndWorkdirAsExecWould) {
  TempDir dir;
  const std::string node = "host = \"127.0.0.1:1\"";
  const auto script = dir.write("job.sh", "#!/bin/sh\nexit 0\n");  // not executable yet
  // Executable scripts whose #! line names what exec cannot run (issue 20 item 6).
  const auto no_interp = dir.write("no-interp.sh", "#!/nonexistent/interp\nexit 0\n");
  const auto interp_not_exec = dir.write("interp-not-exec.sh", "#!" + script + " -e\nexit 0\n");
  const auto crlf = dir.write("crlf.sh", "#!/bin/sh\r\nexit 0\r\n");
  for (const auto& s : {no_interp, interp_not_exec, crlf}) ::chmod(s.c_str(), 0755);
  // One argument, one variable, beyond what exec copies (MAX_ARG_STRLEN: 32 pages, with
  // the NUL).
  const std::string huge(32 * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)), 'x');
  struct Case {
    const char* name;
    std::string task;
    int line;            ///< of the key the error names (0: valid)
    const char* key;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"not on PATH", "command = [\"rgt-no-such-program\"]\n", 9, "task.command", "not found on PATH"},
      {"absolute path missing", "command = [\"/nonexistent/prog\"]\n", 9, "task.command", "No such file"},
      {"not executable", "command = [\"" + script + "\"]\n", 9, "task.command", "not executable"},
      {"a directory", "command = [\"/tmp\"]\n", 9, "task.command", "not a regular file"},
      {"workdir missing", "command = [\"/bin/true\"]\nworkdir = \"/nonexistent/dir\"\n", 10, "task.workdir", "No such file"},
      {"workdir a file", "command = [\"/bin/true\"]\nworkdir = \"" + script + "\"\n", 10, "task.workdir",
       "not a directory"},
      // No command in the file (it comes after `--`): the workdir is the file's all the same.
      {"workdir missing, command after --", "workdir = \"/nonexistent/dir\"\n", 9, "task.workdir", "No such file"},
      {"workdir a file, command after --", "workdir = \"" + script + "\"\n", 9, "task.workdir", "not a directory"},
      {"workdir, command after --", "workdir = \"" + dir.path() + "\"\n", 0, "", ""},
      {"PATH from [task] env", "command = [\"true\"]\nenv = { PATH = \"/nonexistent\" }\n", 9, "task.command",
       "not found on PATH (/nonexistent)"},
      {"relative to workdir", "command = [\"./job.sh\"]\nworkdir = \"" + dir.path() + "\"\n", 9, "task.command",
       "not executable"},
      {"interpreter missing", "command = [\"" + no_interp + "\"]\n", 9, "task.command",
       "the script's interpreter /nonexistent/interp does not exist"},
      {"interpreter not executable", "command = [\"" + interp_not_exec + "\"]\n", 9, "task.command",
       "the script's interpreter " + script + " is not executable by this user"},
      {"CRLF #! line", "command = [\"" + crlf + "\"]\n", 9, "task.command", "Windows line endings"},
      {"argument too long", "command = [\"/bin/true\", \"" + huge + "\"]\n", 9, "task.command",
       "argument 1 of the command is " + std::to_string(huge.size()) + " bytes"},
      {"variable too long", "command = [\"/bin/true\"]\nenv = { RGT_HUGE = \"" + huge + "\" }\n", 10, "task.env",
       "[task] env's RGT_HUGE is"},
      {"found on PATH", "command = [\"sh\", \"-c\", \"exit 0\"]\n", 0, "", ""},
      {"shell string", "command = \"exit 0\"\n", 0, "", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto cfg = config_for(dir, "cmd.toml", node, "", c.task);
    auto r = run_task_binary({"validate", "--config", cfg}, 10s);
    if (c.line == 0) {
      EXPECT_EQ(r.code, 0) << r.err;
      continue;
    }
    EXPECT_EQ(r.code, 78) << r.out;
    const std::string where = cfg + ":" + std::to_string(c.line) + ":";
    EXPECT_NE(r.err.find(where), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(std::string(c.key) + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    // `task` refuses the same file before it contends (the node does not even exist).
    auto t = run_task_binary({"task", "--config", cfg}, 10s);
    EXPECT_EQ(t.code, 78) << t.err;
  }
  ::chmod(script.c_str(), 0755);
  auto r = run_task_binary({"validate", "--config", config_for(dir, "x.toml", node, "", "command = [\"" + script + "\"]\n")},
                           10s);
  EXPECT_EQ(r.code, 0) << r.err;
}

/// Lowers this process's stack limit for a scope, and so that of the binaries it starts:
/// exec's ARG_MAX is a quarter of it. A test can then pass it with a config of any size.
class StackLimit {
 public:
  explicit StackLimit(rlim_t bytes) {
    EXPECT_EQ(::getrlimit(RLIMIT_STACK, &saved_), 0);
    rlimit lower = saved_;
    lower.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_STACK, &lower), 0);
  }
  ~StackLimit() { ::setrlimit(RLIMIT_STACK, &saved_); }
  StackLimit(const StackLimit&) = delete;
  StackLimit& operator=(const StackLimit&) = delete;

 private:
  rlimit saved_{};
};

// A command given after -- is checked before contending, as the file's is: one that
// cannot run takes no lease, no token and no once_per slot, and fails as a shell's would,
// 127 or 126, saying why (issue 20 item 6: a missing #! interpreter took all three and
// then said "No such file or directory" of a file that exists).
TEST(CliExitStatus, ACommandAfterDashDashThatCannotRunTakesNoLease) {
  TempDir dir;
  RedisServer redis;
  const auto no_interp = dir.write("no-interp.sh", "#!/nonexistent/interp\nexit 0\n");
  ::chmod(no_interp.c_str(), 0755);
  const auto not_exec = dir.write("not-exec.sh", "#!/bin/sh\nexit 0\n");
  const auto cfg = config_for(dir, "dd.toml", "host = \"" + redis.address() + "\"", "", "once_per = \"1h\"\n");
  struct Case {
    std::string program;
    int code;
    const char* says;
  };
  for (const auto& c : std::vector<Case>{{no_interp, 127, "the script's interpreter /nonexistent/interp does not exist"},
                                         {"/nonexistent/prog", 127, "No such file or directory"},
                                         {"rgt-no-such-program", 127, "not found on PATH"},
                                         {not_exec, 126, "not executable by this user"}}) {
    SCOPED_TRACE(c.program);
    auto r = run_task_binary({"task", "--config", cfg, "--", c.program}, 10s);
    EXPECT_EQ(r.code, c.code) << r.err;
    EXPECT_NE(r.err.find("cannot run the command given after --: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("acquired"), std::string::npos) << r.err;
    EXPECT_EQ(redis.cli({"KEYS", "*"}), "") << "no lease, token or once_per claim";
  }
  // An environment beyond ARG_MAX (a quarter of the stack limit: 512 KiB here): E2BIG
  // before contending, 126 for a command after --, 78 at [task] env's line for validate.
  StackLimit limit(2 << 20);
  std::string env = "env = { ";
  for (int i = 0; i < 6; ++i) {
    env += (i ? ", RGT_BIG_" : "RGT_BIG_") + std::to_string(i) + " = \"" + std::string(100'000, 'x') + "\"";
  }
  const auto big = config_for(dir, "big.toml", "host = \"" + redis.address() + "\"", "", env + " }\n");
  auto r = run_task_binary({"task", "--config", big, "--", "/bin/true"}, 10s);
  EXPECT_EQ(r.code, 126) << r.err;
  EXPECT_NE(r.err.find("the environment is too long"), std::string::npos) << r.err;
  EXPECT_EQ(redis.cli({"KEYS", "*"}), "");
  const auto big_cmd = config_for(dir, "big-cmd.toml", "host = \"" + redis.address() + "\"", "",
                                  "command = [\"/bin/true\"]\n" + env + " }\n");
  r = run_task_binary({"validate", "--config", big_cmd}, 10s);
  EXPECT_EQ(r.code, 78) << r.err;
  EXPECT_NE(r.err.find(big_cmd + ":10:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("task.env: expected arguments and environment that exec can take"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the environment is too long"), std::string::npos) << r.err;
}

// ---- status for monitoring -----------------------------------------------------------------

class CliStatus : public ::testing::Test {
 protected:
  /// A 3-node Redlock config whose [task] is broken: status must not care.
  std::string three_nodes(const std::string& name) {
    return dir_.write(name, "[redis]\nnodes = [\"" + a_.address() + "\", \"" + b_.address() + "\", \"" + c_.address() +
                                "\"]\nkey = \"rgt:st\"\nexpire = \"2s\"\nconnect_timeout = \"300ms\"\nio_timeout = \"300ms\"\n"
                                "[task]\ncomand = [\"oops\"]\nmode = \"sometimes\"\n");
  }
  void hold(RedisServer& s, const std::string& holder) { s.cli({"SET", "rgt:st", holder, "PX", "60000"}); }
  RunResult status_json(const std::string& cfg) { return run_task_binary({"status", "--config", cfg, "--json"}, 10s); }

  TempDir dir_;
  RedisServer a_, b_, c_;
};

TEST_F(CliStatus, HeldFreeUnknownAndPartialWithNullsWhenUnknown) {
  const auto cfg = three_nodes("st.toml");
  // free (and the broken [task] is not status's business)
  auto r = status_json(cfg);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"state\":\"free\",\"held\":false,\"holder\":null,\"ttl_ms\":null,\"token\":0"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err, "");

  // held by another host on a quorum (2 of 3)
  hold(a_, "other-host:42:abc");
  hold(b_, "other-host:42:abc");
  b_.cli({"SET", "{rgt:st}:fence", "17"});
  r = status_json(cfg);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"state\":\"held\",\"held\":true,\"holder\":\"other-host:42:abc\",\"ttl_ms\":"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"token\":17,\"held_by_this_host\":false"), std::string::npos) << r.out;

  // held by this host
  const std::string mine = hostname() + ":4242:0123456789abcdef";
  hold(a_, mine);
  hold(b_, mine);
  hold(c_, mine);
  r = status_json(cfg);
  EXPECT_NE(r.out.find("\"held_by_this_host\":true"), std::string::npos) << r.out;
  auto text = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_NE(text.out.find("(this host)"), std::string::npos) << text.out;

  // partial: one node down, the other two agree -> still held, exit 0, the node's fault shown
  c_.stop();
  r = status_json(cfg);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"state\":\"held\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"reachable\":false,\"held\":null,\"holder\":null,\"ttl_ms\":null,\"token\":null,\"fault\":"),
            std::string::npos)
      << r.out;

  // partial and undecidable: 2 reachable, one holds, the unreachable one could -> unknown
  b_.cli({"DEL", "rgt:st"});
  r = status_json(cfg);
  EXPECT_EQ(r.code, 0) << "a quorum answered";
  EXPECT_NE(r.out.find("\"state\":\"unknown\",\"held\":null,\"holder\":null,\"ttl_ms\":null,\"token\":null"),
            std::string::npos)
      << r.out;

  // no quorum: unknown and 69 (1 of 3 reachable), in text too
  b_.stop();
  r = status_json(cfg);
  EXPECT_EQ(r.code, 69) << r.out;
  EXPECT_NE(r.out.find("\"state\":\"unknown\""), std::string::npos) << r.out;
  text = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_EQ(text.code, 69);
  EXPECT_NE(text.out.find("state:  unknown (1/3 nodes reachable, quorum 2)"), std::string::npos) << text.out;
}

TEST_F(CliStatus, RefusedCredentialsAreSaidAndExit77) {
  RedisServer guarded(with_password("pw"));
  const auto cfg = dir_.write("auth.toml", "[redis]\nhost = \"" + guarded.address() + "\"\nkey = \"rgt:st\"\n");
  auto r = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_EQ(r.code, 77) << r.out << r.err;
  EXPECT_NE(r.out.find("credentials refused"), std::string::npos) << r.out;
  r = status_json(cfg);
  EXPECT_NE(r.out.find("\"fault\":\"auth\""), std::string::npos) << r.out;
}

/// Runs the binary as user and group nobody (65534, no other groups), as a non-root admin
/// would: {exit code, stdout, stderr}.
RunResult run_as_nobody(const TempDir& dir, const std::vector<std::string>& args) {
  const std::string out = dir.path() + "/nobody.out", err = dir.path() + "/nobody.err";
  std::vector<std::string> argv{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", task_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(120);
    ::execv(ptrs[0], ptrs.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  RunResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

// Issue 20: an admin (not root, not in the file's group) ran `status` on a unit's config
// whose password_file only the unit's group may read. Before: 78 and "nothing was started"
// (status starts nothing), with no word on what to do.
TEST(CliExitStatus, AnUnreadablePasswordFileSaysWhatToDoAndOnlyTaskSaysNothingStarted) {
  ASSERT_TRUE(::access("/usr/bin/setpriv", X_OK) == 0) << "setpriv (util-linux) is needed: run scripts/setup";
  ASSERT_EQ(::geteuid(), 0u) << "this test drops to user nobody, which needs root";
  const group* daemon_group = ::getgrnam("daemon");
  ASSERT_NE(daemon_group, nullptr);
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  const std::string pass = dir.write("redis.pass", "Pw-Unreadable-77\n");
  ASSERT_EQ(::chown(pass.c_str(), 0, daemon_group->gr_gid), 0);
  ASSERT_EQ(::chmod(pass.c_str(), 0640), 0);
  const std::string cfg = dir.write("unit.toml", "[redis]\nhost = \"127.0.0.1:1\"\nkey = \"rgt:unreadable\"\npassword_file = \"" +
                                                     pass + "\"\n[task]\ncommand = [\"/bin/true\"]\n");
  ASSERT_EQ(::chmod(cfg.c_str(), 0644), 0);
  for (const char* command : {"status", "check", "handover"}) {
    SCOPED_TRACE(command);
    auto r = run_as_nobody(dir, {command, "--config", cfg});
    EXPECT_EQ(r.code, 78) << r.err;
    EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("user 'nobody' may not read it"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sudo -u redisgo-task"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sudo usermod -aG daemon nobody"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("nothing was started"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("Pw-Unreadable-77"), std::string::npos) << r.err;
  }
  // task would have started the job: there it is said.
  auto r = run_as_nobody(dir, {"task", "--config", cfg});
  EXPECT_EQ(r.code, 78) << r.err;
  EXPECT_NE(r.err.find("1 error(s); nothing was started"), std::string::npos) << r.err;
}

}  // namespace

namespace {

// A signal that does not stop the daemon (a resized terminal's SIGWINCH, a SIGHUP) wakes
// an attempt in flight; it must not turn "nobody could answer" (69) into "busy" (75),
// which a cron wrapper keeps silent: the job would run nowhere and nobody would know.
TEST(CliExitStatus, AStraySignalDuringAnAttemptIsNotBusy) {
  TempDir dir;
  FakeServer silent;  // accepts, never answers
  const auto cfg = dir.write("silent.toml", "[redis]\nhost = \"" + silent.address() +
                                                "\"\nkey = \"rgt:exit\"\nexpire = \"5s\"\nconnect_timeout = \"300ms\"\n"
                                                "io_timeout = \"600ms\"\n[task]\ncommand = [\"/bin/true\"]\n");
  TaskProcess p(dir.path(), "stray", {"task", "--config", cfg, "--no-wait"});
  ASSERT_TRUE(wait_until([&] { return silent.connections() > 0; }, 5s));
  p.signal(SIGWINCH);
  p.signal(SIGHUP);
  auto code = p.wait_for(10s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 69) << p.err();
  EXPECT_EQ(p.err().find("held by"), std::string::npos) << p.err();
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Under journald (JOURNAL_STREAM names stderr), every text line starts with its syslog
// priority so `journalctl -p warning` can filter; elsewhere it does not.
TEST(CliLogs, JournaldPriorityPrefixOnlyWhenStderrIsTheJournalStream) {
  TempDir dir;
  const auto cfg = dir.write("j.toml", "[redis]\nhost = \"127.0.0.1:1\"\nkey = \"rgt:j\"\nexpire = \"5s\"\n"
                                       "connect_timeout = \"300ms\"\nio_timeout = \"300ms\"\n[task]\ncommand = [\"/bin/true\"]\n");
  const std::string err = dir.path() + "/stderr";
  const std::string bin = task_binary();
  auto run = [&](const std::string& journal_stream) {
    const std::string cmd = "exec 2>'" + err + "'; JOURNAL_STREAM=" + journal_stream + " exec '" + bin +
                            "' task --config '" + cfg + "' --no-wait";
    // std::system runs it under /bin/sh -c; the daemon gives up after one attempt.
    const int rc = std::system(("timeout 20 /bin/sh -c " + shell_quote(cmd)).c_str());
    EXPECT_NE(rc, -1);
    return read_file(err);
  };
  // The journal stream is the file stderr is: its device and inode.
  const std::string matched = run("$(stat -c %d:%i '" + err + "')");
  auto lines = split_lines(matched);
  ASSERT_FALSE(lines.empty());
  bool warn = false, info = false, error = false;
  for (const auto& l : lines) {
    ASSERT_EQ(l[0], '<') << l;
    warn |= l.rfind("<4>warn", 0) == 0;
    info |= l.rfind("<6>info", 0) == 0;
    error |= l.rfind("<3>error", 0) == 0;
  }
  EXPECT_TRUE(warn && info && error) << matched;
  const std::string other = run("1:1");
  for (const auto& l : split_lines(other)) EXPECT_NE(l[0], '<') << l;
}

// What the command line says itself, before any logger exists (a config that cannot run, a
// usage error), is an error to journald too: a unit that fails to start shows why under
// `journalctl -p err`. It went out at journald's default priority, info.
TEST(CliLogs, ErrorsBeforeTheLoggerCarryTheErrorPriority) {
  TempDir dir;
  const auto cfg = dir.write("bad.toml", "[redis]\nhost = \"127.0.0.1:1\"\nkey = \"\"\nexpire = \"soon\"\n"
                                         "[task]\ncommand = [\"/bin/true\"]\n");
  const std::string err = dir.path() + "/stderr";
  const std::string bin = task_binary();
  auto run = [&](const std::string& journal_stream, const std::string& args) {
    const std::string cmd = "exec 2>'" + err + "'; JOURNAL_STREAM=" + journal_stream + " exec '" + bin + "' " + args;
    const int rc = std::system(("timeout 20 /bin/sh -c " + shell_quote(cmd)).c_str());
    EXPECT_NE(rc, -1);
    return split_lines(read_file(err));
  };
  const std::string journal = "$(stat -c %d:%i '" + err + "')";
  for (const std::string& args : {"task --config '" + cfg + "'", std::string("tsak"), std::string("task --bogus")}) {
    const auto lines = run(journal, args);
    ASSERT_FALSE(lines.empty()) << args;
    for (const auto& l : lines) EXPECT_EQ(l.rfind("<3>", 0), 0u) << args << ": " << l;
    for (const auto& l : run("1:1", args)) EXPECT_NE(l[0], '<') << args << ": " << l;
  }
}

// A warning about the config (a key of the other mode, ignored) is a log line like any
// other: under journald it carries its priority, in the JSON format it is a JSON line.
// It was written to stderr before the logger existed, which journald filed at info.
TEST(CliLogs, ConfigWarningsGoThroughTheLogger) {
  TempDir dir;
  const std::string err = dir.path() + "/stderr";
  const std::string bin = task_binary();
  auto run = [&](const std::string& format) {
    const auto cfg = dir.write("w-" + format + ".toml",
                               "[redis]\nhost = \"127.0.0.1:1\"\nkey = \"rgt:w\"\nconnect_timeout = \"300ms\"\n"
                               "io_timeout = \"300ms\"\n[task]\ncommand = [\"/bin/true\"]\nrestart_limit = 3\n"
                               "[log]\nformat = \"" + format + "\"\n");
    const std::string cmd = "exec 2>'" + err + "'; JOURNAL_STREAM=$(stat -c %d:%i '" + err + "') exec '" + bin +
                            "' task --config '" + cfg + "' --no-wait";
    const int rc = std::system(("timeout 20 /bin/sh -c " + shell_quote(cmd)).c_str());
    EXPECT_NE(rc, -1);
    for (const auto& l : split_lines(read_file(err))) {
      if (l.find("restart_limit") != std::string::npos) return l;
    }
    return std::string();
  };
  const std::string text = run("text");
  EXPECT_EQ(text.rfind("<4>warn", 0), 0u) << text;
  EXPECT_NE(text.find("w-text.toml:8:"), std::string::npos) << text;
  const std::string json = run("json");
  EXPECT_EQ(json.rfind("{", 0), 0u) << json;
  EXPECT_NE(json.find("\"level\":\"warn\""), std::string::npos) << json;
}

}  // namespace

namespace {

// Found by the attack round on the operator contract (issue 11); each was a defect.
class CliAttackRegressions : public ::testing::Test {
 protected:
  /// A config for the ACL user "ro" (its password in RGT_PW) on key "k": `redis_extra` ends
  /// the [redis] section, `task` is the [task] section.
  std::string ro_config(const std::string& name, const RedisServer& redis, const std::string& redis_extra,
                        const std::string& task) {
    return dir_.write(name, "[redis]\nhost = \"" + redis.address() +
                                "\"\nkey = \"k\"\nusername = \"ro\"\npassword_env = \"RGT_PW\"\n" + redis_extra +
                                "[task]\n" + task);
  }
  /// `task --no-wait` as "ro".
  static RunResult run_as_ro(const std::string& cfg, std::chrono::milliseconds timeout = 10s) {
    return run_task_binary({"task", "--config", cfg, "--no-wait"}, timeout, {{"RGT_PW", "rpw"}});
  }
  TempDir dir_;
};

// status and check must stop on SIGTERM (and Ctrl-C) at once, like task, not run out a 15 s timeout.
TEST_F(CliAttackRegressions, StatusAndCheckStopOnSigtermWhileANodeIsSilent) {
  FakeServer silent;
  const auto cfg = dir_.write("slow.toml", "[redis]\nhost = \"" + silent.address() +
                                               "\"\nkey = \"k\"\nexpire = \"60s\"\nio_timeout = \"15s\"\n"
                                               "connect_timeout = \"15s\"\n");
  for (const char* sub : {"status", "check"}) {
    SCOPED_TRACE(sub);
    TaskProcess p(dir_.path(), sub, {sub, "--config", cfg});
    const int before = silent.connections();
    ASSERT_TRUE(wait_until([&] { return silent.connections() > before; }, 5s));
    const auto sent = std::chrono::steady_clock::now();
    // SIGTERM: a background job started by a non-interactive shell (as ctest's may be)
    // inherits SIGINT ignored, which it rightly keeps.
    p.signal(SIGTERM);
    auto code = p.wait_for(3s);
    ASSERT_TRUE(code) << "still running 3 s after SIGTERM";
    EXPECT_EQ(*code, 128 + SIGTERM);
    // At once (4-8 ms measured under ASan), where the silent node's io_timeout is 15 s: 1 s
    // leaves a loaded machine room and is still 15 times under the wrong value.
    EXPECT_LT(std::chrono::steady_clock::now() - sent, 1s);
  }
}

// One key on each of two nodes and the third free: nobody holds it, but nobody can take
// it either: "unknown", not "free".
TEST_F(CliAttackRegressions, ASplitBetweenWouldBeHoldersIsNotFree) {
  RedisServer a, b, c;
  const auto cfg = dir_.write("split.toml", "[redis]\nnodes = [\"" + a.address() + "\", \"" + b.address() + "\", \"" +
                                                c.address() + "\"]\nkey = \"k\"\n");
  a.cli({"SET", "k", "A:1:x", "PX", "60000"});
  b.cli({"SET", "k", "B:1:y", "PX", "60000"});
  auto r = run_task_binary({"status", "--config", cfg, "--json"}, 10s);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("\"state\":\"unknown\",\"held\":null"), std::string::npos) << r.out;
}

// A holder id or key with control characters cannot forge lines or send escape sequences.
TEST_F(CliAttackRegressions, StatusTextKeepsEveryValueOnItsLine) {
  RedisServer redis;
  const auto cfg = dir_.write("esc.toml", "[redis]\nhost = \"" + redis.address() + "\"\nkey = \"k\"\n");
  redis.cli({"SET", "k", "evil\n2026-01-01T00:00:00Z info fake\x1b[31mred", "PX", "60000"});
  auto r = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("held by evil\\n2026-01-01T00:00:00Z info fake\\x1b[31mred"), std::string::npos) << r.out;
  auto ck = run_task_binary({"check", "--config", cfg}, 10s);
  EXPECT_EQ(ck.out.find('\x1b'), std::string::npos) << ck.out;
  for (const auto& line : split_lines(ck.out)) {
    EXPECT_TRUE(line.rfind("ok ", 0) == 0 || line.rfind("warn ", 0) == 0 || line.rfind("fail ", 0) == 0) << line;
  }
}

// Bytes that are not UTF-8 (a holder id or once_per claim written by hand) reach the
// terminal escaped, as JSON replaces them (issue 20 item 7): never raw.
TEST_F(CliAttackRegressions, StatusTextEscapesBytesThatAreNotUtf8) {
  RedisServer redis;
  const auto cfg = dir_.write("utf.toml", "[redis]\nhost = \"" + redis.address() + "\"\nkey = \"k\"\n"
                                          "[task]\nonce_per = \"1h\"\n");
  redis.cli({"SET", "k", "host\xff\xfe:1:abc", "PX", "60000"});
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const std::int64_t slot = (now_ms / 1000 + 1800) / 3600 * 3600;  // the nearest hour
  redis.cli({"HSET", "{k}:once:" + std::to_string(slot), "holder", "cron\xc0\xaf:2:def", "token", "7", "start",
             std::to_string(now_ms), "status", "0"});
  auto r = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_EQ(r.code, 0) << r.err;
  for (unsigned char c : r.out) EXPECT_LT(c, 0x80u) << "a raw byte in: " << r.out;
  EXPECT_NE(r.out.find("held by host\\xff\\xfe:1:abc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run by cron\\xc0\\xaf:2:def"), std::string::npos) << r.out;
  auto j = run_task_binary({"status", "--config", cfg, "--json"}, 10s);
  EXPECT_NE(j.out.find("\"holder\":\"host\\ufffd\\ufffd:1:abc\""), std::string::npos) << j.out;
}

// A waiting line's member written by hand with a score no ticket can be (negative, inf, past
// 2^63) is shown as waiting, with no time (since_us 0): never a wrapped-around 2^64 - 5 nor a
// wait computed from one.
TEST_F(CliAttackRegressions, ALineMemberWithAScoreNoTicketCanBeShowsNoTime) {
  RedisServer redis;
  const auto cfg = dir_.write("line.toml", "[redis]\nhost = \"" + redis.address() + "\"\nkey = \"k\"\n");
  redis.cli({"ZADD", "{k}:line", "-5", "by-hand", "1e19", "by-hand-past", "+inf", "by-hand-too"});
  auto j = run_task_binary({"status", "--config", cfg, "--json"}, 10s);
  EXPECT_EQ(j.code, 0) << j.err;
  EXPECT_NE(j.out.find("\"holder\":\"by-hand\",\"since_us\":0,\"waited_ms\":0,"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"holder\":\"by-hand-past\",\"since_us\":0,\"waited_ms\":0,"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"holder\":\"by-hand-too\",\"since_us\":0,\"waited_ms\":0,"), std::string::npos) << j.out;
  auto t = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("1. by-hand, waiting 0ms"), std::string::npos) << t.out;
}

// A fence counter that is not a token (written by hand; a hash) is unreadable: null in
// JSON and said with what to do in text, never a made-up 0 (issue 20 item 7). Acquisitions
// fail on that node until it is deleted, so `check` fails it too.
TEST_F(CliAttackRegressions, ACorruptFenceCounterIsUnreadableNotZero) {
  RedisServer redis;
  const auto cfg = dir_.write("fence.toml", "[redis]\nhost = \"" + redis.address() + "\"\nkey = \"k\"\n");
  const std::vector<std::vector<std::string>> corrupt = {
      {"SET", "{k}:fence", "garbage"},
      {"SET", "{k}:fence", "99999999999999999999"},  // above 2^53-1 (and 2^64)
      {"HSET", "{k}:fence", "a", "1"},
  };
  for (const auto& write : corrupt) {
    SCOPED_TRACE(write[2]);
    redis.cli({"DEL", "{k}:fence"});
    redis.cli(write);
    for (bool held : {false, true}) {
      if (held) redis.cli({"SET", "k", "other-host:1:abc", "PX", "60000"});
      auto j = run_task_binary({"status", "--config", cfg, "--json"}, 10s);
      EXPECT_EQ(j.code, 0) << j.err;
      EXPECT_NE(j.out.find(held ? "\"state\":\"held\"" : "\"state\":\"free\""), std::string::npos) << j.out;
      EXPECT_EQ(j.out.find("\"token\":0"), std::string::npos) << j.out;
      EXPECT_NE(j.out.find(",\"token\":null,\"held_by_this_host\""), std::string::npos) << j.out;
      EXPECT_NE(j.out.find("\"fence_error\":\"the fence counter holds "), std::string::npos) << j.out;
      auto t = run_task_binary({"status", "--config", cfg}, 10s);
      EXPECT_EQ(t.out.find("token:  0"), std::string::npos) << t.out;
      EXPECT_NE(t.out.find("token:  unreadable: the fence counter {k}:fence is not an integer below 2^53-1 on 1 of 1"),
                std::string::npos)
          << t.out;
      EXPECT_NE(t.out.find("DEL {k}:fence"), std::string::npos) << t.out;
      EXPECT_NE(t.out.find("token unreadable (the fence counter holds "), std::string::npos) << t.out;
      redis.cli({"DEL", "k"});
    }
    auto ck = run_task_binary({"check", "--config", cfg}, 10s);
    EXPECT_NE(ck.out.find("no lease can be acquired on this node"), std::string::npos) << ck.out;
  }
  // A readable counter is shown as before.
  redis.cli({"DEL", "{k}:fence"});
  redis.cli({"SET", "{k}:fence", "17"});
  auto t = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_NE(t.out.find("token:  17\n"), std::string::npos) << t.out;
}

// The lease key holds something else (a hash written by another program): every command
// names the key and its type, instead of a raw WRONGTYPE from inside a script (attack round,
// issue 19), with limit 1 and fair or not.
TEST_F(CliAttackRegressions, ALeaseKeyOfAnotherTypeIsNamedWithItsType) {
  RedisServer redis;
  redis.cli({"HSET", "k", "a", "1"});
  for (const char* fair : {"true", "false"}) {
    SCOPED_TRACE(fair);
    const auto cfg = dir_.write(std::string("wrongtype-") + fair + ".toml",
                                "[redis]\nhost = \"" + redis.address() + "\"\nkey = \"k\"\nfair = " + fair +
                                    "\n[task]\ncommand = [\"/bin/true\"]\n");
    auto r = run_task_binary({"task", "--config", cfg, "--no-wait"}, 10s);
    EXPECT_EQ(r.code, 69) << r.err;  // loud: nobody can run the job until it is deleted
    EXPECT_NE(r.err.find("lease key k holds a hash, not a lease (something else wrote it): delete it"),
              std::string::npos)
        << r.err;
    // The node was reached: the give-up line says it answered with an error, not that it was
    // unreachable or refused this host (it read "0 unreachable, 1 refused").
    EXPECT_NE(r.err.find("no quorum of Redis nodes (1 answered with an error: "), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("refused"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("WRONGTYPE"), std::string::npos) << r.err;
    auto st = run_task_binary({"status", "--config", cfg}, 10s);
    EXPECT_NE(st.out.find("lease key k holds a hash"), std::string::npos) << st.out << st.err;
    EXPECT_NE(st.out.find("1 answered with an error, below)"), std::string::npos) << st.out;
  }
  EXPECT_EQ(redis.cli({"TYPE", "k"}), "hash");  // left as it was
}

// An ACL that forbids a command inside the lease script is a refusal of our rights (77),
// not an unreachable node (69).
TEST_F(CliAttackRegressions, AnAclRefusalInsideTheScriptIs77) {
  RedisServer redis(with_acl_user("user ro on >rpw ~* &* +@all -set"));
  auto r = run_as_ro(ro_config("acl.toml", redis, "", "command = [\"/bin/true\"]\n"));
  EXPECT_EQ(r.code, 77) << r.err;
}

// An ACL user without one of the rights the acquire script needs, after its SET NX has
// succeeded (+pttl for the pause, +time for the token's floor) or where a read is made through
// pcall (+get on the fence counter): 77 naming the refusal, and no lease left behind for its
// TTL (attack round, issue 19: -pttl kept every other host out for `expire`; -get read as a
// corrupt fence counter and exited 69). Fair and not, one slot and a semaphore.
TEST_F(CliAttackRegressions, ARightMissingHalfwayIs77AndLeavesNoLeaseBehind) {
  for (const char* right : {"pttl", "time", "get"}) {
    for (const char* fair : {"true", "false"}) {
      for (int limit : {1, 3}) {
        SCOPED_TRACE(std::string(right) + " fair=" + fair + " limit=" + std::to_string(limit));
        RedisServer redis(with_acl_user(std::string("user ro on >rpw ~* &* +@all -") + right));
        auto r = run_as_ro(ro_config(std::string("half-") + right + fair + std::to_string(limit) + ".toml", redis,
                                     std::string("expire = \"30s\"\nrestart_guard = false\nfair = ") + fair + "\n",
                                     "command = [\"/bin/true\"]\nlimit = " + std::to_string(limit) + "\n"));
        EXPECT_EQ(r.code, 77) << r.err;
        EXPECT_TRUE(says_acl_refused(r.err)) << r.err;
        EXPECT_EQ(r.err.find("is not an integer"), std::string::npos) << r.err;
        EXPECT_EQ(redis.cli({"EXISTS", "k", "{k}:slot:1", "{k}:slot:2"}), "0");
      }
    }
  }
}

// A user without +pexpire takes the lease (the acquire script needs no PEXPIRE) and its child
// starts, but no renewal can ever be confirmed: the child is stopped before the deadline as for
// any failed renewal (a refusal may be put right meanwhile: a password rotated on the server
// before the daemon's file), and the run exits 77 (our credentials' rights), not 75 (attack
// round, issue 19), naming the right in its last line.
TEST_F(CliAttackRegressions, ARenewalRefusedToTheDeadlineIs77) {
  RedisServer redis(with_acl_user("user ro on >rpw ~* &* +@all -pexpire"));
  auto r = run_as_ro(ro_config("nopexpire.toml", redis, "expire = \"4s\"\ncron = \"1s\"\nrestart_guard = false\n",
                               "command = \"sleep 30\"\nkill_grace = \"500ms\"\n"),
                     20s);
  EXPECT_EQ(r.code, 77) << r.err;
  EXPECT_NE(r.err.find("Redis refuses the renewal; lease deadline in"), std::string::npos) << r.err;
  EXPECT_TRUE(says_acl_refused(r.err)) << r.err;
  // The last line names the right, as `check` does (Redis 7.0 does not name it: the run asks).
  const auto lines = split_lines(r.err);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("renewals refused: the ACL user 'ro' lacks +pexpire ("), std::string::npos) << r.err;
  EXPECT_NE(lines.back().find("exiting 77"), std::string::npos) << r.err;
  EXPECT_EQ(redis.cli({"EXISTS", "{k}:refused", "{k}:probe"}), "0") << "a run that exits leaves no note";
}

// A waiter whose user may not ZREM cannot leave the waiting line when it stops: it says so
// (attack round, issue 19: the entry stayed without a word; the next release drops it).
TEST_F(CliAttackRegressions, AWaiterThatCannotLeaveTheLineSaysSo) {
  RedisServer redis(with_acl_user("user ro on >rpw ~* &* +@all -zrem"));
  const std::string base = "[redis]\nhost = \"" + redis.address() + "\"\nkey = \"k\"\nrestart_guard = false\n";
  const auto holder_cfg = dir_.write("holder.toml", base + "[task]\ncommand = \"sleep 20\"\n");
  const auto waiter_cfg = dir_.write("waiter.toml", base + "username = \"ro\"\npassword_env = \"RGT_PW\"\n"
                                                           "[task]\ncommand = \"true\"\n");
  TaskProcess holder(dir_.path(), "holder", {"task", "--config", holder_cfg});
  ASSERT_TRUE(holder.wait_for_log("child started", 10s)) << holder.err();
  TaskProcess waiter(dir_.path(), "waiter", {"task", "--config", waiter_cfg}, {{"RGT_PW", "rpw"}});
  ASSERT_TRUE(wait_until([&] { return redis.cli({"ZCARD", "{k}:line"}) == "1"; }, 10s)) << waiter.err();
  waiter.signal(SIGTERM);
  EXPECT_EQ(waiter.wait_for(10s), 75) << waiter.err();
  EXPECT_NE(waiter.err().find("could not leave the waiting line ("), std::string::npos) << waiter.err();
  holder.signal(SIGTERM);
  EXPECT_TRUE(holder.wait_for(10s)) << holder.err();
}

// A user without +del runs its job but cannot release: the log says why, not that the lease
// had expired (attack round, issue 19).
TEST_F(CliAttackRegressions, AReleaseRefusedSaysWhy) {
  RedisServer redis(with_acl_user("user ro on >rpw ~* &* +@all -del"));
  auto r = run_as_ro(ro_config("nodel.toml", redis, "restart_guard = false\n", "command = [\"/bin/true\"]\n"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("release deleted nothing for key=k: "), std::string::npos) << r.err;
  EXPECT_TRUE(says_acl_refused(r.err)) << r.err;
  EXPECT_EQ(r.err.find("had already expired"), std::string::npos) << r.err;
}

// A report that cannot be written is not success.
TEST_F(CliAttackRegressions, AReportThatCannotBeWrittenIsAnError) {
  RedisServer redis;
  const auto cfg = dir_.write("full.toml", "[redis]\nhost = \"" + redis.address() + "\"\nkey = \"k\"\n");
  const std::string bin = task_binary();
  for (const char* sub : {"status", "validate"}) {
    const int rc = std::system(("timeout 20 '" + bin + "' " + sub + " --config '" + cfg + "' >/dev/full 2>/dev/null").c_str());
    ASSERT_TRUE(WIFEXITED(rc));
    EXPECT_EQ(WEXITSTATUS(rc), 74) << sub;
  }
}

}  // namespace

}  // namespace cli_exit_status_test
