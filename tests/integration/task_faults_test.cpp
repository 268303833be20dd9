// The defects of issue 8, each reproduced against the real daemon and real redis-servers
// (plus fake servers that accept TCP and never answer): self-wake storms, a spinning
// "zero" strategy, grandchildren outliving the daemon, silent nodes costing a leader its
// renewals, shared holder ids, crash loops that never hand over, log floods. Every
// scenario also measures its storm figures (StormMeter): at most 50 commands/s per
// daemon per node and 5 log lines/s per daemon.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "support/fake_server.h"
#include "support/notify_socket.h"
#include "support/redis_server.h"
#include "support/storm_meter.h"
#include "support/task_process.h"
#include "util/duration.h"

namespace task_faults_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

// The channel a release is announced on (the key's hash tag, then ":released").
std::string release_channel() { return "{" + test_key() + "}:released"; }

// How many clients are subscribed to `channel` on `redis` (PUBSUB NUMSUB); -1 if unreadable.
int subscribers(const RedisServer& redis, const std::string& channel) {
  const auto lines = split_lines(redis.cli({"PUBSUB", "NUMSUB", channel}));
  if (lines.size() < 2) return -1;
  try {
    return std::stoi(lines[1]);
  } catch (const std::exception&) {
    return -1;
  }
}

/// Lines of `text` that contain `needle`.
std::size_t count_lines(const std::string& text, const std::string& needle) {
  const auto lines = split_lines(text);
  return static_cast<std::size_t>(
      std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; }));
}

class TaskFaults : public ::testing::Test {
 protected:
  /// A config over `addresses` (one: host, several: nodes).
  std::string config(ConfigSpec spec, const std::vector<std::string>& addresses) {
    if (addresses.size() == 1) {
      spec.nodes = "host = \"" + addresses[0] + "\"";
    } else {
      std::string list;
      for (const auto& a : addresses) list += (list.empty() ? "\"" : ", \"") + a + "\"";
      spec.nodes = "nodes = [" + list + "]";
    }
    if (spec.key == "rgt:lock") spec.key = test_key();
    return dir_.write("task-" + std::to_string(++configs_) + ".toml", make_config(spec));
  }
  static std::vector<std::string> addresses(const std::vector<const RedisServer*>& servers) {
    std::vector<std::string> out;
    for (const auto* s : servers) out.push_back(s->address());
    return out;
  }
  std::vector<std::string> task(const std::string& cfg, const std::string& script) {
    return {"task", "--config", cfg, "--", "/bin/sh", "-c", script};
  }
  std::string err_path(const std::string& name) const { return dir_.path() + "/" + name + ".err"; }
  static void print(const StormMeter::Figures& f, const std::string& what) {
    std::cout << what << ": over " << f.seconds << " s, commands/s per node:";
    for (double c : f.commands_per_s) std::cout << " " << c;
    std::cout << "; log lines/s per daemon:";
    for (double l : f.lines_per_s) std::cout << " " << l;
    std::cout << "\n";
  }

  TempDir dir_;
  int configs_ = 0;
};

// Item 1: two of three nodes down, one waiter. Before: 22-27k commands/s to the surviving
// node and ~4,000 log lines/s (the undo's PUBLISH woke the waiter itself).
TEST_F(TaskFaults, WaiterWithTwoOfThreeNodesDownIsPaced) {
  RedisServer a, b, c;
  auto cfg = config([] {
    ConfigSpec s;
    s.mode = "supervise";
    s.log_level = "info";
    return s;
  }(), addresses({&a, &b, &c}));
  b.kill();
  c.kill();
  TaskProcess p(dir_.path(), "waiter", task(cfg, "exec sleep 60"));
  ASSERT_TRUE(p.wait_for_log("acquire: redis", 5s)) << p.err();
  StormMeter meter({&a, &b, &c}, {err_path("waiter")}, 1);
  print(meter.measure(3s), "two of three down");
  EXPECT_TRUE(p.running());
  // Each dead node's cause was logged once, not per attempt.
  EXPECT_LE(count_lines(p.err(), " warn "), 2u) << p.err();
}

// Item 1: a leader holds nodes 1 and 2 while node 0 lost the key. Before: standbys grew
// to 64k/32k/32k commands/s for as long as the leader held.
TEST_F(TaskFaults, StandbyOfALeaderHoldingTwoOfThreeIsPaced) {
  RedisServer a, b, c;
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.log_level = "info";
  auto cfg = config(spec, addresses({&a, &b, &c}));
  const std::string marks = dir_.path() + "/marks";
  TaskProcess leader(dir_.path(), "leader", task(cfg, "echo A >> " + marks + "; exec sleep 60"));
  ASSERT_TRUE(wait_until([&] { return read_file(marks) == "A\n"; }, 10s)) << leader.err();
  a.cli({"DEL", test_key()});
  TaskProcess standby(dir_.path(), "standby", task(cfg, "echo B >> " + marks + "; exec sleep 60"));
  ASSERT_TRUE(wait_until([&] { return a.cli({"INFO", "stats"}).find("total_commands") != std::string::npos; }, 1s));
  std::this_thread::sleep_for(300ms);  // the standby's first attempts
  StormMeter meter({&a, &b, &c}, {err_path("leader"), err_path("standby")}, 2);
  print(meter.measure(3s), "leader on two of three, standby waiting");
  EXPECT_EQ(read_file(marks), "A\n") << standby.err();  // never two leaders
  EXPECT_TRUE(standby.running());
}

// Item 1: three standbys racing one release with every node up. The vote may split; the
// losers undo without publishing, back off with jitter, and one wins soon.
TEST_F(TaskFaults, ThreeStandbysRacingAReleaseTakeOverQuicklyAndQuietly) {
  RedisServer a, b, c;
  ConfigSpec spec;
  spec.extra_redis = "fair = false\n";  // every standby races (the line: task_fair_line_test)
  spec.mode = "supervise";
  spec.log_level = "info";
  auto cfg = config(spec, addresses({&a, &b, &c}));
  const std::string log = dir_.path() + "/intervals";
  const std::string job = "echo \"start $(date +%s%N) $REDISGO_TASK_TOKEN\" >> " + log + "; exec sleep 60";
  TaskProcess leader(dir_.path(), "leader", task(cfg, job));
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(log)).size() == 1; }, 10s)) << leader.err();
  std::vector<std::unique_ptr<TaskProcess>> standbys;
  for (int i = 0; i < 3; ++i) {
    standbys.push_back(std::make_unique<TaskProcess>(dir_.path(), "s" + std::to_string(i), task(cfg, job)));
  }
  for (auto& s : standbys) ASSERT_TRUE(s->wait_for_log("contending", 5s)) << s->err();
  // Every standby has missed once and listens for the release on every node.
  ASSERT_TRUE(wait_until([&] {
    return subscribers(a, release_channel()) == 3 && subscribers(b, release_channel()) == 3 &&
           subscribers(c, release_channel()) == 3;
  }, 5s));
  const auto released = std::chrono::steady_clock::now();
  // (one standby's start line follows)
  leader.signal(SIGTERM);
  ASSERT_EQ(leader.wait_for(10s), 0) << leader.err();
  // The leader's job was stopped mid-sleep (no "end" line); the next "start" is the takeover.
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(log)).size() == 2; }, 5s)) << read_file(log);
  const auto took = std::chrono::steady_clock::now() - released;
  std::cout << "takeover after the release: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";
  // Woken by the release (invariant 5: a few milliseconds; 86-270 ms measured under ASan,
  // the leader's stop included), not at an attempt paced by the TTL: 2 s is under that.
  EXPECT_LT(took, 2s);
  StormMeter meter({&a, &b, &c}, {err_path("s0"), err_path("s1"), err_path("s2")}, 3);
  print(meter.measure(2s), "after the race");
  // Exactly one of the three runs the job now.
  std::size_t running = 0;
  for (auto& s : standbys) running += s->err().find("child started") != std::string::npos ? 1 : 0;
  EXPECT_EQ(running, 1u);
  for (auto& s : standbys) s->signal(SIGTERM);
  for (auto& s : standbys) EXPECT_EQ(s->wait_for(10s), 0) << s->err();
  EXPECT_EQ(split_lines(read_file(log)).size(), 2u) << "a third run started: " << read_file(log);
}

// Item 2: strategy "zero" against a down node. Before: 100% CPU, ~2M attempts/s, one
// warn line per ms, and SIGTERM ignored until SIGKILL.
TEST_F(TaskFaults, ZeroStrategyAgainstADownNodeNeitherSpinsNorIgnoresSigterm) {
  ConfigSpec spec;
  spec.backoff = "strategy = \"zero\"\n";
  spec.log_level = "info";
  auto cfg = config(spec, {"127.0.0.1:" + std::to_string(free_port())});
  TaskProcess p(dir_.path(), "zero", task(cfg, "echo ran"));
  ASSERT_TRUE(p.wait_for_log("acquire: redis", 5s)) << p.err();
  const auto cpu0 = cpu_time(p.pid());
  StormMeter meter({}, {err_path("zero")}, 1);
  print(meter.measure(2s), "zero strategy, node down");
  const auto cpu = cpu_time(p.pid()) - cpu0;
  std::cout << "CPU used in 2 s: " << cpu.count() << " ms\n";
  // CPU, not wall time: 0-10 ms measured, where a spin is the whole 2000 ms.
  EXPECT_LT(cpu, 300ms);
  const auto t0 = std::chrono::steady_clock::now();
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(5s), 75) << p.err();
  const auto took = std::chrono::steady_clock::now() - t0;
  std::cout << "SIGTERM to exit: " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";
  // The manual's stop bound (kStopBound: 300 ms under the sanitizers; 30-170 ms measured).
  EXPECT_LT(took, kStopBound);
}

// Item 3: `sh -c` trees. Before: the daemon SIGKILLed, `sleep 37` lived on.
TEST_F(TaskFaults, KilledDaemonTakesShellGrandchildrenAndSetsidOnesAlong) {
  RedisServer redis;
  ConfigSpec spec;
  spec.expire = "5s";
  spec.cron = "1s";
  auto cfg = config(spec, {redis.address()});
  const std::string pids = dir_.path() + "/pids";
  TaskProcess p(dir_.path(), "tree",
                task(cfg, "sleep 37 & echo $! >> " + pids + "; setsid sleep 38 & echo $! >> " + pids +
                              "; (setsid sh -c 'sleep 39 & echo $! >> " + pids + "; wait') & wait"));
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(pids)).size() == 3; }, 10s)) << p.err();
  std::vector<pid_t> tree;
  for (const auto& l : split_lines(read_file(pids))) tree.push_back(std::stoi(l));
  for (pid_t pid : tree) ASSERT_TRUE(process_alive(pid)) << pid;
  const auto t0 = std::chrono::steady_clock::now();
  p.signal(SIGKILL);
  p.wait_for(5s);
  ASSERT_TRUE(wait_until([&] {
    return std::none_of(tree.begin(), tree.end(), [](pid_t pid) { return process_alive(pid); });
  }, 2s));
  const auto took = std::chrono::steady_clock::now() - t0;
  std::cout << "whole tree dead " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms after the daemon's SIGKILL\n";
  // The manual's 100 ms for the tree to die with its daemon (kStopBound: 300 ms under the
  // sanitizers; 11-33 ms measured).
  EXPECT_LT(took, kStopBound);
}

// Item 3: a job that daemonizes a helper and exits must not leave it running after the
// release (another host is about to start its own).
TEST_F(TaskFaults, AJobsDaemonizedLeftoverDiesWhenTheJobEnds) {
  RedisServer redis;
  auto cfg = config({}, {redis.address()});
  const std::string pid_file = dir_.path() + "/daemonized";
  auto r = run_task_binary(task(cfg, "setsid sh -c 'sleep 40 & echo $! > " + pid_file + "' & wait; exit 3"), 10s);
  EXPECT_EQ(r.code, 3) << r.err;
  const auto lines = split_lines(read_file(pid_file));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_FALSE(process_alive(std::stoi(lines[0])));
}

// Item 4: 5 nodes, 2 of them accept TCP and never answer, password and db set. Before:
// no renewal was ever confirmed and the child was killed with a healthy quorum of 3.
TEST_F(TaskFaults, TwoSilentNodesOfFiveCostTheLeaderNothing) {
  const RedisServerOptions secret = with_password("s3cret");
  RedisServer a(secret), b(secret), c(secret);
  FakeServer silent1, silent2;
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.expire = "2s";
  spec.cron = "400ms";
  spec.kill_grace = "500ms";
  spec.io_timeout = "500ms";
  spec.extra_redis = "password_env = \"RGT_PW\"\ndb = 1\n";
  auto cfg = config(spec, {silent1.address(), a.address(), silent2.address(), b.address(), c.address()});
  const std::string marks = dir_.path() + "/marks";
  TaskProcess p(dir_.path(), "leader", task(cfg, "echo up >> " + marks + "; exec sleep 60"), {{"RGT_PW", "s3cret"}});
  ASSERT_TRUE(wait_until([&] { return read_file(marks) == "up\n"; }, 10s)) << p.err();
  StormMeter meter({&a, &b, &c}, {err_path("leader")}, 1);
  print(meter.measure(3s), "leader with two silent nodes of five");  // 1.5 TTLs
  EXPECT_EQ(p.err().find("stopping child"), std::string::npos) << p.err();
  EXPECT_EQ(read_file(marks), "up\n");  // the child was never restarted
  EXPECT_GE(count_lines(p.err(), "lease renewed"), 5u) << p.err();
  const auto t0 = std::chrono::steady_clock::now();
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(10s), 0) << p.err();
  const auto took = std::chrono::steady_clock::now() - t0;
  std::cout << "leader stop with silent nodes: " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms\n";
  // Child stop + release: the release waits on the silent nodes at most io_timeout (1 s
  // here); measured 79 ms, the healthy nodes answering first. A release that waited for the
  // silent nodes' replies would take io_timeout; one after the other, twice that.
  EXPECT_LT(took, 1500ms);
  EXPECT_EQ(a.cli({"-a", "s3cret", "--no-auth-warning", "-n", "1", "EXISTS", test_key()}), "0");
}

// Item 4: SIGTERM while a node has accepted TCP and never answers. Before: 7-9 s with
// io_timeout = "3s".
TEST_F(TaskFaults, SigtermDuringASilentConnectExitsAtOnce) {
  RedisServer a(with_password("s3cret"));
  FakeServer silent1, silent2;
  ConfigSpec spec;
  spec.expire = "10s";
  spec.cron = "2s";
  spec.io_timeout = "3s";
  spec.extra_redis = "password_env = \"RGT_PW\"\n";
  auto cfg = config(spec, {silent1.address(), a.address(), silent2.address()});
  TaskProcess p(dir_.path(), "oneshot", task(cfg, "echo ran"), {{"RGT_PW", "s3cret"}});
  ASSERT_TRUE(wait_until([&] { return silent1.connections() >= 1 && silent2.connections() >= 1; }, 5s)) << p.err();
  std::this_thread::sleep_for(100ms);  // inside the round, waiting on the silent nodes
  const auto t0 = std::chrono::steady_clock::now();
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(5s), 75) << p.err();
  const auto took = std::chrono::steady_clock::now() - t0;
  std::cout << "SIGTERM to exit during a silent connect: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";
  // The manual's stop bound (kStopBound: 300 ms under the sanitizers; 31-101 ms measured),
  // where the silent nodes' io_timeout is 3 s.
  EXPECT_LT(took, kStopBound);
  EXPECT_EQ(p.out().find("ran"), std::string::npos);
}

// Item 5: every host with the same `value`. Before: A renewed B's lease after the key was
// lost, both children ran ~7.5 s, and A's release deleted B's lease.
TEST_F(TaskFaults, SharedValueStillMeansUniqueHolders) {
  RedisServer redis;
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.extra_redis = "value = \"shared\"\n";
  auto cfg = config(spec, {redis.address()});
  const std::string marks = dir_.path() + "/marks";
  TaskProcess a(dir_.path(), "a", task(cfg, "echo A >> " + marks + "; exec sleep 60"));
  ASSERT_TRUE(wait_until([&] { return read_file(marks) == "A\n"; }, 10s)) << a.err();
  const std::string holder_a = redis.cli({"GET", test_key()});
  EXPECT_EQ(holder_a.rfind("shared:" + std::to_string(a.pid()) + ":", 0), 0u) << holder_a;
  redis.cli({"DEL", test_key()});  // an operator's mistake, or a node restarted empty
  TaskProcess b(dir_.path(), "b", task(cfg, "echo B >> " + marks + "; exec sleep 60"));
  ASSERT_TRUE(b.wait_for_log("child started", 10s)) << b.err();
  const std::string holder_b = redis.cli({"GET", test_key()});
  EXPECT_NE(holder_a, holder_b);
  // A's next renewal finds the key is not its own: it stops its child.
  ASSERT_TRUE(a.wait_for_log("stopping child", 5s)) << a.err();
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
  EXPECT_EQ(redis.cli({"GET", test_key()}), holder_b) << "A released B's lease";
  b.signal(SIGTERM);
  EXPECT_EQ(b.wait_for(10s), 0) << b.err();
}

// Item 6: durations near overflow. Before: timeout = "5000000h" killed the child at once
// (124) and expire = "5000000h" made 14,601 attempts in 3 s.
TEST_F(TaskFaults, DurationsAboveTheirMaximumAreRefused) {
  struct Row {
    std::string redis, task, expect;
  };
  for (const Row& row : {
           Row{"", "timeout = \"5000000h\"\n", "task.timeout: expected a duration of at most 1 year"},
           Row{"", "timeout = 999999999999\n", "task.timeout: expected a duration of at most 1 year"},
           Row{"expire = \"5000000h\"\ncron = \"1s\"\n", "", "redis.expire: expected a lease TTL of at most 1 day"},
           Row{"expire = \"25h\"\ncron = \"1s\"\n", "", "redis.expire: expected a lease TTL of at most 1 day"},
           Row{"io_timeout = \"9000h\"\n", "", "redis.io_timeout: expected a duration of at most 1 year"},
           Row{"io_timeout = \"10s\"\n", "", "redis.io_timeout: expected a timeout shorter than redis.expire"},
           Row{"", "restart_window = \"8761h\"\n", "task.restart_window: expected a duration of at most 1 year"},
       }) {
    const auto path = dir_.write("d" + std::to_string(++configs_) + ".toml",
                                 "[redis]\nhost = \"127.0.0.1:6379\"\nkey = \"k\"\n" + row.redis +
                                     "[task]\ncommand = [\"true\"]\n" + row.task);
    auto r = run_task_binary({"validate", "--config", path}, 10s);
    EXPECT_EQ(r.code, 78) << row.redis << row.task << r.err;
    EXPECT_NE(r.err.find(row.expect), std::string::npos) << r.err;
  }
}

// Item 8: a leader whose command cannot be started. Before: it kept the lease forever
// (21 "cannot start" lines in 20 s, the standby never got it). A command that does not
// exist is refused before contending now (issue 20 item 6); one that exec refuses only
// when it is run (an executable file that is no program: ENOEXEC) still gets this far.
TEST_F(TaskFaults, BrokenLeaderStepsDownAndTheStandbyTakesOver) {
  RedisServer redis;
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.log_level = "info";
  spec.extra_task = "step_down_hold = \"30s\"\n";
  auto cfg = config(spec, {redis.address()});
  const std::string not_a_program = dir_.write("not-a-program", "neither ELF nor #!\n");
  ASSERT_EQ(::chmod(not_a_program.c_str(), 0755), 0);
  TaskProcess broken(dir_.path(), "broken", {"task", "--config", cfg, "--", not_a_program});
  ASSERT_TRUE(broken.wait_for_log("stepped down: cannot start the command", 10s)) << broken.err();
  const std::string marks = dir_.path() + "/marks";
  TaskProcess healthy(dir_.path(), "healthy", task(cfg, "echo up >> " + marks + "; exec sleep 60"));
  ASSERT_TRUE(wait_until([&] { return read_file(marks) == "up\n"; }, 5s)) << healthy.err();
  StormMeter meter({&redis}, {err_path("broken"), err_path("healthy")}, 2);
  print(meter.measure(1s), "broken leader stepped down");
  EXPECT_EQ(count_lines(broken.err(), "cannot start"), 2u)  // the error and the step-down
      << broken.err();
  healthy.signal(SIGTERM);
  broken.signal(SIGTERM);
  EXPECT_EQ(healthy.wait_for(10s), 0);
  EXPECT_EQ(broken.wait_for(10s), 0);
}

// Item 8: a crash loop with restart_delay = "0ms". Before: ~930 forks/s forever.
TEST_F(TaskFaults, CrashLoopRestartsWithAGrowingDelayThenStepsDown) {
  RedisServer redis;
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.log_level = "info";
  spec.extra_task = "restart = \"always\"\nrestart_delay = \"0ms\"\nrestart_limit = 4\nrestart_window = \"1m\"\n"
                    "step_down_hold = \"30s\"\n";
  auto cfg = config(spec, {redis.address()});
  const std::string runs = dir_.path() + "/runs";
  TaskProcess p(dir_.path(), "loop", task(cfg, "date +%s%N >> " + runs + "; exit 1"));
  ASSERT_TRUE(p.wait_for_log("stepped down: the child exited 5 times", 10s)) << p.err();
  const auto times = split_lines(read_file(runs));
  ASSERT_EQ(times.size(), 5u) << p.err();  // restart_limit restarts, then the step-down
  // Delays 0, 200, 400, 800 ms: each gap at least the one before.
  for (std::size_t i = 2; i < times.size(); ++i) {
    const long long gap = std::stoll(times[i]) - std::stoll(times[i - 1]);
    const long long before = std::stoll(times[i - 1]) - std::stoll(times[i - 2]);
    EXPECT_GE(gap, before) << "run " << i;
  }
  EXPECT_NE(p.err().find("child exited status=1"), std::string::npos);
  EXPECT_NE(p.err().find(" warn  [daemon] child exited status=1"), std::string::npos) << "a failure is a warning";
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(split_lines(read_file(runs)).size(), 5u) << "no run during the hold";
  EXPECT_EQ(redis.cli({"EXISTS", test_key()}), "0") << "released when stepping down";
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(10s), 0) << p.err();
}

// Item 9: one node down, a leader and a waiter at info. Before: every attempt logged
// (47 warn lines in 20 s), or a leader said nothing at all about a dead node.
TEST_F(TaskFaults, ADeadNodeIsLoggedOnceThenSummarised) {
  RedisServer a, b, c;
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.log_level = "info";
  auto cfg = config(spec, addresses({&a, &b, &c}));
  TaskProcess leader(dir_.path(), "leader", task(cfg, "exec sleep 60"));
  ASSERT_TRUE(leader.wait_for_log("child started", 10s)) << leader.err();
  TaskProcess waiter(dir_.path(), "waiter", task(cfg, "exec sleep 60"));
  ASSERT_TRUE(waiter.wait_for_log("contending", 5s));
  ASSERT_TRUE(wait_renewed(c, test_key(), 5s)) << leader.err();  // ours there, as the leader knows
  c.kill();
  ASSERT_TRUE(leader.wait_for_log("renew: redis " + c.address(), 5s)) << leader.err();
  StormMeter meter({&a, &b, &c}, {err_path("leader"), err_path("waiter")}, 2);
  print(meter.measure(3s), "one node down");
  EXPECT_EQ(count_lines(leader.err(), " warn "), 1u) << leader.err();
  EXPECT_LE(count_lines(waiter.err(), " warn "), 1u) << waiter.err();
  c.start();  // same port, empty: it answers again, without our key
  ASSERT_TRUE(leader.wait_for_log("renew: " + c.address() + " recovered after", 10s)) << leader.err();
  ASSERT_TRUE(leader.wait_for_log(c.address() + ": the lease was gone from this node", 10s)) << leader.err();
  // ... and the renewal set it there again: the lease stands on all three nodes.
  EXPECT_EQ(c.cli({"GET", test_key()}), a.cli({"GET", test_key()}));
}

// Item 11: the variable named by password_env does not reach the child.
// Attack round 10, #7: a foreign 10 MB value in the key became one 10 MB log line (and a
// 10 MB line of `status`). Holder ids are shown cut, with their size.
TEST_F(TaskFaults, AHugeForeignValueInTheKeyIsShownCut) {
  RedisServer redis;
  redis.cli({"SET", test_key(), std::string(100'000, 'v'), "PX", "60000"});
  auto cfg = config({}, {redis.address()});
  auto r = run_task_binary({"task", "--config", cfg, "--no-wait", "--", "true"}, 10s);
  EXPECT_EQ(r.code, 75) << r.err.substr(0, 2000);
  auto st = run_task_binary({"status", "--config", cfg}, 10s);
  for (const auto* text : {&r.err, &st.out}) {
    for (const auto& line : split_lines(*text)) EXPECT_LT(line.size(), 1000u) << line.substr(0, 300);
  }
  EXPECT_NE(st.out.find("(100000 bytes)"), std::string::npos) << st.out.substr(0, 2000);
}

// Attack (issue 12's last round): a key set by hand without a TTL blocked the service
// for ever with one quiet info line, and `status` said "ttl -1 ms". Now a warning, once,
// that it will not free itself, and `status` says "no expiry".
TEST_F(TaskFaults, AForeignKeyWithoutExpiryIsSaidLoudlyOnce) {
  RedisServer redis;
  redis.cli({"SET", test_key(), "intruder"});
  ConfigSpec spec;
  spec.extra_redis = "monitor_try_all = false\nretries_count = 3\n";
  spec.log_level = "info";
  auto cfg = config(spec, {redis.address()});
  auto r = run_task_binary(task(cfg, "true"), 10s);
  EXPECT_EQ(r.code, 75) << r.err;
  EXPECT_EQ(count_lines(r.err, "held by intruder without an expiry (set by hand?)"), 1u) << r.err;
  EXPECT_EQ(count_lines(r.err, " warn "), 1u) << r.err;
  auto st = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_NE(st.out.find("held by intruder (1/1 nodes, quorum 1), no expiry"), std::string::npos) << st.out;
  EXPECT_EQ(redis.cli({"GET", test_key()}), "intruder");
}

TEST_F(TaskFaults, PasswordEnvNeverReachesTheChild) {
  RedisServer redis(with_password("Pw-In-Env-91"));
  ConfigSpec spec;
  spec.extra_redis = "password_env = \"RGT_REDIS_PW\"\n";
  auto cfg = config(spec, {redis.address()});
  auto r = run_task_binary(task(cfg, "env"), 10s, {{"RGT_REDIS_PW", "Pw-In-Env-91"}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("RGT_REDIS_PW"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Pw-In-Env-91"), std::string::npos);
  EXPECT_EQ(r.err.find("Pw-In-Env-91"), std::string::npos);
  EXPECT_NE(r.out.find("REDISGO_TASK_TOKEN="), std::string::npos);
  // Handed over on purpose through [task] env, it is there.
  spec.extra_task = "env = { RGT_REDIS_PW = \"given-on-purpose\" }\n";
  cfg = config(spec, {redis.address()});
  r = run_task_binary(task(cfg, "env"), 10s, {{"RGT_REDIS_PW", "Pw-In-Env-91"}});
  EXPECT_NE(r.out.find("RGT_REDIS_PW=given-on-purpose"), std::string::npos) << r.out;
}

// Issue 20: rotating the Redis password needed a restart of every daemon: the file was
// read once, at start, and every new connection was refused (WRONGPASS) from then on.
// Now a refused AUTH reads the file again (at most once a second): the daemon follows the
// rotation in either order, Redis first or the file first, and keeps its lease.
TEST_F(TaskFaults, ARotatedPasswordFileIsReadAgainWithoutARestart) {
  RedisServer redis(with_password("Old-Pw-61"));
  const std::string pass = dir_.write("redis.pass", "Old-Pw-61\n");
  ASSERT_EQ(::chmod(pass.c_str(), 0600), 0);
  auto as_admin = [&](const std::string& pw, std::vector<std::string> args) {
    args.insert(args.begin(), {"-a", pw, "--no-auth-warning"});
    return redis.cli(args);
  };
  // An editor's way: a new file renamed over the old one.
  auto write_file = [&](const std::string& pw) {
    const std::string tmp = dir_.write("redis.pass.new", pw + "\n");
    ASSERT_EQ(::chmod(tmp.c_str(), 0600), 0);
    ASSERT_EQ(::rename(tmp.c_str(), pass.c_str()), 0);
  };
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.expire = "3s";
  spec.cron = "300ms";
  spec.kill_grace = "300ms";
  spec.extra_redis = "password_file = \"" + pass + "\"\n";
  auto cfg = config(spec, {redis.address()});
  const std::string marks = dir_.path() + "/marks";
  TaskProcess p(dir_.path(), "rotate", task(cfg, "echo up >> " + marks + "; exec sleep 60"));
  ASSERT_TRUE(wait_until([&] { return read_file(marks) == "up\n"; }, 10s)) << p.err();
  const std::string holder = as_admin("Old-Pw-61", {"GET", test_key()});
  ASSERT_FALSE(holder.empty());

  // Redis first: its clients are cut (a failover or a restart would do the same), so the
  // renewals open new connections, which Redis refuses until the file has the new one.
  as_admin("Old-Pw-61", {"CONFIG", "SET", "requirepass", "New-Pw-62"});
  as_admin("New-Pw-62", {"CLIENT", "KILL", "TYPE", "normal"});
  ASSERT_TRUE(p.wait_for_log("WRONGPASS", 5s)) << p.err();
  write_file("New-Pw-62");
  ASSERT_TRUE(p.wait_for_log("changed and was re-read", 5s)) << p.err();
  auto pttl = [&](const std::string& pw) {
    try {
      return std::stoll(as_admin(pw, {"PTTL", test_key()}));
    } catch (const std::exception&) {
      return -3LL;
    }
  };
  ASSERT_TRUE(wait_until([&] { return pttl("New-Pw-62") > 2500; }, 5s, 50ms)) << "renewed under the new password\n"
                                                                               << p.err();
  EXPECT_EQ(as_admin("New-Pw-62", {"GET", test_key()}), holder) << "the same daemon holds it, no restart";
  EXPECT_TRUE(p.running());

  // The file first: nothing happens until Redis changes too; then the first refused
  // connection reads it and retries at once, so not one renewal fails.
  const auto renewed_before = count_lines(p.err(), "lease renewed");
  const auto phase_two = p.err().size();
  write_file("Pw-63");
  std::this_thread::sleep_for(1100ms);  // past the one-read-a-second bound of the first change
  as_admin("New-Pw-62", {"ACL", "SETUSER", "default", "resetpass", ">Pw-63"});
  as_admin("Pw-63", {"CLIENT", "KILL", "TYPE", "normal"});
  ASSERT_TRUE(wait_until([&] { return count_lines(p.err(), "changed and was re-read") == 2; }, 5s)) << p.err();
  std::this_thread::sleep_for(1s);  // three more renewals
  EXPECT_GE(count_lines(p.err(), "lease renewed"), renewed_before + 3) << p.err();
  EXPECT_EQ(as_admin("Pw-63", {"GET", test_key()}), holder);
  EXPECT_EQ(p.err().find("stopping child", phase_two), std::string::npos) << p.err();
  EXPECT_EQ(p.err().find("WRONGPASS", phase_two), std::string::npos) << "no renewal was refused\n" << p.err();

  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(10s), 0) << p.err();
  const std::string err = p.err();
  EXPECT_EQ(count_lines(err, "changed and was re-read"), 2u) << "once per change: " << err;
  for (const char* secret : {"Old-Pw-61", "New-Pw-62", "Pw-63"}) {
    EXPECT_EQ(err.find(secret), std::string::npos) << secret << " in the log";
  }
  EXPECT_EQ(as_admin("Pw-63", {"EXISTS", test_key()}), "0") << "released under the new password";
}

// Issue 20: under systemd the recommended password is a credential (LoadCredential=), read
// from $CREDENTIALS_DIRECTORY, which systemd sets (here, the test does), not from the
// environment that `systemctl show` prints.
TEST_F(TaskFaults, ASystemdCredentialIsThePassword) {
  RedisServer redis(with_password("Pw-In-Credential-93"));
  TempDir credentials;
  const std::string cred = credentials.write("redisgo_task.redis-password", "Pw-In-Credential-93\n");
  ASSERT_EQ(::chmod(cred.c_str(), 0400), 0);
  ConfigSpec spec;
  spec.extra_redis = "password_credential = \"redisgo_task.redis-password\"\n";
  auto cfg = config(spec, {redis.address()});
  auto r = run_task_binary(task(cfg, "echo ran"), 10s, {{"CREDENTIALS_DIRECTORY", credentials.path()}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "ran\n");
  EXPECT_EQ((r.out + r.err).find("Pw-In-Credential-93"), std::string::npos);
  auto v = run_task_binary({"validate", "--config", cfg}, 10s, {{"CREDENTIALS_DIRECTORY", credentials.path()}});
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("password_credential = \"redisgo_task.redis-password\"  # password = \"********\", from " +
                       cred),
            std::string::npos)
      << v.out;
  // Without it the credential is looked for where systemd keeps them, and the error says so.
  auto none = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_EQ(none.code, 78) << none.err;
  EXPECT_NE(none.err.find("$CREDENTIALS_DIRECTORY is not set"), std::string::npos) << none.err;
  EXPECT_EQ(none.err.find("nothing was started"), std::string::npos) << none.err;
}

namespace {
/// The pids whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const std::string stat = read_file(e.path().string() + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return out;
}
}  // namespace

// Attack round (issue 20): the keeper's /proc/<pid>/environ still held the password_env
// value (the child's was clean). Once loaded, the value is erased from the daemon's own
// environment block, so neither it nor the keeper it forks shows it.
TEST_F(TaskFaults, PasswordEnvIsNotLeftInTheDaemonsOrTheKeepersEnvironment) {
  RedisServer redis(with_password("Pw-In-Env-92"));
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.extra_redis = "password_env = \"RGT_REDIS_PW\"\n";
  auto cfg = config(spec, {redis.address()});
  TaskProcess p(dir_.path(), "scrub", task(cfg, "exec sleep 30"), {{"RGT_REDIS_PW", "Pw-In-Env-92"}});
  ASSERT_TRUE(p.wait_for_log("child started", 10s)) << p.err();
  std::vector<pid_t> tree{p.pid()};
  for (std::size_t i = 0; i < tree.size() && tree.size() < 16; ++i) {
    for (pid_t c : children_of(tree[i])) tree.push_back(c);
  }
  EXPECT_GE(tree.size(), 3u) << "daemon, keeper, child";
  for (pid_t pid : tree) {
    const std::string env = read_file("/proc/" + std::to_string(pid) + "/environ");
    EXPECT_EQ(env.find("Pw-In-Env-92"), std::string::npos) << "pid " << pid;
  }
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(10s), 0) << p.err();
}

// Item 11: the SIGKILL line says how long the child really had.
TEST_F(TaskFaults, EscalationReportsTheTimeTheChildWasGiven) {
  RedisServer redis;
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.kill_grace = "300ms";
  auto cfg = config(spec, {redis.address()});
  TaskProcess p(dir_.path(), "stubborn", task(cfg, "trap '' TERM; echo up; exec sleep 60"));
  ASSERT_TRUE(p.wait_for_log("child started", 10s)) << p.err();
  // "up" is written once the shell has set its trap.
  ASSERT_TRUE(wait_until([&] { return p.out().find("up") != std::string::npos; }, 5s)) << p.err();
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(10s), 0) << p.err();
  const auto err = p.err();
  const auto at = err.find("still running ");
  ASSERT_NE(at, std::string::npos) << err;
  // format_duration's text ("300ms", "1.2s" when a loaded machine ran the tick late).
  const auto rest = err.substr(at + std::string("still running ").size());
  const auto given = redisgo::parse_duration(rest.substr(0, rest.find(' ')));
  ASSERT_TRUE(given.has_value()) << err;
  EXPECT_GE(given->count(), 290) << err;  // not "0 ms after SIGTERM"
}

}  // namespace

namespace {

// Found by the soak's fault list: only the daemon is stopped (SIGSTOP, a debugger), its
// child runs on. The keeper holds the kill deadline and ends the child in time anyway.
TEST_F(TaskFaults, StoppedDaemonCannotLetItsChildOutliveTheLease) {
  RedisServer redis;
  auto cfg = config(fault_config_spec(), {redis.address()});
  const std::string pids = dir_.path() + "/pids";
  TaskProcess leader(dir_.path(), "leader",
                     task(cfg, "echo \"$$ $REDISGO_TASK_TOKEN\" >> " + pids + "; exec sleep 60"));
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(pids)).size() == 1; }, 10s)) << leader.err();
  ASSERT_TRUE(leader.wait_for_log("lease renewed", 5s)) << leader.err();
  const auto child = parse_child_record(split_lines(read_file(pids))[0]);
  const auto stopped_at = std::chrono::steady_clock::now();
  leader.signal(SIGSTOP);
  ASSERT_TRUE(wait_until([&] { return !process_alive(child.pid); }, 5s));
  const auto dead_after = std::chrono::steady_clock::now() - stopped_at;
  std::cout << "child of a stopped daemon dead " << std::chrono::duration_cast<std::chrono::milliseconds>(dead_after).count()
            << " ms after the stop (TTL 1500 ms)\n";
  // The last confirmed renewal was before the stop, so the lease ends within expire (1.5 s)
  // of it: the keeper's SIGKILL at its deadline, kill_grace after its kill_signal, must come
  // first. Measured 1.006 s under ASan: the deadline is expire x (1 - drift) from the last
  // renewal's send, and the stop came up to one cron (300 ms) after that.
  EXPECT_LT(dead_after, 1500ms);
  // A standby may take over once the lease has expired; only one child at a time.
  TaskProcess standby(dir_.path(), "standby",
                      task(cfg, "echo \"$$ $REDISGO_TASK_TOKEN\" >> " + pids + "; exec sleep 60"));
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(pids)).size() == 2; }, 10s)) << standby.err();
  EXPECT_GT(parse_child_record(split_lines(read_file(pids))[1]).token, child.token);
  ::kill(leader.pid(), SIGCONT);
  ASSERT_TRUE(leader.wait_for_log("child exited", 5s)) << leader.err();
  leader.signal(SIGTERM);
  standby.signal(SIGTERM);
  EXPECT_EQ(leader.wait_for(10s), 0) << leader.err();
  EXPECT_EQ(standby.wait_for(10s), 0) << standby.err();
}

}  // namespace

// --- Found by attacking the fault-proof core (round 8); each failed before its fix. ---

namespace {

// Round 8, #1: killing the keeper (alone) left the job's grandchildren running while the
// daemon released at once: a 4.4 s overlap.
TEST_F(TaskFaults, AKilledKeeperLeavesNothingRunningWhenTheLeaseIsReleased) {
  RedisServer redis;
  auto cfg = config({}, {redis.address()});
  const std::string pids = dir_.path() + "/pids";
  TaskProcess a(dir_.path(), "a",
                task(cfg, "sleep 37 & echo $! >> " + pids + "; setsid sleep 38 & echo $! >> " + pids + "; wait"));
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(pids)).size() == 2; }, 10s)) << a.err();
  const pid_t keeper = keeper_of(a.pid());
  ASSERT_GT(keeper, 0);
  // Named apart from the daemon: killall redisgo_task / pkill -f redisgo_task miss it.
  EXPECT_EQ(read_file("/proc/" + std::to_string(keeper) + "/cmdline").find("redisgo_task"), std::string::npos);
  ::kill(keeper, SIGKILL);
  ASSERT_TRUE(a.wait_for(10s).has_value()) << a.err();
  // By the time the daemon released and exited, every process of the job was dead.
  for (const auto& l : split_lines(read_file(pids))) EXPECT_FALSE(process_alive(std::stoi(l))) << l;
  EXPECT_NE(a.err().find("released"), std::string::npos) << a.err();
}

// Round 8, #2: a pause between the acquisition and the spawn started the child a second
// after its lease ran out, while another holder ran. strace stalls the daemon's fork of
// the keeper for 3 s; the keeper must then refuse to start the job.
TEST_F(TaskFaults, APauseBetweenLeaseAndChildStartsNoStaleChild) {
  ASSERT_EQ(::access("/usr/bin/strace", X_OK), 0) << "strace missing: run scripts/setup";
  RedisServer redis;
  auto cfg = config({}, {redis.address()});  // expire 2s
  const std::string log = dir_.path() + "/ran";
  std::vector<std::string> argv{"/usr/bin/strace", "-o", "/dev/null", "-f", "-e", "trace=clone",
                                "-e", "inject=clone:delay_enter=3000000:when=1", task_binary()};
  for (const auto& a : task(cfg, "echo A >> " + log)) argv.push_back(a);
  // LeakSanitizer cannot run under ptrace: in the sanitizer build it would fail the exit.
  std::string cmd = "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" ";
  for (const auto& a : argv) cmd += "'" + a + "' ";
  const auto r = std::system((cmd + "2> " + dir_.path() + "/a.err").c_str());
  const std::string err = read_file(dir_.path() + "/a.err");
  EXPECT_EQ(WEXITSTATUS(r), 75) << err;
  EXPECT_EQ(read_file(log), "") << "a child ran on a lease that could have ended: " << err;
  EXPECT_NE(err.find("not started"), std::string::npos) << err;
}

// Round 8, #6: with the keeper stopped, SIGTERM and SIGKILL never reached the job and the
// daemon hung, the child outliving a lost lease by seconds.
TEST_F(TaskFaults, AStoppedKeeperCannotKeepAChildAlivePastALostLease) {
  RedisServer redis;
  auto cfg = config(fault_config_spec(), {redis.address()});
  const std::string pids = dir_.path() + "/pids";
  TaskProcess a(dir_.path(), "a", task(cfg, "echo $$ >> " + pids + "; exec sleep 60"));
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(pids)).size() == 1; }, 10s)) << a.err();
  const pid_t child = std::stoi(split_lines(read_file(pids))[0]);
  const pid_t keeper = keeper_of(a.pid());
  ASSERT_GT(keeper, 0);
  ::kill(keeper, SIGSTOP);
  const auto lost = std::chrono::steady_clock::now();
  redis.cli({"SET", test_key(), "someone-else", "PX", "60000"});  // the lease is lost
  ASSERT_TRUE(wait_until([&] { return !process_alive(child); }, 5s)) << a.err();
  const auto took = std::chrono::steady_clock::now() - lost;
  std::cout << "child of a stopped keeper dead " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms after the lease was lost\n";
  // cron (300 ms) + kill_grace (400 ms) + the daemon's own SIGKILL: 0.7 s at most, 282 ms
  // measured under ASan; the bound is the TTL (1.5 s), before which the child must be dead.
  EXPECT_LT(took, 1500ms);
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
}

// Round 8, #13: SIGALRM, SIGPWR, SIGIO, SIGXCPU ... killed the daemon without a release;
// SIGTSTP stopped it with its child running on.
TEST_F(TaskFaults, StraySignalsAreForwardedNotFatal) {
  RedisServer redis;
  ConfigSpec spec;
  spec.mode = "supervise";
  auto cfg = config(spec, {redis.address()});
  const std::string got = dir_.path() + "/got";
  std::string traps;
  for (const char* s : {"ALRM", "PWR", "IO", "XCPU", "VTALRM", "PROF", "XFSZ", "URG", "WINCH"}) {
    traps += "trap 'echo " + std::string(s) + " >> " + got + "' " + s + "; ";
  }
  TaskProcess a(dir_.path(), "a", task(cfg, traps + "echo ready >> " + got + "; while :; do sleep 0.05; done"));
  ASSERT_TRUE(wait_until([&] { return read_file(got) == "ready\n"; }, 10s)) << a.err();
  for (int sig : {SIGALRM, SIGPWR, SIGIO, SIGXCPU, SIGVTALRM, SIGPROF, SIGXFSZ, SIGURG, SIGWINCH}) {
    const std::size_t before = split_lines(read_file(got)).size();
    a.signal(sig);
    EXPECT_TRUE(wait_until([&] { return split_lines(read_file(got)).size() > before; }, 2s)) << sig;
    EXPECT_TRUE(a.running()) << "signal " << sig << " killed the daemon";
  }
  // ^Z stops the child, not the daemon; fg (SIGCONT) continues it.
  a.signal(SIGTSTP);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(read_file("/proc/" + std::to_string(a.pid()) + "/stat").find(") T "), std::string::npos) << "daemon stopped";
  a.signal(SIGCONT);
  a.signal(SIGTERM);
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
  EXPECT_EQ(redis.cli({"EXISTS", test_key()}), "0");
}

}  // namespace

namespace {

// Round 8, #5 and #8: crash loops with configurations validate accepted spun (5,058
// commands/s and 2,811 log lines/s with step_down_hold = "0s").
TEST_F(TaskFaults, ACrashLoopWithNoHoldIsStillPaced) {
  RedisServer redis;
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.log_level = "info";
  spec.expire = "1s";
  spec.cron = "200ms";
  spec.kill_grace = "200ms";
  spec.extra_task = "restart = \"always\"\nrestart_delay = \"0s\"\nrestart_limit = 1\nstep_down_hold = \"0s\"\n";
  auto cfg = config(spec, {redis.address()});
  const std::string runs = dir_.path() + "/runs";
  TaskProcess p(dir_.path(), "loop", task(cfg, "echo x >> " + runs + "; exit 1"));
  ASSERT_TRUE(p.wait_for_log("stepped down", 10s)) << p.err();
  StormMeter meter({&redis}, {err_path("loop")}, 1);
  print(meter.measure(4s), "crash loop, restart_limit 1, step_down_hold 0s");
  EXPECT_LE(split_lines(read_file(runs)).size(), 8u) << "the holds must grow";
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(10s), 0) << p.err();
}

}  // namespace

namespace {

// Round 8, #7: a connection the server dropped while idle (CLIENT KILL, its `timeout`, a
// load balancer) failed the release with no retry: the standby waited the whole TTL.
TEST_F(TaskFaults, AReleaseOverAConnectionDroppedWhileIdleStillWakesTheStandby) {
  RedisServer redis;
  ConfigSpec spec;
  spec.expire = "10s";
  spec.cron = "2s";
  spec.kill_grace = "1s";
  auto cfg = config(spec, {redis.address()});
  const std::string gate = dir_.path() + "/gate";
  const std::string marks = dir_.path() + "/marks";
  TaskProcess a(dir_.path(), "a", task(cfg, "while [ ! -e " + gate + " ]; do sleep 0.02; done"));
  ASSERT_TRUE(a.wait_for_log("lease renewed", 10s) || a.wait_for_log("child started", 1s)) << a.err();
  TaskProcess b(dir_.path(), "b", task(cfg, "echo B >> " + marks));
  ASSERT_TRUE(b.wait_for_log("contending", 5s));
  std::this_thread::sleep_for(300ms);
  redis.cli({"CLIENT", "KILL", "TYPE", "normal"});  // every idle connection of both daemons
  std::this_thread::sleep_for(100ms);
  const auto released = std::chrono::steady_clock::now();
  std::ofstream(gate).put('x');
  ASSERT_TRUE(wait_until([&] { return read_file(marks) == "B\n"; }, 15s)) << a.err() << b.err();
  const auto took = std::chrono::steady_clock::now() - released;
  std::cout << "standby ran " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms after the holder's job ended (TTL 10 s)\n";
  // Woken by the release over reconnected links (47 ms measured under ASan), not left to the
  // TTL (10 s) by a subscription Redis had closed: 2 s is far from both.
  EXPECT_LT(took, 2s);
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
  EXPECT_EQ(a.err().find("release deleted nothing"), std::string::npos) << a.err();
}

// Round 8, #10: a flood of release messages drove a standby to ~393 commands/s.
TEST_F(TaskFaults, AFloodOfReleaseMessagesDoesNotDriveAStandby) {
  RedisServer redis;
  ConfigSpec spec;
  spec.extra_redis = "fair = false\n";  // the shared release channel (the line's: task_fair_line_test)
  spec.mode = "supervise";
  spec.log_level = "info";
  auto cfg = config(spec, {redis.address()});
  redis.cli({"SET", test_key(), "someone-else", "PX", "600000"});
  TaskProcess s(dir_.path(), "standby", task(cfg, "exec sleep 60"));
  ASSERT_TRUE(s.wait_for_log("contending", 5s));
  // Subscribed, and so sleeping until the key's TTL.
  ASSERT_TRUE(wait_until([&] { return subscribers(redis, release_channel()) == 1; }, 5s)) << s.err();
  std::atomic<bool> stop{false};
  std::thread flood([&] {
    const std::string script = "for i in $(seq 1 200); do echo PUBLISH '" + release_channel() + "' x; done | " +
                               "timeout 5 redis-cli -p " + std::to_string(redis.port()) + " > /dev/null";
    while (!stop) std::system(script.c_str());
  });
  StormMeter meter({&redis}, {err_path("standby")}, 1);
  meter.start();
  std::this_thread::sleep_for(2s);
  auto f = meter.stop();
  stop = true;
  flood.join();
  print(f, "standby under a PUBLISH flood (the flood's own PUBLISHes included)");
  // The flood's PUBLISH commands are counted too; the standby's own part is its EVALSHA
  // attempts, at most one per 100 ms: 4 commands each.
  const auto info = redis.cli({"INFO", "commandstats"});
  const auto at = info.find("cmdstat_evalsha:calls=");
  const long evalsha = at == std::string::npos ? 0 : std::stol(info.substr(at + 22));
  EXPECT_LE(evalsha, 30) << "attempts driven by the flood";
  s.signal(SIGTERM);
  EXPECT_EQ(s.wait_for(10s), 0) << s.err();
}

// Round 8, #12: an ACL user without the release channel (Redis 7's default for a new
// user): the release's PUBLISH failed after its DEL, the daemon warned that nothing was
// deleted, and the refused SUBSCRIBE was never logged.
TEST_F(TaskFaults, AnAclUserWithoutTheChannelReleasesAndSaysWhyNobodyIsWoken) {
  RedisServer redis(with_acl_user("user jobs on >jobs-Pw ~* +@all resetchannels"));
  ConfigSpec spec;
  spec.extra_redis = "username = \"jobs\"\npassword_env = \"RGT_JOBS_PW\"\n";
  spec.log_level = "info";
  auto cfg = config(spec, {redis.address()});
  const std::map<std::string, std::string> env{{"RGT_JOBS_PW", "jobs-Pw"}};
  // 2 s: the holder still runs when B has started, also under a sanitizer on a loaded machine.
  TaskProcess a(dir_.path(), "a", task(cfg, "sleep 2"), env);
  ASSERT_TRUE(a.wait_for_log("child started", 10s)) << a.err();
  TaskProcess b(dir_.path(), "b", task(cfg, "true"), env);
  ASSERT_TRUE(b.wait_for_log("subscribe: redis", 5s)) << b.err();  // the refusal, logged
  EXPECT_NE(b.err().find("NOPERM"), std::string::npos) << b.err();
  EXPECT_EQ(a.wait_for(10s), 0) << a.err();
  EXPECT_EQ(a.err().find("release deleted nothing"), std::string::npos) << a.err();
  EXPECT_NE(a.err().find("released key="), std::string::npos) << a.err();
  EXPECT_NE(a.err().find("ACL SETUSER"), std::string::npos) << a.err();
  EXPECT_EQ(b.wait_for(15s), 0) << b.err();  // still takes over, at the old lease's end at the latest
}

// Round 8, #18: retries_count = N made N + 1 attempts.
TEST_F(TaskFaults, RetriesCountIsTheNumberOfRequests) {
  RedisServer redis;
  ConfigSpec spec;
  spec.extra_redis = "monitor_try_all = false\nretries_count = 3\n";
  spec.backoff = "strategy = \"constant\"\ninitial = \"150ms\"\nmax = \"150ms\"\njitter = \"none\"\n";
  auto cfg = config(spec, {redis.address()});
  redis.cli({"SET", test_key(), "someone-else", "PX", "600000"});
  redis.cli({"CONFIG", "RESETSTAT"});
  auto r = run_task_binary(task(cfg, "echo ran"), 10s);
  EXPECT_EQ(r.code, 75) << r.err;
  const auto info = redis.cli({"INFO", "commandstats"});
  long calls = 0;
  for (const char* cmd : {"cmdstat_eval:calls=", "cmdstat_evalsha:calls="}) {
    if (auto at = info.find(cmd); at != std::string::npos) calls += std::stol(info.substr(at + std::strlen(cmd)));
  }
  // Less the one look for daemons of a larger limit (a script of one EXISTS) after the first miss.
  if (auto at = info.find("cmdstat_exists:calls="); at != std::string::npos) {
    calls -= std::stol(info.substr(at + std::strlen("cmdstat_exists:calls=")));
  }
  EXPECT_EQ(calls, 3) << info;
}

// Round 8, #19: a fence counter of the wrong type failed the acquire script after its SET:
// our own key was left behind for a TTL and the run ended "busy".
TEST_F(TaskFaults, ACorruptFenceCounterLeavesNothingBehindAndIsNamed) {
  RedisServer redis;
  ConfigSpec spec;
  spec.extra_redis = "monitor_try_all = false\nretries_count = 1\n";
  auto cfg = config(spec, {redis.address()});
  redis.cli({"LPUSH", "{" + test_key() + "}:fence", "junk"});
  auto r = run_task_binary(task(cfg, "echo ran"), 10s);
  EXPECT_EQ(r.code, 69) << r.err;  // nobody can run the job: loud, not "busy"
  EXPECT_EQ(redis.cli({"EXISTS", test_key()}), "0") << "the half-done acquisition was undone";
  EXPECT_NE(r.err.find("fence counter"), std::string::npos) << r.err;
  // The node was reached and refused nothing: its error is named as an error.
  EXPECT_NE(r.err.find("1 answered with an error"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("refused"), std::string::npos) << r.err;
}

// Round 8, #17: with WatchdogSec of a second or less, the pings paused for a second while
// an acquisition waited on a slow node, and systemd would have killed a healthy daemon.
TEST_F(TaskFaults, TheWatchdogKeepsPingingWhileANodeIsSilent) {
  FakeServer silent;
  ConfigSpec spec;
  spec.expire = "10s";
  spec.cron = "2s";
  spec.io_timeout = "3s";
  auto cfg = config(spec, {silent.address()});
  NotifySocket sock;
  TaskProcess p(dir_.path(), "wd", task(cfg, "true"),
                {{"NOTIFY_SOCKET", sock.address()}, {"WATCHDOG_USEC", "400000"}});
  ASSERT_TRUE(sock.wait_for("READY=1", 5s));
  sock.recv_all(2500ms);
  std::vector<std::chrono::steady_clock::time_point> pings;
  for (const auto& d : sock.history()) {
    if (d.text == "WATCHDOG=1") pings.push_back(d.at);
  }
  ASSERT_GE(pings.size(), 5u);
  std::chrono::steady_clock::duration worst{};
  for (std::size_t i = 1; i < pings.size(); ++i) worst = std::max(worst, pings[i] - pings[i - 1]);
  std::cout << "largest gap between watchdog pings: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(worst).count() << " ms (WatchdogSec 400 ms)\n";
  // A ping every half WatchdogSec (200 ms; the worst gap measured 201 ms under ASan), never
  // held up by the silent node (whose 3 s timeout would make a gap of seconds). 300 ms is
  // 100 ms over the period and 100 ms under WatchdogSec, past which systemd kills a healthy
  // daemon.
  EXPECT_LT(worst, 300ms);
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(5s), 75);
}

}  // namespace

namespace {

// Round 8, #14: with Redis closing idle connections (`timeout 1`) and a renewal every
// 1.5 s, every round failed on the dead connection and "recovered" on the next: two lines
// per round, forever.
TEST_F(TaskFaults, IdleConnectionsClosedByRedisCostNeitherFailuresNorLogLines) {
  RedisServer redis;
  redis.cli({"CONFIG", "SET", "timeout", "1"});
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.expire = "5s";
  spec.cron = "1500ms";
  spec.kill_grace = "1s";
  spec.log_level = "info";
  auto cfg = config(spec, {redis.address()});
  TaskProcess a(dir_.path(), "a", task(cfg, "exec sleep 60"));
  ASSERT_TRUE(a.wait_for_log("child started", 10s)) << a.err();
  TaskProcess b(dir_.path(), "b", task(cfg, "exec sleep 60"));
  ASSERT_TRUE(b.wait_for_log("contending", 5s));
  std::this_thread::sleep_for(6s);  // four renewals, each after Redis dropped the idle connection
  EXPECT_EQ(count_lines(a.err(), " warn "), 0u) << a.err();
  EXPECT_EQ(count_lines(b.err(), " warn "), 0u) << b.err();
  EXPECT_EQ(a.err().find("stopping child"), std::string::npos) << a.err();
  a.signal(SIGTERM);
  b.signal(SIGTERM);
  EXPECT_EQ(a.wait_for(10s), 0);
  EXPECT_EQ(b.wait_for(10s), 0);
}

}  // namespace

}  // namespace task_faults_test
