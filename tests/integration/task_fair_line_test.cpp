// The waiting line (docs/DESIGN.md "The waiting line", invariant 11) end to end, against
// real redis-servers: first come first served, one wake per release, a dead or frozen
// waiter skipped, leaving at once, --no-wait, fair = false. Each job logs its interval
// and its daemon's name; every test checks exclusion and measures the storm bounds.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_server.h"
#include "support/storm_meter.h"
#include "support/task_process.h"

namespace task_fair_line_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

struct Interval {
  long long start = 0, end = 0;  // ns; end 0 while it runs
  std::string name;
};

/// The intervals of a log of "start <ns> <name>" / "end <ns> <name>" lines, in start order.
std::vector<Interval> intervals(const std::string& text) {
  std::vector<Interval> out;
  std::map<std::string, std::size_t> open;
  for (const auto& line : split_lines(text)) {
    std::istringstream in(line);
    std::string what, name;
    long long ns = 0;
    if (!(in >> what >> ns >> name)) continue;
    if (what == "start") {
      open[name] = out.size();
      out.push_back({ns, 0, name});
    } else if (what == "end" && open.count(name)) {
      out[open[name]].end = ns;
      open.erase(name);
    }
  }
  return out;
}

/// No two intervals overlap (a running one counts to +inf).
void expect_no_overlap(const std::vector<Interval>& v) {
  for (std::size_t i = 1; i < v.size(); ++i) {
    const long long prev_end = v[i - 1].end == 0 ? (1LL << 62) : v[i - 1].end;
    EXPECT_GE(v[i].start, prev_end) << v[i - 1].name << " and " << v[i].name << " ran at once";
  }
}

class FairLine : public ::testing::Test {
 protected:
  std::string config(const std::string& mode = "oneshot",
                     const std::string& extra_redis = "", const std::string& extra_task = "") {
    ConfigSpec s;
    s.nodes = "host = \"" + server_.address() + "\"";
    s.key = key_;
    s.expire = "3s";
    s.cron = "600ms";
    s.kill_grace = "300ms";
    s.io_timeout = "250ms";
    s.mode = mode;
    s.extra_redis = extra_redis;
    s.extra_task = extra_task;
    s.log_level = "debug";
    return dir_.write("cfg-" + std::to_string(++configs_) + ".toml", make_config(s));
  }
  /// Starts a daemon named `name` (its child sees NAME) with `config` plus the job.
  TaskProcess& start(const std::string& name, const std::string& cfg, const std::string& job_seconds,
                     const std::vector<std::string>& extra_args = {}) {
    std::vector<std::string> args{"task", "--config", cfg};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c",
                             "echo start $(date +%s%N) $NAME >> " + log_ + "; sleep " + job_seconds +
                                 "; echo end $(date +%s%N) $NAME >> " + log_});
    procs_.push_back(std::make_unique<TaskProcess>(dir_.path(), name, args, std::map<std::string, std::string>{{"NAME", name}}));
    logs_.push_back(dir_.path() + "/" + name + ".err");
    return *procs_.back();
  }
  long long line_length() const { return std::atoll(server_.cli({"ZCARD", "{" + key_ + "}:line"}).c_str()); }
  /// Waits until `n` waiters are in the line.
  bool line_reaches(long long n, std::chrono::milliseconds timeout = 10s) {
    return wait_until([&] { return line_length() == n; }, timeout);
  }
  /// A holder "A" whose job runs until end_holder(), then `waiters` (0.2 s jobs) joining the
  /// line one by one: procs_[1] is the line's head. (A timed job raced the joins: a slow start
  /// of a waiter under the sanitizers let it end before the line was whole.)
  bool holder_and_line(const std::string& cfg, std::initializer_list<const char*> waiters) {
    start("A", cfg, "0; while [ ! -e " + holder_gate_ + " ]; do sleep 0.02; done");
    if (!jobs_reach(1, 10s)) return false;
    long long n = 0;
    for (const char* w : waiters) {
      start(w, cfg, "0.2");
      if (!line_reaches(++n)) return false;
    }
    return true;
  }
  void end_holder() const { std::ofstream(holder_gate_).put('x'); }
  std::vector<Interval> jobs() const { return intervals(read_file(log_)); }
  bool jobs_reach(std::size_t n, std::chrono::milliseconds timeout) {
    return wait_until([&] { return jobs().size() >= n; }, timeout);
  }
  StormMeter meter(int daemons = 0) {
    return StormMeter({&server_}, logs_, daemons > 0 ? daemons : static_cast<int>(procs_.size()));
  }
  /// Ends a storm window of at least 3 s (a shorter one would read the few lines of a handover
  /// as a flood) and checks the bounds.
  static void expect_quiet(StormMeter& m, std::chrono::steady_clock::time_point began) {
    std::this_thread::sleep_for(std::max<std::chrono::steady_clock::duration>(0s, began + 3s - std::chrono::steady_clock::now()));
    m.expect_bounds(m.stop());
  }

  RedisServer server_;
  TempDir dir_;
  std::string key_ = "rgt:fair";
  std::string log_ = dir_.path() + "/jobs";
  std::string holder_gate_ = dir_.path() + "/holder-gate";
  int configs_ = 0;
  std::vector<std::unique_ptr<TaskProcess>> procs_;
  std::vector<std::string> logs_;
};

TEST_F(FairLine, WaitersRunInTheOrderTheyCameAndANewcomerQueuesBehindThem) {
  const auto cfg = config();
  start("A", cfg, "3");
  ASSERT_TRUE(jobs_reach(1, 10s));
  for (const char* n : {"B", "C", "D", "E"}) {
    start(n, cfg, "0.4");
    ASSERT_TRUE(line_reaches(static_cast<long long>(procs_.size()) - 1)) << n << " did not join the line";
  }
  auto m = meter();
  const auto began = std::chrono::steady_clock::now();
  m.start();
  for (auto& p : procs_) ASSERT_EQ(p->wait_for(20s), 0);
  expect_quiet(m, began);
  const auto v = jobs();
  ASSERT_EQ(v.size(), 5u);
  std::string order;
  for (const auto& j : v) order += j.name;
  EXPECT_EQ(order, "ABCDE");
  expect_no_overlap(v);
  // A release wakes the next waiter at once: 16-53 ms measured under ASan between one job's
  // end and the next one's start, where a waiter not woken would wait for its next attempt
  // (the turn window, 1 s) or the TTL. 400 ms is well under the window.
  for (std::size_t i = 1; i < v.size(); ++i) EXPECT_LT(v[i].start - v[i - 1].end, 400'000'000LL) << v[i].name;
  EXPECT_EQ(line_length(), 0);
}

TEST_F(FairLine, HostsThatContendAgainAtOnceTakeTurnsInsteadOfStarving) {
  // Three hosts run the job in a loop, a new process per run that contends as the last one
  // ends: before the line, the host that had just released won again and again (the seed's
  // starvation: 0 % / 96 % / 4 % / 0 %). With it, once all three wait, they take turns.
  const auto cfg = config();
  constexpr int kRuns = 6;
  auto loop = [&](const std::string& name) {
    for (int i = 0; i < kRuns; ++i) {
      const auto r = run_task_binary({"task", "--config", cfg, "--", "/bin/sh", "-c",
                                      "echo start $(date +%s%N) $NAME >> " + log_ + "; sleep 0.3; echo end $(date +%s%N) $NAME >> " + log_},
                                     20s, {{"NAME", name}});
      EXPECT_EQ(r.code, 0) << name << " run " << i << ": " << r.err;
    }
  };
  auto m = meter(3);
  const auto began = std::chrono::steady_clock::now();
  m.start();
  std::vector<std::thread> hosts;
  for (const char* n : {"A", "B", "C"}) hosts.emplace_back(loop, n);
  for (auto& t : hosts) t.join();
  expect_quiet(m, began);
  const auto v = jobs();
  ASSERT_EQ(v.size(), 3u * kRuns);
  expect_no_overlap(v);
  // From the second round on, every window of three runs has all three hosts (the last
  // round thins out as hosts finish their loops).
  std::string order;
  for (const auto& j : v) order += j.name;
  for (std::size_t i = 3; i + 3 <= 3u * (kRuns - 1); ++i) {
    std::string w = order.substr(i, 3);
    std::sort(w.begin(), w.end());
    EXPECT_EQ(w, "ABC") << "runs " << i << ".." << i + 2 << " of " << order;
  }
  // No waiter waits longer than (its place + 2) jobs and its window (invariant 11): a host's
  // next run starts at most (2 + 2) x 300 ms + 1 s after its last one ended (the other two
  // hosts ahead of it at most; the new process's start and its join are in the margin).
  // Measured 0.65-0.76 s under ASan (one other job and the handovers).
  std::map<std::string, long long> last_end;
  for (const auto& j : v) {
    if (auto it = last_end.find(j.name); it != last_end.end()) {
      EXPECT_LT(j.start - it->second, 2'200'000'000LL) << j.name << " waited too long in " << order;
    }
    last_end[j.name] = j.end;
  }
}

/// Calls per command so far (INFO commandstats: calls inside scripts included).
std::map<std::string, long long> command_calls(const RedisServer& s) {
  std::map<std::string, long long> out;
  for (const auto& line : split_lines(s.cli({"INFO", "commandstats"}))) {
    const auto colon = line.find(":calls=");
    if (line.rfind("cmdstat_", 0) != 0 || colon == std::string::npos) continue;
    out[line.substr(8, colon - 8)] = std::atoll(line.c_str() + colon + 7);
  }
  return out;
}

// Issue 19's herd figure, held by a test: a release with a line costs Redis the release
// script and the woken head's take, and nothing else; the other waiters send nothing. Every
// call counts, inside scripts too. Renewals (the only PEXPIRE on the key) are counted apart.
// The budget: release 7 (EVAL, GET, ZRANGE, PUBLISH the turn, SET the turn, PUBLISH "next",
// ZREMRANGEBYRANK), take 6 (EVALSHA, MGET of the key and the fence, PTTL of the pause, SET,
// TIME, SET the fence). Before: a PUBLISH to waiters outside the line at every release, and
// the key and the fence read apart (15); a look at other limits per acquisition was 2 more,
// before it moved off the handover's path.
TEST_F(FairLine, AReleaseCostsRedisOnlyTheReleaseAndTheHeadsTake) {
  const std::string gate = dir_.path() + "/gate";
  ConfigSpec spec;
  spec.nodes = "host = \"" + server_.address() + "\"";
  spec.key = key_;
  spec.expire = "6s";
  spec.cron = "2s";
  spec.log_level = "debug";
  const auto cfg = dir_.write("budget.toml", make_config(spec));
  procs_.push_back(std::make_unique<TaskProcess>(
      dir_.path(), "A",
      std::vector<std::string>{"task", "--config", cfg, "--", "/bin/sh", "-c",
                               "echo start $(date +%s%N) A >> " + log_ + "; while [ ! -e " + gate +
                                   " ]; do sleep 0.02; done; echo end $(date +%s%N) A >> " + log_}));
  ASSERT_TRUE(jobs_reach(1, 10s));
  for (const char* n : {"B", "C", "D"}) {
    start(n, cfg, "3");
    ASSERT_TRUE(line_reaches(static_cast<long long>(procs_.size()) - 1)) << n << " did not join the line";
  }
  // Each waiter's first look for other limits is made while it waits (after its first miss).
  ASSERT_TRUE(wait_until([&] { return command_calls(server_)["exists"] >= 3; }, 5s));
  const auto before = command_calls(server_);
  { std::ofstream(gate).put('x'); }
  ASSERT_TRUE(jobs_reach(2, 5s));
  std::this_thread::sleep_for(300ms);  // the woken head's take is done by then; its first renewal is 2 s away
  const auto after = command_calls(server_);
  std::map<std::string, long long> delta;
  long long total = 0;
  for (const auto& [name, calls] : after) {
    const long long d = calls - (before.count(name) ? before.at(name) : 0);
    if (d > 0 && name != "info") delta[name] = d, total += d;
  }
  std::string seen;
  for (const auto& [name, d] : delta) seen += name + "=" + std::to_string(d) + " ";
  const long long renewals = delta.count("pexpire") ? delta["pexpire"] : 0;  // EVAL(SHA), GET, PEXPIRE each
  EXPECT_LE(total - 3 * renewals, 13) << seen;
  EXPECT_EQ((delta.count("get") ? delta["get"] : 0) - renewals, 1) << "the release's compare only: " << seen;
  EXPECT_EQ(delta.count("publish") ? delta["publish"] : 0, 2) << "the turn and \"next\" only: " << seen;
  EXPECT_EQ(delta.count("exists"), 0u) << "a look at other limits on the handover's path: " << seen;
  EXPECT_EQ((delta.count("eval") ? delta["eval"] : 0) + (delta.count("evalsha") ? delta["evalsha"] : 0) - renewals, 2)
      << "only the release and the head's take: " << seen;
  const auto v = jobs();
  ASSERT_GE(v.size(), 2u);
  EXPECT_EQ(v[1].name, "B");
}

TEST_F(FairLine, NoWaitFindsTheLineBusyAndDoesNotJoinIt) {
  const auto cfg = config();
  start("A", cfg, "2");
  ASSERT_TRUE(jobs_reach(1, 10s));
  start("B", cfg, "0.1");
  ASSERT_TRUE(line_reaches(1));
  const auto r = run_task_binary({"task", "--config", cfg, "--no-wait", "--", "/bin/true"}, 10s);
  EXPECT_EQ(r.code, 75) << r.err;
  EXPECT_EQ(line_length(), 1);
  // `status` shows the line, in text and JSON.
  const auto st = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_EQ(st.code, 0) << st.err;
  EXPECT_NE(st.out.find("line:   1 waiting\n  1. "), std::string::npos) << st.out;
  const auto js = run_task_binary({"status", "--config", cfg, "--json"}, 10s);
  EXPECT_NE(js.out.find("\"fair\":true,\"line\":{\"length\":1,"), std::string::npos) << js.out;
  EXPECT_NE(js.out.find("\"position\":1,"), std::string::npos) << js.out;
}

// A line that cannot be read is not "empty": status says why (attack round, issue 19).
TEST_F(FairLine, StatusSaysWhyTheLineCannotBeRead) {
  const auto cfg = config();
  server_.cli({"SET", "{" + key_ + "}:line", "not-a-line"});
  const auto st = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_EQ(st.code, 0) << st.err;
  EXPECT_EQ(st.out.find("line:   empty"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("line:   unknown (no node could be read: "), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("WRONGTYPE"), std::string::npos) << st.out;
}

TEST_F(FairLine, AWaiterThatStopsOrGivesUpLeavesTheLineAtOnce) {
  const auto cfg = config();
  start("A", cfg, "5");
  ASSERT_TRUE(jobs_reach(1, 10s));
  auto& b = start("B", cfg, "0.1");
  ASSERT_TRUE(line_reaches(1));
  b.signal(SIGTERM);
  EXPECT_EQ(b.wait_for(5s), 75);
  EXPECT_EQ(line_length(), 0);
  procs_.front()->signal(SIGTERM);
}

TEST_F(FairLine, KilledWaitersAtTheHeadCostTheNextLiveOneNothing) {
  const auto cfg = config();
  // A's job outlasts four waiters joining one after another, even under a sanitizer in a
  // parallel suite (with 1 s, A had released before the fourth joined, and the line never
  // reached four).
  start("A", cfg, "4");
  ASSERT_TRUE(jobs_reach(1, 10s));
  for (const char* n : {"B", "C", "D", "E"}) {
    start(n, cfg, "0.2");
    ASSERT_TRUE(line_reaches(static_cast<long long>(procs_.size()) - 1));
  }
  // The three at the head die without a word (no FIN is needed: their sockets close).
  for (std::size_t i = 1; i <= 3; ++i) procs_[i]->signal(SIGKILL);
  for (std::size_t i = 1; i <= 3; ++i) procs_[i]->wait_for(5s);
  auto m = meter();
  const auto began = std::chrono::steady_clock::now();
  m.start();
  ASSERT_EQ(procs_[0]->wait_for(10s), 0);
  ASSERT_EQ(procs_[4]->wait_for(10s), 0);
  expect_quiet(m, began);
  const auto v = jobs();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].name, "E");
  // Dead waiters skipped at once (62 ms measured under ASan), where each would otherwise
  // cost its turn window (1 s): 300 ms is under one window.
  EXPECT_LT(v[1].start - v[0].end, 300'000'000LL) << "E waited for the dead";
  EXPECT_EQ(line_length(), 0);
}

TEST_F(FairLine, AFrozenHeadLosesItsTurnAfterTheWindowAndTheNextOneRuns) {
  const auto cfg = config();
  ASSERT_TRUE(holder_and_line(cfg, {"B", "C"}));
  auto& b = *procs_[1];
  b.signal(SIGSTOP);
  auto m = meter();
  const auto began = std::chrono::steady_clock::now();
  m.start();
  end_holder();
  ASSERT_EQ(procs_[0]->wait_for(10s), 0);
  ASSERT_EQ(procs_[2]->wait_for(10s), 0);
  expect_quiet(m, began);
  b.signal(SIGCONT);
  EXPECT_EQ(b.wait_for(10s), 0);
  const auto v = jobs();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1].name, "C");
  EXPECT_EQ(v[2].name, "B");
  expect_no_overlap(v);
  // The window is max(1 s, io_timeout): C comes after it (measured 1.07 s under ASan), not a
  // TTL (3 s) later. 2 s leaves 930 ms of slack and is under the TTL.
  const long long gap = v[1].start - v[0].end;
  EXPECT_GT(gap, 900'000'000LL);
  EXPECT_LT(gap, 2'000'000'000LL);
}

TEST_F(FairLine, FairFalseRacesAsBeforeAndSaysSoWhenItMeetsALine) {
  const auto unfair = config("oneshot", "fair = false\n");
  start("A", unfair, "1");
  ASSERT_TRUE(jobs_reach(1, 10s));
  start("B", unfair, "0.1");
  // The shared release channel, no line.
  ASSERT_TRUE(wait_until([&] { return server_.cli({"PUBSUB", "NUMSUB", "{" + key_ + "}:released"}).find("\n1") != std::string::npos; }, 10s));
  EXPECT_EQ(line_length(), 0);
  for (auto& p : procs_) EXPECT_EQ(p->wait_for(10s), 0);
  // Every daemon with fair = false: nothing is mixed, nothing to say (attack round, issue 19:
  // A's release, heard by B, warned of daemons outside the line).
  for (auto& p : procs_) EXPECT_EQ(p->err().find("outside the waiting line"), std::string::npos) << p->err();
  // A fair holder releasing to a fair = false waiter warns (mixed settings on one key).
  const auto fair = config();
  auto& c = start("C", fair, "1");
  ASSERT_TRUE(jobs_reach(3, 10s));
  auto& d = start("D", unfair, "0.1");
  // `status` (of a fair config) sees D listening outside the line.
  ASSERT_TRUE(wait_until([&] { return server_.cli({"PUBSUB", "NUMSUB", "{" + key_ + "}:released"}).find("\n1") != std::string::npos; }, 10s));
  const auto st = run_task_binary({"status", "--config", fair}, 10s);
  EXPECT_NE(st.out.find("1 waiter(s) listen outside the waiting line"), std::string::npos) << st.out;
  // And `check` warns of the mixed settings.
  const auto ck = run_task_binary({"check", "--config", fair}, 10s);
  EXPECT_NE(ck.out.find("warn line " + server_.address() + ": 1 waiter(s) listen on {" + key_ +
                        "}:released outside the waiting line"),
            std::string::npos)
      << ck.out;
  EXPECT_EQ(c.wait_for(10s), 0);
  EXPECT_EQ(d.wait_for(10s), 0);
  EXPECT_NE(c.err().find("outside the waiting line"), std::string::npos) << c.err();
}

// fair = false beside a line takes no freed lease ahead of it, whoever releases: a fair = false
// holder's release wakes the line's head, and a fair = false waiter gets the lease only once
// nobody waits in line (attack round, issue 19: fair = false daemons took every freed lease,
// their releases woke only each other, and the fair ones starved in line).
TEST_F(FairLine, FairFalseTakesNoFreedLeaseAheadOfTheLine) {
  const auto unfair = config("oneshot", "fair = false\n");
  const auto fair = config();
  start("A", unfair, "1");
  ASSERT_TRUE(jobs_reach(1, 10s));
  start("B", fair, "0.2");
  ASSERT_TRUE(line_reaches(1));
  start("C", fair, "0.2");
  ASSERT_TRUE(line_reaches(2));
  start("D", unfair, "0.2");
  ASSERT_TRUE(wait_until([&] { return server_.cli({"PUBSUB", "NUMSUB", "{" + key_ + "}:released"}).find("\n1") != std::string::npos; }, 10s));
  for (auto& p : procs_) EXPECT_EQ(p->wait_for(20s), 0);
  const auto v = jobs();
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[1].name, "B");
  EXPECT_EQ(v[2].name, "C");
  EXPECT_EQ(v[3].name, "D");
  expect_no_overlap(v);
  // The line's head took over from the fair = false holder by the release (22 ms measured
  // under ASan), not at its next attempt after the TTL (3 s): 500 ms is between the two.
  EXPECT_LT(v[1].start - v[0].end, 500'000'000LL);
  // D found a line at its first attempt and says so (mixed settings).
  EXPECT_NE(procs_[3]->err().find("has a waiting line"), std::string::npos) << procs_[3]->err();
}

// A head woken while the key is paused keeps its place: it goes back to the front of the line,
// and the resume wakes it first (attack round, issue 19: it went to the tail, behind the
// waiters that had come after it).
TEST_F(FairLine, AHeadWokenDuringAPauseKeepsItsPlace) {
  const auto cfg = config();
  ASSERT_TRUE(holder_and_line(cfg, {"B", "C"}));
  auto& b = *procs_[1];
  ASSERT_EQ(run_task_binary({"pause", "--config", cfg, "--for", "30s"}, 10s).code, 0);
  end_holder();
  ASSERT_EQ(procs_[0]->wait_for(10s), 0);  // A's job ended and it released: B was woken, and met the pause
  const std::string line = "{" + key_ + "}:line";
  const std::string b_id = ":" + std::to_string(b.pid()) + ":";
  ASSERT_TRUE(wait_until([&] {
    return line_length() == 2 && server_.cli({"ZRANGE", line, "0", "0"}).find(b_id) != std::string::npos;
  }, 5s)) << server_.cli({"ZRANGE", line, "0", "-1"});
  EXPECT_EQ(server_.cli({"EXISTS", key_}), "0") << "the turn is gone, so that the resume wakes the head";
  ASSERT_EQ(run_task_binary({"resume", "--config", cfg}, 10s).code, 0);
  for (auto& p : procs_) EXPECT_EQ(p->wait_for(20s), 0);
  const auto v = jobs();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1].name, "B");
  EXPECT_EQ(v[2].name, "C");
  expect_no_overlap(v);
}

TEST_F(FairLine, ASemaphoresFreedSlotGoesToTheHeadOfTheLineInOrder) {
  const auto cfg = config("oneshot", "", "limit = 2\n");
  // The holders end when the line is whole, one after the other (two slots freed at once
  // would race their heads, a tie): B once C has taken A's slot.
  const std::string gate_b = dir_.path() + "/gate-b";
  start("A", cfg, "0; while [ ! -e " + holder_gate_ + " ]; do sleep 0.02; done");
  start("B", cfg, "0; while [ ! -e " + gate_b + " ]; do sleep 0.02; done");
  ASSERT_TRUE(jobs_reach(2, 10s));
  for (const char* n : {"C", "D", "E", "F"}) {
    start(n, cfg, "0.3");
    ASSERT_TRUE(line_reaches(static_cast<long long>(procs_.size()) - 2)) << n << " did not join the line";
  }
  auto m = meter();
  const auto began = std::chrono::steady_clock::now();
  m.start();
  end_holder();
  ASSERT_TRUE(jobs_reach(3, 10s));
  std::ofstream(gate_b).put('x');
  for (auto& p : procs_) ASSERT_EQ(p->wait_for(20s), 0) << p->err();
  expect_quiet(m, began);
  const auto v = jobs();
  ASSERT_EQ(v.size(), 6u);
  std::string order;
  for (const auto& j : v) order += j.name;
  EXPECT_EQ(order.substr(2), "CDEF") << order;
  // Never more than two at once.
  for (const auto& j : v) {
    int at_once = 0;
    for (const auto& k : v) at_once += k.start <= j.start && (k.end == 0 || k.end > j.start) ? 1 : 0;
    EXPECT_LE(at_once, 2) << j.name;
  }
}

TEST_F(FairLine, WaitersWhoseConnectionsWereCutAreSkippedAndRejoin) {
  const auto cfg = config();
  const std::string gate = dir_.path() + "/gate";
  start("A", cfg, "0; while [ ! -e " + gate + " ]; do sleep 0.02; done");
  ASSERT_TRUE(jobs_reach(1, 10s));
  auto& b = start("B", cfg, "0.2");
  ASSERT_TRUE(line_reaches(1));
  auto& c = start("C", cfg, "0.2");
  ASSERT_TRUE(line_reaches(2));
  // Both waiters' wake subscriptions are cut (as a proxy or a failover would) just before
  // the release: it finds nobody listening, drops both and frees the key; they resubscribe
  // (0.5 s later), rejoin, and both run, one after the other, well before any TTL.
  server_.cli({"CLIENT", "KILL", "TYPE", "pubsub"});
  std::ofstream(gate).put('x');
  auto m = meter();
  const auto began = std::chrono::steady_clock::now();
  m.start();
  for (auto& p : procs_) EXPECT_EQ(p->wait_for(15s), 0) << p->err();
  expect_quiet(m, began);
  const auto v = jobs();
  ASSERT_EQ(v.size(), 3u);
  expect_no_overlap(v);
  EXPECT_NE(b.err().find("acquired key="), std::string::npos) << b.err();
  EXPECT_NE(c.err().find("acquired key="), std::string::npos) << c.err();
  // Resubscribed (0.5 s) and rejoined, B's 0.2 s job, C: 0.78 s measured under ASan; a
  // waiter left to the TTL would start 3 s after A's end. 2.5 s is under that.
  EXPECT_LT(v[2].start - v[0].end, 2'500'000'000LL);
  EXPECT_EQ(line_length(), 0);
}

// Attack round (issue 19): two frozen waiters at the head broke the chain ("next" goes to
// the second only, frozen too) and the third slept 3 x TTL; now it sleeps the TTL plus one
// window per waiter ahead, so it runs a few windows after the release.
TEST_F(FairLine, TwoFrozenWaitersAtTheHeadCostTheNextOnlyAFewWindows) {
  const auto cfg = config();
  ASSERT_TRUE(holder_and_line(cfg, {"B", "C", "D"}));
  auto &b = *procs_[1], &c = *procs_[2], &d = *procs_[3];
  b.signal(SIGSTOP);
  c.signal(SIGSTOP);
  auto m = meter();
  const auto began = std::chrono::steady_clock::now();
  m.start();
  end_holder();
  EXPECT_EQ(d.wait_for(15s), 0) << d.err();
  expect_quiet(m, began);
  b.signal(SIGCONT);
  c.signal(SIGCONT);
  EXPECT_EQ(b.wait_for(15s), 0) << b.err();
  EXPECT_EQ(c.wait_for(15s), 0) << c.err();
  const auto v = jobs();
  ASSERT_EQ(v.size(), 4u);
  expect_no_overlap(v);
  EXPECT_EQ(v[1].name, "D");
  // TTL (3 s at most) + 2 windows + a window for C's turn after D's retry: 6 s at most,
  // 5.99 s measured under ASan; 7.5 s is 1.5 s of slack and under the 3 TTLs (9 s) the
  // broken chain cost.
  EXPECT_LT(v[1].start - v[0].end, 7'500'000'000LL);
}

// Attack round: 40 dead waiters ahead of a live one cost it 120 s (32 skipped per call).
TEST_F(FairLine, FortyDeadEntriesAheadAreSkippedInOneRelease) {
  const auto cfg = config();
  start("A", cfg, "3");
  ASSERT_TRUE(jobs_reach(1, 10s));
  for (int i = 0; i < 40; ++i) {
    server_.cli({"ZADD", "{" + key_ + "}:line", std::to_string(1000 + i), "gone:" + std::to_string(i) + ":0123456789abcdef0123456789abcdef"});
  }
  start("B", cfg, "0.2");
  ASSERT_TRUE(line_reaches(41));
  ASSERT_EQ(procs_[0]->wait_for(10s), 0);
  ASSERT_EQ(procs_[1]->wait_for(10s), 0);
  const auto v = jobs();
  ASSERT_EQ(v.size(), 2u);
  // Forty dead entries skipped in the one release (49 ms measured under ASan); skipped a
  // call at a time they cost seconds each. 300 ms is under one turn window.
  EXPECT_LT(v[1].start - v[0].end, 300'000'000LL) << "B waited for the dead";
  EXPECT_EQ(line_length(), 0);
}

// Attack round: a line key of another type failed the release (the lease stayed for its
// TTL, "deleted nothing") and every attempt with an unclear error.
TEST_F(FairLine, ALineKeyOfAnotherTypeNeverKeepsTheLeaseAndIsNamed) {
  const auto cfg = config();
  auto& a = start("A", cfg, "1");
  ASSERT_TRUE(jobs_reach(1, 10s));
  server_.cli({"SET", "{" + key_ + "}:line", "junk"});
  EXPECT_EQ(a.wait_for(10s), 0);
  EXPECT_NE(a.err().find("released key="), std::string::npos) << a.err();
  EXPECT_NE(a.err().find("is not a sorted set"), std::string::npos) << a.err();
  EXPECT_EQ(server_.cli({"EXISTS", key_}), "0");
  const auto r = run_task_binary({"task", "--config", cfg, "--no-wait", "--", "/bin/true"}, 10s);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("is not a sorted set"), std::string::npos) << r.err;
  EXPECT_EQ(server_.cli({"EXISTS", key_}), "0") << "an attempt left its key behind";
  server_.cli({"DEL", "{" + key_ + "}:line"});
  EXPECT_EQ(run_task_binary({"task", "--config", cfg, "--no-wait", "--", "/bin/true"}, 10s).code, 0);
}

// A semaphore reads its slots in one MGET, which answers nil for a key of another type where
// GET failed: such a slot must never be granted nor overwritten. With the other slot held, the
// attempt is an error naming the key; with it free, that slot is granted and the hash kept.
TEST_F(FairLine, ASemaphoreSlotKeyOfAnotherTypeIsNeverGrantedNorOverwritten) {
  const auto cfg = config("oneshot", "", "limit = 2\n");
  const std::string slot1 = "{" + key_ + "}:slot:1";
  server_.cli({"HSET", key_, "f", "v"});  // slot 0
  server_.cli({"SET", slot1, "other:1:0123456789abcdef0123456789abcdef", "PX", "30000"});
  auto r = run_task_binary({"task", "--config", cfg, "--no-wait", "--", "/bin/true"}, 10s);
  // Skipped as if held (busy: 75), and named with what to delete; never an error reply that
  // would tell every host that nobody can run the job.
  EXPECT_EQ(r.code, 75) << r.err;
  EXPECT_NE(r.err.find("slot key " + key_ + " holds a hash on "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(redis-cli DEL " + key_ + ")"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("no host with this config can run the job"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("acquired key="), std::string::npos) << r.err;
  server_.cli({"DEL", slot1});
  r = run_task_binary({"task", "--config", cfg, "--no-wait", "--", "/bin/true"}, 10s);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("slot=1"), std::string::npos) << r.err;
  EXPECT_EQ(server_.cli({"HGET", key_, "f"}), "v");
}

// A user whose ACL predates the MGET (the README's recipe before it) still runs a semaphore:
// the slots are then read one by one.
TEST(FairLineAcl, ASemaphoreRunsForAUserWithoutMget) {
  RedisServer s(with_acl_user("user w on >w-Pw ~sem ~{sem}:* &{sem}:* +eval +evalsha +get +set +del +pexpire "
                              "+pttl +time +publish +subscribe +exists +hset +hget +hmget +info +zadd +zrem "
                              "+zrange +zscore +zrank +zcard +zremrangebyrank"));
  TempDir dir;
  ConfigSpec spec;
  spec.nodes = "host = \"" + s.address() + "\"";
  spec.key = "sem";
  spec.extra_redis = "username = \"w\"\npassword = \"w-Pw\"\n";
  spec.extra_task = "limit = 2\n";
  const auto cfg = dir.write("sem.toml", make_config(spec));
  s.cli({"SET", "sem", "other:1:0123456789abcdef0123456789abcdef", "PX", "30000"});
  auto r = run_task_binary({"task", "--config", cfg, "--no-wait", "--", "/bin/true"}, 10s);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("slot=1"), std::string::npos) << r.err;
  // Attack round: without +exists either, the look at a second free slot failed the script
  // after its SET (77), and the slot stayed held by nobody for a whole lease.
  s.cli({"DEL", "sem"});
  s.cli({"ACL", "SETUSER", "w", "-exists"});
  r = run_task_binary({"task", "--config", cfg, "--no-wait", "--", "/bin/true"}, 10s);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(s.cli({"EXISTS", "sem", "{sem}:slot:1"}), "0") << "a slot left behind";
}

// Attack round: a user refused one of the line's commands was told the line "is not a sorted
// set ... delete it". It is told which right to grant.
TEST(FairLineAcl, ALineCommandTheUserMayNotRunIsNamedWithItsRight) {
  RedisServer s(with_acl_user("user w on >w-Pw ~ln ~{ln}:* &{ln}:* +eval +evalsha +get +set +del +pexpire "
                              "+pttl +time +publish +subscribe +exists +hset +hget +hmget +info +zadd +zrem "
                              "+zrange +zscore +zcard +zremrangebyrank +mget"));  // no +zrank
  TempDir dir;
  ConfigSpec spec;
  spec.nodes = "host = \"" + s.address() + "\"";
  spec.key = "ln";
  spec.extra_redis = "username = \"w\"\npassword = \"w-Pw\"\n";
  const auto cfg = dir.write("ln.toml", make_config(spec));
  s.cli({"SET", "ln", "other:1:0123456789abcdef0123456789abcdef", "PX", "30000"});
  const auto r = run_task_binary({"task", "--config", cfg, "--", "/bin/true"}, 15s);
  EXPECT_EQ(r.code, 77) << r.err;
  EXPECT_NE(r.err.find("may not run zrank on the waiting line {ln}:line"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("grant +zrank"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("is not a sorted set"), std::string::npos) << r.err;
}

/// Redlock over three servers, with the timings of the fair-line tests.
ConfigSpec three_nodes(const RedisServer& a, const RedisServer& b, const RedisServer& c, const std::string& key) {
  ConfigSpec s;
  s.nodes = "nodes = [\"" + a.address() + "\", \"" + b.address() + "\", \"" + c.address() + "\"]";
  s.key = key;
  s.expire = "3s";
  s.cron = "600ms";
  s.kill_grace = "300ms";
  s.io_timeout = "250ms";
  return s;
}

// Redlock: node-local lines in a cycle (A,B,C / B,C,A / C,A,B) in which nobody heads a
// majority. Seeded by hand with scores above every ticket (so that writing tickets back does
// not undo it): the release wakes a different head on each node, each wins one node and
// undoes it; the losers rejoin at the tail with one ticket everywhere, and all three run.
// A line that one node of three cannot read is said, in text and JSON, beside the line the
// others show (attack round, issue 19: "line: empty" without a word).
TEST(FairLineRedlock, StatusSaysWhichNodesLineCannotBeRead) {
  RedisServer n1, n2, n3;
  TempDir dir;
  const std::string cfg = dir.write("cfg.toml", make_config(three_nodes(n1, n2, n3, "rgt:fair:unread")));
  n2.cli({"SET", "{rgt:fair:unread}:line", "x"});
  const auto st = run_task_binary({"status", "--config", cfg}, 10s);
  EXPECT_NE(st.out.find("note:   the waiting line on " + n2.address() + " could not be read: "), std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("WRONGTYPE"), std::string::npos) << st.out;
  const auto js = run_task_binary({"status", "--config", cfg, "--json"}, 10s);
  EXPECT_NE(js.out.find("\"line_errors\":[{\"node\":\"" + n2.address() + "\""), std::string::npos) << js.out;
}

TEST(FairLineRedlock, ACycleOfNodeLocalLinesResolvesAndNobodyStarves) {
  RedisServer n1, n2, n3;
  const std::vector<const RedisServer*> nodes{&n1, &n2, &n3};
  TempDir dir;
  const std::string cfg = dir.write("cfg.toml", make_config(three_nodes(n1, n2, n3, "rgt:fair:cycle")));
  const std::string log = dir.path() + "/jobs", gate = dir.path() + "/gate";
  const std::string line = "{rgt:fair:cycle}:line";
  auto job = [&](const std::string& wait) {
    return std::vector<std::string>{"task", "--config", cfg, "--", "/bin/sh", "-c",
                                    "echo start $(date +%s%N) $NAME >> " + log + "; " + wait +
                                        "echo end $(date +%s%N) $NAME >> " + log};
  };
  std::vector<std::unique_ptr<TaskProcess>> procs;
  std::vector<std::string> logs;
  auto start = [&](const std::string& name, const std::string& wait) {
    procs.push_back(std::make_unique<TaskProcess>(dir.path(), name, job(wait), std::map<std::string, std::string>{{"NAME", name}}));
    logs.push_back(dir.path() + "/" + name + ".err");
  };
  start("H", "while [ ! -e " + gate + " ]; do sleep 0.05; done; ");
  ASSERT_TRUE(wait_until([&] { return intervals(read_file(log)).size() == 1; }, 10s));
  for (const char* n : {"A", "B", "C"}) start(n, "sleep 0.3; ");
  auto all_in_line = [&] {
    return std::all_of(nodes.begin(), nodes.end(), [&](const RedisServer* r) { return r->cli({"ZCARD", line}) == "3"; });
  };
  ASSERT_TRUE(wait_until(all_in_line, 10s));
  std::vector<std::string> m = split_lines(n1.cli({"ZRANGE", line, "0", "-1"}));
  ASSERT_EQ(m.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    for (std::size_t j = 0; j < 3; ++j) {
      nodes[k]->cli({"ZADD", line, std::to_string(3000000000000000LL + static_cast<long long>(j)), m[(j + k) % 3]});
    }
  }
  StormMeter meter(nodes, logs, 4);
  const auto began = std::chrono::steady_clock::now();
  meter.start();
  std::ofstream(gate).put('x');
  for (auto& p : procs) EXPECT_EQ(p->wait_for(30s), 0) << p->err();
  std::this_thread::sleep_for(std::max<std::chrono::steady_clock::duration>(0s, began + 2s - std::chrono::steady_clock::now()));
  meter.expect_bounds(meter.stop());
  const auto v = intervals(read_file(log));
  ASSERT_EQ(v.size(), 4u) << read_file(log);
  expect_no_overlap(v);
  // Resolved within a few windows, not a TTL per waiter or worse: the three 0.3 s jobs and
  // their handovers, 0.79 s measured under ASan. 12 s is the TTLs and windows of a livelock
  // broken late; a line in deadlock never ends and fails at the 30 s waits above.
  EXPECT_LT(v[3].start - v[0].end, 12'000'000'000LL);
}

// Attack round: with one node of three frozen, a leader stayed in the line of the node that
// had not granted it; a release there handed that node's turn to it (and, once it had
// exited, to nobody), so the two live nodes named different turns and the line stood still
// for 3.5-4.7 s at a time. Now a leader leaves the line where it was not granted.
TEST(FairLineRedlock, AFrozenNodeOfThreeDoesNotStallTheLine) {
  RedisServer n1, n2, n3;
  TempDir dir;
  const std::string cfg = dir.write("cfg.toml", make_config(three_nodes(n1, n2, n3, "rgt:fair:frozen")));
  const std::string log = dir.path() + "/jobs";
  std::atomic<bool> stop{false};
  auto loop = [&](const std::string& name) {
    while (!stop) {
      const auto r = run_task_binary({"task", "--config", cfg, "--", "/bin/sh", "-c",
                                      "echo start $(date +%s%N) $NAME >> " + log + "; sleep 0.2; echo end $(date +%s%N) $NAME >> " + log},
                                     30s, {{"NAME", name}});
      if (r.code != 0) {
        ADD_FAILURE() << name << ": " << r.err;
        return;
      }
    }
  };
  std::vector<std::thread> hosts;
  struct Join {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Join() {
      stop = true;
      for (auto& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } join{stop, hosts};
  for (const char* n : {"A", "B", "C", "D", "E"}) hosts.emplace_back(loop, n);
  // Long enough first for leaders to have won on two nodes of three many times.
  ASSERT_TRUE(wait_until([&] { return intervals(read_file(log)).size() >= 30; }, 30s)) << read_file(log);
  const auto frozen_at = intervals(read_file(log)).size();
  n2.pause();
  std::this_thread::sleep_for(10s);  // the window observed
  const auto during = intervals(read_file(log));
  n2.resume();
  stop = true;
  for (auto& t : hosts) t.join();
  expect_no_overlap(intervals(read_file(log)));
  ASSERT_GT(during.size(), frozen_at);
  std::vector<long long> gaps;
  for (std::size_t i = frozen_at + 1; i < during.size(); ++i) gaps.push_back(during[i].start - during[i - 1].end);
  ASSERT_FALSE(gaps.empty());
  const long long longest = *std::max_element(gaps.begin(), gaps.end());
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  const long long median = gaps[gaps.size() / 2];
  // A stall is a gap far beyond this host's usual one: the line standing still behind the
  // frozen node was 3.5-4.7 s where an optimised build's gaps are under 1 s (about 4 runs/s).
  // Each run is a new process, so a sanitized build on a loaded host has gaps of 1-2 s, and
  // one of them now and then near 4 s: the bound is 3 s or four median gaps, whichever is
  // longer, which still catches that stall on an optimised build. (Measured under ASan at
  // ctest -j6: the longest gap 1.04 s against a bound of 3 s.)
  const long long bound = std::max(3'000'000'000LL, 4 * median);
  EXPECT_LT(longest, bound) << "the line stood still while two nodes of three were healthy (median gap "
                            << median / 1'000'000 << " ms)";
  EXPECT_GE(during.size() - frozen_at, 6u) << "runs in 10 s with a node frozen";
}

}  // namespace

}  // namespace task_fair_line_test
