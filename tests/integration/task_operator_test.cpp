// Traps an operator met (items 6b, 7, 8 and 9 of a report), each against the real binary and
// real redis-servers (a fake server only where a real one cannot say it): a release that
// finds another holder's lease, a semaphore slot key of another type, a server's 100 KB
// text, a textfile that cannot be written, `pause --stop` said as what it is, and the
// holder id's prefix from the command line or the environment.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/fake_server.h"
#include "support/redis_server.h"
#include "support/task_process.h"

namespace task_operator_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

/// GET /metrics from 127.0.0.1:`port` (Connection: close); "" if it failed. Bounded.
std::string scrape(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string raw;
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    char buf[16384];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      raw.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  const auto body = raw.find("\r\n\r\n");
  return body == std::string::npos ? "" : raw.substr(body + 4);
}

/// The value of `name{key="K",label}` in an exposition; nullopt when absent.
std::optional<double> sample(const std::string& text, const std::string& name, const std::string& key,
                             const std::string& label = "") {
  const std::string head = name + "{key=\"" + key + "\"" + (label.empty() ? "" : "," + label) + "} ";
  for (const auto& line : split_lines(text)) {
    if (line.rfind(head, 0) == 0) return std::stod(line.substr(head.size()));
  }
  return std::nullopt;
}

/// A free loopback port for [metrics] listen.
int metrics_port() { return free_port(); }

/// Lines of `text` containing `needle`.
std::size_t lines_with(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (const auto& l : split_lines(text)) n += l.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

/// The longest line of `text`.
std::size_t longest_line(const std::string& text) {
  std::size_t most = 0;
  for (const auto& l : split_lines(text)) most = std::max(most, l.size());
  return most;
}

/// `id` is `prefix`:<pid>:<32 hex digits>.
bool holder_of_shape(const std::string& id, const std::string& prefix) {
  if (id.rfind(prefix + ":", 0) != 0) return false;
  const std::string rest = id.substr(prefix.size() + 1);
  const auto colon = rest.find(':');
  if (colon == 0 || colon == std::string::npos) return false;
  const std::string pid = rest.substr(0, colon), random = rest.substr(colon + 1);
  return std::all_of(pid.begin(), pid.end(), [](unsigned char c) { return std::isdigit(c); }) && random.size() == 32 &&
         std::all_of(random.begin(), random.end(), [](unsigned char c) { return std::isxdigit(c); });
}

class TaskOperator : public ::testing::Test {
 protected:
  /// A config for this test's Redis: a 5 s lease renewed every 2 s, so that a child of a few
  /// hundred milliseconds ends before the first renewal could notice anything.
  std::string config(ConfigSpec spec = {}, const std::string& sections = "") {
    if (spec.nodes.empty()) spec.nodes = "host = \"" + redis_.address() + "\"";
    if (spec.key == "rgt:lock") spec.key = test_key();
    return dir_.write("cfg-" + std::to_string(++configs_) + ".toml", make_config(spec) + sections);
  }
  static ConfigSpec slow_renewals(const std::string& mode = "oneshot") {
    ConfigSpec spec;
    spec.expire = "5s";
    spec.cron = "2s";
    spec.kill_grace = "500ms";
    spec.log_level = "info";
    spec.mode = mode;
    return spec;
  }
  std::string path(const std::string& name) const { return dir_.path() + "/" + name; }
  /// A child that says it started and then waits for the test's word ("go") before it exits
  /// with `status`.
  std::string waiting_child(int status) const {
    return "touch " + path("started") + "; while [ ! -e " + path("go") + " ]; do sleep 0.01; done; rm -f " +
           path("started") + " " + path("go") + "; exit " + std::to_string(status);
  }
  bool started(std::chrono::milliseconds within) {
    return wait_until([&] { return std::filesystem::exists(path("started")); }, within);
  }
  void go() { dir_.write("go", ""); }
  /// What a host that took the lease after ours was lost leaves in the key: its holder id and
  /// a fence counter raised for it. Returns the counter.
  std::string another_holder_takes_the_key(const std::string& holder) {
    const std::string fence = "{" + test_key() + "}:fence";
    redis_.cli({"SET", test_key(), holder, "PX", "60000"});
    return redis_.cli({"INCR", fence});
  }

  RedisServer redis_;
  TempDir dir_;
  int configs_ = 0;
};

// Item 6b: the key deleted or lost while the child ran and taken by another host; the child
// ended before a renewal could notice. The release found another holder and said so at warn
// only ("the lease had already expired or was taken"). Now: error, naming the holder and its
// token, and the child's own exit status (it ran to its end).
TEST_F(TaskOperator, AReleaseThatFindsAnotherHoldersLeaseIsAnErrorAndKeepsTheChildsStatus) {
  const auto cfg = config(slow_renewals());
  TaskProcess host(dir_.path(), "host", {"task", "--config", cfg, "--", "/bin/sh", "-c", waiting_child(3)});
  ASSERT_TRUE(started(10s)) << host.err();
  const std::string token = another_holder_takes_the_key("intruder:4242:0123456789abcdef");
  go();
  EXPECT_EQ(host.wait_for(10s), 3) << host.err();
  const std::string err = host.err();
  EXPECT_EQ(lines_with(err, " error "), 1u) << err;
  EXPECT_EQ(lines_with(err, "at release the lease was another holder's"), 1u) << err;
  EXPECT_NE(err.find("holder intruder:4242:0123456789abcdef (the key's fence counter is at token " + token + ")"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("two children may have run at once"), std::string::npos) << err;
  EXPECT_EQ(err.find("release deleted nothing"), std::string::npos) << err;
  EXPECT_EQ(redis_.cli({"GET", test_key()}), "intruder:4242:0123456789abcdef") << "another's lease is left alone";
}

// Redlock: the nodes answer the release differently (ours deleted on one, another holder's
// lease on the others). One node with another holder, of those that were ours, is enough.
TEST_F(TaskOperator, AReleaseThatFindsAnotherHolderOnSomeRedlockNodesIsAnError) {
  RedisServer b, c;
  auto spec = slow_renewals();
  spec.nodes = "nodes = [\"" + redis_.address() + "\", \"" + b.address() + "\", \"" + c.address() + "\"]";
  const auto cfg = config(spec);
  TaskProcess host(dir_.path(), "host", {"task", "--config", cfg, "--", "/bin/sh", "-c", waiting_child(4)});
  ASSERT_TRUE(started(10s)) << host.err();
  // Two of the three: at least one of them had granted with the quorum.
  for (const RedisServer* s : {&redis_, &b}) s->cli({"SET", test_key(), "intruder:7:00", "PX", "60000"});
  go();
  EXPECT_EQ(host.wait_for(10s), 4) << host.err();
  EXPECT_EQ(lines_with(host.err(), "at release the lease was another holder's"), 1u) << host.err();
  EXPECT_NE(host.err().find(": holder intruder:7:00"), std::string::npos) << host.err();
  EXPECT_EQ(redis_.cli({"GET", test_key()}), "intruder:7:00");
  EXPECT_EQ(b.cli({"GET", test_key()}), "intruder:7:00");
}

// A key merely gone at the release takes nothing from anybody: still a warning.
TEST_F(TaskOperator, AReleaseThatFindsTheKeyGoneStaysAWarning) {
  const auto cfg = config(slow_renewals());
  TaskProcess host(dir_.path(), "host", {"task", "--config", cfg, "--", "/bin/sh", "-c", waiting_child(0)});
  ASSERT_TRUE(started(10s)) << host.err();
  redis_.cli({"DEL", test_key()});
  go();
  EXPECT_EQ(host.wait_for(10s), 0) << host.err();
  EXPECT_EQ(lines_with(host.err(), " error "), 0u) << host.err();
  EXPECT_EQ(lines_with(host.err(), "release deleted nothing for key=" + test_key() + ": the lease was already gone"), 1u)
      << host.err();
}

// The same over HTTP, in a supervise leader that lives on: the loss counts under its own cause.
TEST_F(TaskOperator, AReleaseThatFindsAnotherHoldersLeaseCountsALeaseLossTaken) {
  const int port = metrics_port();
  auto spec = slow_renewals("supervise");
  spec.extra_task = "restart = \"never\"\nrestart_delay = \"100ms\"\n";
  const auto cfg = config(spec, "\n[metrics]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\n");
  TaskProcess leader(dir_.path(), "leader", {"task", "--config", cfg, "--", "/bin/sh", "-c", waiting_child(0)});
  ASSERT_TRUE(started(10s)) << leader.err();
  EXPECT_EQ(sample(scrape(port), "redisgo_task_lease_losses_total", test_key(), "cause=\"taken\""), 0.0);
  another_holder_takes_the_key("intruder:1:00");
  go();
  ASSERT_TRUE(leader.wait_for_log("at release the lease was another holder's", 10s)) << leader.err();
  EXPECT_TRUE(wait_until(
      [&] { return sample(scrape(port), "redisgo_task_lease_losses_total", test_key(), "cause=\"taken\"") == 1.0; }, 5s,
      50ms))
      << scrape(port);
  const auto text = scrape(port);
  EXPECT_EQ(sample(text, "redisgo_task_lease_losses_total", test_key(), "cause=\"lost\""), 0.0) << text;
  leader.signal(SIGTERM);
  EXPECT_EQ(leader.wait_for(10s), 0) << leader.err();
}

// Item 7: with limit = 3, a hash written over {K}:slot:2 made every acquisition an error
// ("no host with this config can run the job"). Now the slot is skipped: two run, a third
// waits in line as for a held slot and takes the first slot freed; the bad key is named once.
TEST_F(TaskOperator, ASlotKeyOfAnotherTypeCostsOneSlotAndIsNamedOnce) {
  const std::string bad = "{" + test_key() + "}:slot:2";
  redis_.cli({"HSET", bad, "field", "value"});
  auto spec = slow_renewals();
  spec.expire = "2s";
  spec.cron = "500ms";
  spec.extra_task = "limit = 3\n";
  const auto cfg = config(spec);
  const std::string runs = path("runs");
  auto job = [&](const std::string& name, const std::string& then) {
    return "echo " + name + " >> " + runs + "; " + then;
  };
  TaskProcess a(dir_.path(), "a", {"task", "--config", cfg, "--", "/bin/sh", "-c", job("a", "sleep 30")});
  TaskProcess b(dir_.path(), "b", {"task", "--config", cfg, "--", "/bin/sh", "-c", job("b", "sleep 30")});
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(runs)).size() == 2; }, 10s)) << a.err() << b.err();
  TaskProcess c(dir_.path(), "c", {"task", "--config", cfg, "--", "/bin/sh", "-c", job("c", "true")});
  // c waits in the line (not an error), and says what to delete, once.
  ASSERT_TRUE(wait_until([&] { return redis_.cli({"ZCARD", "{" + test_key() + "}:line"}) == "1"; }, 10s, 20ms))
      << c.err();
  ASSERT_TRUE(c.wait_for_log("slot key " + bad + " holds a hash", 10s)) << c.err();
  std::this_thread::sleep_for(1500ms);  // attempts go on: still said once
  EXPECT_EQ(lines_with(c.err(), "slot key " + bad + " holds a hash"), 1u) << c.err();
  EXPECT_NE(c.err().find("(redis-cli DEL " + bad + ")"), std::string::npos) << c.err();
  EXPECT_EQ(c.err().find("no host with this config can run the job"), std::string::npos) << c.err();
  EXPECT_TRUE(c.running()) << c.err();
  // `status` says why that slot is unknown.
  const auto st = run_task_binary({"status", "--config", cfg}, 20s);
  EXPECT_NE(st.out.find("slot 2: unknown ("), std::string::npos) << st.out;
  EXPECT_NE(st.out.find(bad + " holds a hash"), std::string::npos) << st.out;
  a.signal(SIGTERM);
  EXPECT_EQ(c.wait_for(10s), 0) << c.err();
  EXPECT_EQ(redis_.cli({"TYPE", bad}), "hash") << "left alone";
  b.signal(SIGTERM);
  EXPECT_TRUE(a.wait_for(10s).has_value());
  EXPECT_TRUE(b.wait_for(10s).has_value());
}

// Item 8: a 100 KB error reply (a proxy, a module in front of Redis) made log lines of 100 KB,
// four per attempt. A fake server answers every command so: every line stays short, and says
// how much was cut.
TEST_F(TaskOperator, AHundredKilobyteErrorReplyMakesShortLogLines) {
  const std::string huge = "ERR " + std::string(100'000, 'x') + "\nforged line";
  FakeServer fake(command_handler([&](const std::vector<std::string>&) {
    std::string text = huge;
    for (auto& ch : text) ch = ch == '\n' ? ' ' : ch;  // one RESP error line
    return "-" + text + "\r\n";
  }));
  ConfigSpec spec;
  spec.nodes = "host = \"" + fake.address() + "\"";
  spec.key = test_key();
  spec.log_level = "info";
  spec.extra_redis = "monitor_try_all = false\nretries_count = 3\n";
  const auto cfg = dir_.write("fake.toml", make_config(spec));
  auto r = run_task_binary({"task", "--config", cfg, "--", "true"}, 20s);
  EXPECT_NE(r.code, 0) << r.err.substr(0, 3000);
  EXPECT_LT(longest_line(r.err), 1500u) << r.err.substr(0, 3000);
  EXPECT_NE(r.err.find("bytes cut)"), std::string::npos) << r.err.substr(0, 3000);
  auto st = run_task_binary({"status", "--config", cfg}, 20s);
  EXPECT_LT(longest_line(st.out + st.err), 1500u) << (st.out + st.err).substr(0, 3000);
}

// Item 8 with a real server: 100 KB values written by hand where the daemon and the commands
// read them (a claim's status, a pause's reason, a member of the waiting line) are shown cut.
TEST_F(TaskOperator, HundredKilobyteValuesInRedisAreShownCut) {
  const std::string big(100'000, 'v');
  const std::string base = "{" + test_key() + "}";
  auto spec = slow_renewals();
  spec.extra_task = "once_per = \"1h\"\n";
  const auto cfg = config(spec);
  // The claim of this hour's slot, written by "another host" with a 100 KB status.
  const long long now_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  const long long slot = (now_s + 1800) / 3600 * 3600;
  // (One 100 KB value per redis-cli call: its whole command line goes to `sh -c` as one
  // argument, which Linux bounds at 128 KB.)
  const std::string claim = base + ":once:" + std::to_string(slot);
  redis_.cli({"HSET", claim, "holder", "other:1:00", "start", std::to_string(slot * 1000)});
  redis_.cli({"HSET", claim, "token", big});
  redis_.cli({"HSET", claim, "status", big});
  redis_.cli({"EXPIRE", claim, "600"});
  auto r = run_task_binary({"task", "--config", cfg, "--", "true"}, 20s);
  EXPECT_EQ(r.code, 75) << r.err.substr(0, 3000);
  EXPECT_NE(r.err.find("was run already by"), std::string::npos) << r.err.substr(0, 3000);
  EXPECT_LT(longest_line(r.err), 1500u) << r.err.substr(0, 3000);
  // A pause with a 100 KB reason and a line member of 100 KB, as `status` and `list` show them.
  redis_.cli({"HSET", base + ":pause", "by", "ops", "since", "1", "until", "2"});
  redis_.cli({"HSET", base + ":pause", "reason", big});
  redis_.cli({"PEXPIRE", base + ":pause", "60000"});
  redis_.cli({"ZADD", base + ":line", "1", big});
  redis_.cli({"PEXPIRE", base + ":line", "60000"});
  for (const std::string command : {"status", "list"}) {
    auto out = run_task_binary({command, "--config", cfg}, 20s);
    EXPECT_EQ(out.code, 0) << command << ": " << out.err;
    EXPECT_LT(longest_line(out.out), 1500u) << command << ": " << out.out.substr(0, 3000);
    EXPECT_NE(out.out.find("bytes cut)"), std::string::npos) << command << ": " << out.out.substr(0, 3000);
  }
}

// Item 9: a textfile the daemon can no longer write (its directory gone) is shown over HTTP.
TEST_F(TaskOperator, ATextfileThatCannotBeWrittenIsCountedOverHttp) {
  const int port = metrics_port();
  const std::string dir = path("prom");
  std::filesystem::create_directory(dir);
  auto spec = slow_renewals("supervise");
  const auto cfg = config(spec, "\n[metrics]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\ntextfile = \"" + dir +
                                    "/rt.prom\"\n");
  TaskProcess leader(dir_.path(), "leader", {"task", "--config", cfg, "--", "sleep", "30"});
  ASSERT_TRUE(leader.wait_for_log("child started", 10s)) << leader.err();
  EXPECT_EQ(sample(scrape(port), "redisgo_task_textfile_write_errors_total", test_key()), 0.0) << scrape(port);
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(wait_until(
      [&] { return sample(scrape(port), "redisgo_task_textfile_write_errors_total", test_key()).value_or(0) >= 1; },
      20s, 200ms))
      << scrape(port) << leader.err();
  EXPECT_TRUE(leader.wait_for_log("cannot write " + dir + "/rt.prom", 5s)) << leader.err();
  leader.signal(SIGTERM);
  EXPECT_EQ(leader.wait_for(10s), 0) << leader.err();
}

// Item 9: `pause --stop` was logged as "handover requested" and counted as a handover.
TEST_F(TaskOperator, PauseStopIsSaidAndCountedAsAPause) {
  const int port = metrics_port();
  auto spec = slow_renewals("supervise");
  spec.expire = "2s";
  spec.cron = "400ms";
  spec.kill_grace = "300ms";
  spec.extra_task = "step_down_hold = \"1s\"\n";
  const auto cfg = config(spec, "\n[metrics]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\n");
  TaskProcess leader(dir_.path(), "leader", {"task", "--config", cfg, "--", "sleep", "30"});
  ASSERT_TRUE(leader.wait_for_log("child started", 10s)) << leader.err();
  auto p = run_task_binary({"pause", "--config", cfg, "--for", "30s", "--stop"}, 20s);
  EXPECT_EQ(p.code, 0) << p.out << p.err;
  ASSERT_TRUE(leader.wait_for_log("stepped down", 10s)) << leader.err();
  EXPECT_NE(leader.err().find("stop requested by `pause --stop`"), std::string::npos) << leader.err();
  EXPECT_EQ(leader.err().find("handover requested"), std::string::npos) << leader.err();
  const auto text = scrape(port);
  EXPECT_EQ(sample(text, "redisgo_task_step_downs_total", test_key(), "cause=\"pause\""), 1.0) << text;
  EXPECT_EQ(sample(text, "redisgo_task_step_downs_total", test_key(), "cause=\"handover\""), 0.0) << text;
  leader.signal(SIGTERM);
  EXPECT_EQ(leader.wait_for(10s), 0) << leader.err();
  run_task_binary({"resume", "--config", cfg}, 20s);
}

// Item 9: hosts that share a host name (containers, clones) and one file set the holder id's
// prefix apart: --holder-prefix over REDISGO_TASK_HOLDER_PREFIX over [redis] value.
TEST_F(TaskOperator, TheHolderPrefixComesFromTheCommandLineThenTheEnvironmentThenTheFile) {
  ConfigSpec spec = slow_renewals();
  spec.extra_redis = "value = \"from-file\"\n";
  const auto cfg = config(spec);
  const std::string job = "echo $REDISGO_TASK_HOLDER";
  auto holder = [&](const std::vector<std::string>& more, const std::map<std::string, std::string>& env) {
    std::vector<std::string> args{"task", "--config", cfg};
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", job});
    auto r = run_task_binary(args, 20s, env);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto lines = split_lines(r.out);
    return lines.empty() ? std::string() : lines.front();
  };
  const auto file = holder({}, {});
  EXPECT_TRUE(holder_of_shape(file, "from-file")) << file;
  const auto env = holder({}, {{"REDISGO_TASK_HOLDER_PREFIX", "from-env"}});
  EXPECT_TRUE(holder_of_shape(env, "from-env")) << env;
  const auto both = holder({"--holder-prefix", "from-flag"}, {{"REDISGO_TASK_HOLDER_PREFIX", "from-env"}});
  EXPECT_TRUE(holder_of_shape(both, "from-flag")) << both;
  // Checked as value is: empty is a configuration error.
  auto empty_env = run_task_binary({"task", "--config", cfg, "--", "true"}, 20s, {{"REDISGO_TASK_HOLDER_PREFIX", ""}});
  EXPECT_EQ(empty_env.code, 78) << empty_env.err;
  EXPECT_NE(empty_env.err.find("REDISGO_TASK_HOLDER_PREFIX"), std::string::npos) << empty_env.err;
  auto empty_flag = run_task_binary({"task", "--config", cfg, "--holder-prefix", "", "--", "true"}, 20s);
  EXPECT_EQ(empty_flag.code, 78) << empty_flag.err;
  // validate shows the effective value; status tells "this host" by the same prefix.
  auto v = run_task_binary({"validate", "--config", cfg}, 20s, {{"REDISGO_TASK_HOLDER_PREFIX", "from-env"}});
  EXPECT_NE(v.out.find("value = \"from-env\""), std::string::npos) << v.out;
  redis_.cli({"SET", test_key(), "from-env:1:00", "PX", "60000"});
  auto mine = run_task_binary({"status", "--config", cfg}, 20s, {{"REDISGO_TASK_HOLDER_PREFIX", "from-env"}});
  EXPECT_NE(mine.out.find("(this host)"), std::string::npos) << mine.out;
  auto theirs = run_task_binary({"status", "--config", cfg, "--holder-prefix", "elsewhere"}, 20s,
                                {{"REDISGO_TASK_HOLDER_PREFIX", "from-env"}});
  EXPECT_EQ(theirs.out.find("(this host)"), std::string::npos) << theirs.out;
}

// A holder prefix goes into the notes status and list split at newlines, and onto their
// lines: a control character in it is refused from each place it may come from, and what a
// note written by hand holds is shown escaped.
TEST_F(TaskOperator, AHolderPrefixWithAControlCharacterIsRefusedWhereverItComesFrom) {
  const auto cfg = config(slow_renewals());
  auto flag = run_task_binary({"task", "--config", cfg, "--holder-prefix", "evil\n0\nroot", "--", "true"}, 20s);
  EXPECT_EQ(flag.code, 78) << flag.err;
  EXPECT_NE(flag.err.find("--holder-prefix: expected a holder id prefix without control characters, found "
                          "\"evil\\n0\\nroot\" (\\n at byte 5)"),
            std::string::npos)
      << flag.err;
  auto env = run_task_binary({"task", "--config", cfg, "--", "true"}, 20s, {{"REDISGO_TASK_HOLDER_PREFIX", "a\tb"}});
  EXPECT_EQ(env.code, 78) << env.err;
  EXPECT_NE(env.err.find("expected REDISGO_TASK_HOLDER_PREFIX to hold a holder id prefix without control characters"),
            std::string::npos)
      << env.err;
  ConfigSpec spec = slow_renewals();
  spec.extra_redis = "value = \"x\\ny\"\n";
  const auto bad = config(spec);
  for (const std::string sub : {"validate", "task"}) {
    std::vector<std::string> args{sub, "--config", bad};
    if (sub == "task") args.insert(args.end(), {"--", "true"});
    auto file = run_task_binary(args, 20s);
    EXPECT_EQ(file.code, 78) << sub << ": " << file.err;
    EXPECT_NE(file.err.find("redis.value"), std::string::npos) << sub << ": " << file.err;
    EXPECT_NE(file.err.find("without control characters"), std::string::npos) << sub << ": " << file.err;
  }
  // Written by hand (or by another tool): escaped where status shows it.
  redis_.cli({"SET", "{" + test_key() + "}:refused", "ho\x1b[31mst:1:00\n0\nus\rer\n+pexpire\nNOPERM", "PX", "60000"});
  auto status = run_task_binary({"status", "--config", cfg}, 20s);
  EXPECT_NE(status.out.find("alert:  renewals refused: the ACL user 'us\\rer' of ho\\x1b[31mst lacks +pexpire"),
            std::string::npos)
      << status.out;
  EXPECT_EQ(status.out.find('\x1b'), std::string::npos) << status.out;
  EXPECT_EQ(status.out.find('\r'), std::string::npos) << status.out;
}

}  // namespace

}  // namespace task_operator_test
