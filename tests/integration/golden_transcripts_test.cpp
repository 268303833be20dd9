// Golden transcripts (tests/golden/README.md): for a fixed set of scenarios, what the daemon
// and the CLI send to each Redis node (MONITOR, the calls inside scripts included), what
// they log and how each process exits, normalised (support/golden.h) and compared with
// tests/golden/<scenario>.txt. They pin today's behaviour so that a refactor that moves code
// can show it changed nothing. Every step waits for an event (a log line, a file the child
// writes), never for time; a job runs until the test opens its gate file.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "lock/scripts.h"
#include "support/golden.h"
#include "support/redis_server.h"
#include "support/task_process.h"

namespace golden_transcripts_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

/// Every lease script under the name the transcripts give it.
void name_scripts(Normaliser& norm) {
  using namespace redisgo::lock;
  const std::vector<std::pair<const redisgo::redis::Script*, const char*>> names{
      {&kRenew, "renew"},           {&kRelease, "release"},
      {&kUndo, "undo"},             {&kRaiseFence, "raise_fence"},
      {&kInspect, "inspect"},       {&kClaim, "claim"},
      {&kFinishClaim, "finish_claim"}, {&kReadClaims, "read_claims"},
      {&kReadOnce, "read_once"},    {&kAdopt, "adopt"},
      {&kDropAdopt, "drop_adopt"},  {&kPublish, "publish"},
      {&kAcquireFair, "acquire_fair"}, {&kAcquireSlotFair, "acquire_slot_fair"},
      {&kReleaseFair, "release_fair"}, {&kPassTurn, "pass_turn"},
      {&kReadLine, "read_line"},    {&kListKey, "list_key"},
      {&kPause, "pause"},           {&kResume, "resume"},
      {&kReadPause, "read_pause"},  {&kSlotsBeyond, "slots_beyond"},
      {&kCheckRights, "check_rights"}, {&kProbeRights, "probe_rights"},
      {&kReadRefusal, "read_refusal"},
  };
  for (const auto* s : kLeaseScripts) {
    const bool named = std::any_of(names.begin(), names.end(), [&](const auto& n) { return n.first == s; });
    EXPECT_TRUE(named) << "a lease script has no name in the golden transcripts: add it to name_scripts()";
  }
  for (const auto& [script, name] : names) norm.script(name, std::string(script->source), script->sha());
}

class Golden : public ::testing::Test {
 protected:
  /// The scenario's nodes (node1..N), each with a MONITOR tap, and the normaliser over them.
  void nodes(int n, const RedisServerOptions& options = {}) {
    for (int i = 0; i < n; ++i) servers_.push_back(std::make_unique<RedisServer>(options));
    std::vector<const RedisServer*> list;
    for (auto& s : servers_) {
      taps_.push_back(std::make_unique<MonitorTap>(*s));
      list.push_back(s.get());
    }
    normaliser(list);
  }
  /// The normaliser over `list` (node1..N) with the rules every scenario shares.
  void normaliser(const std::vector<const RedisServer*>& list) {
    norm_ = std::make_unique<Normaliser>(list, kept_);
    name_scripts(*norm_);
    // A plain extension (of the lease, and of a once_per claim); a renewal that sets the key
    // again is pinned one by one.
    norm_->repeatable_op("^EVAL(SHA)? renew [^\\n]*(\\n    > (GET|PEXPIRE|HGET) [^\\n]*)+$");
    norm_->repeatable_log("lease renewed");
    norm_->log_rule("lease renewed \\([0-9]+\\)", "lease renewed (<n>)");
    norm_->log_rule("attempt [0-9]+", "attempt <n>");
    norm_->unordered_log("subscribed to .* on redis node[0-9]+$");
    // A release waits for a quorum of nodes only: how many had answered by then is timing.
    norm_->log_rule("on [0-9]+ of ([0-9]+) node\\(s\\)( \\([0-9]+ more sent, not waited for\\))?",
                    "on a quorum of $1 node(s)");
  }
  /// The config of a daemon over every node, on key_.
  std::string config(const std::string& mode = "oneshot", const std::string& extra_task = "",
                     const std::string& extra_redis = "", bool guard = false) {
    ConfigSpec s;
    if (servers_.size() == 1) {
      s.nodes = "host = \"" + servers_[0]->address() + "\"";
    } else {
      std::string list;
      for (auto& srv : servers_) list += (list.empty() ? "\"" : ", \"") + srv->address() + "\"";
      s.nodes = "nodes = [" + list + "]";
    }
    s.key = key_;
    s.expire = "3s";
    s.cron = "500ms";
    s.kill_grace = "300ms";
    s.io_timeout = "500ms";
    s.mode = mode;
    s.extra_task = extra_task;
    s.extra_redis = extra_redis;
    s.restart_guard = guard;
    s.log_level = "debug";
    return dir_.write("cfg-" + std::to_string(++configs_) + ".toml", make_config(s));
  }
  std::string gate(const std::string& name) const { return dir_.path() + "/gate-" + name; }
  std::string mark(const std::string& name) const { return dir_.path() + "/started-" + name; }
  /// A daemon with holder prefix `name` whose job writes mark(name) and runs until gate(name).
  TaskProcess& daemon(const std::string& name, const std::string& cfg, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"task", "--config", cfg, "--holder-prefix", name};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c",
                             "echo \"$REDISGO_TASK_TOKEN\" > " + mark(name) + "; while [ ! -e " + gate(name) +
                                 " ]; do sleep 0.02; done"});
    procs_.emplace_back(name, std::make_unique<TaskProcess>(dir_.path(), name, args));
    return *procs_.back().second;
  }
  /// Any other run of the binary, named `name` in the transcript.
  TaskProcess& run(const std::string& name, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env = {}) {
    procs_.emplace_back(name, std::make_unique<TaskProcess>(dir_.path(), name, args, env));
    return *procs_.back().second;
  }
  /// Runs `name` to its end (bounded) before the scenario goes on.
  void run_to_end(const std::string& name, const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {}) {
    auto& p = run(name, args, env);
    EXPECT_TRUE(p.wait_for(20s).has_value()) << name << " did not end:\n" << p.err();
  }
  /// Waits until `n` waiters are in the key's line on node `node` (asked over its unix socket:
  /// not in the transcript).
  bool line_reaches(long long n, std::size_t node = 0) const {
    return wait_until([&] { return local_cli(*servers_[node], {"ZCARD", "{" + key_ + "}:line"}) == std::to_string(n); },
                      10s, 20ms);
  }
  TaskProcess& proc(const std::string& name) {
    for (auto& [n, p] : procs_) {
      if (n == name) return *p;
    }
    throw std::runtime_error("no process " + name);
  }
  /// Waits until `name` has renewed its lease at least once: how many renewals a child lives
  /// through is timing (more under a sanitizer), so every holder lives through one or more.
  bool renewed(const std::string& name) { return proc(name).wait_for_log("lease renewed", 10s); }
  /// Lets `name`'s job end, once it has renewed.
  void open_gate(const std::string& name) {
    EXPECT_TRUE(renewed(name)) << proc(name).err();
    std::ofstream(gate(name)).put('x');
  }
  bool started(const std::string& name, std::chrono::milliseconds timeout = 15s) const {
    return wait_until([&] { return !read_file(mark(name)).empty(); }, timeout, 10ms);
  }
  /// Waits for the exit of every process and records each one's exit status; then each node's
  /// commands and each process's log.
  /// `check`: more lines for the transcript, made from every node's raw MONITOR lines.
  using RawCheck = std::function<std::vector<std::string>(const std::vector<std::vector<std::string>>&)>;
  void finish(const std::string& scenario, const RawCheck& check = nullptr) {
    Transcript t(scenario, *norm_);
    std::vector<std::string> exits;
    for (auto& [name, p] : procs_) {
      const auto code = p->wait_for(20s);
      EXPECT_TRUE(code.has_value()) << name << " did not exit:\n" << p->err();
      exits.push_back(name + ": " + (code ? std::to_string(*code) : "running"));
    }
    std::vector<std::vector<std::string>> raw;
    for (auto& tap : taps_) raw.push_back(tap->lines());
    for (std::size_t i = 0; i < raw.size(); ++i) {
      t.section("node" + std::to_string(i + 1) + " commands", norm_->monitor(raw[i]));
    }
    if (check) t.section("checked apart", check(raw));
    for (auto& [name, p] : procs_) {
      t.section(name + " log", norm_->log(p->err()));
      if (!p->out().empty()) t.section(name + " stdout", norm_->log(p->out()));
    }
    t.section("exit status", exits);
    t.finish();
  }

  TempDir dir_;
  std::string key_ = "golden:lock";
  std::set<std::string> kept_{"3s", "500ms", "300ms"};
  std::vector<std::unique_ptr<RedisServer>> servers_;
  std::vector<std::unique_ptr<MonitorTap>> taps_;
  std::unique_ptr<Normaliser> norm_;
  std::vector<std::pair<std::string, std::unique_ptr<TaskProcess>>> procs_;
  int configs_ = 0;
};

TEST_F(Golden, AcquireRenewRelease) {
  nodes(1);
  auto& a = daemon("A", config());
  ASSERT_TRUE(started("A")) << a.err();
  ASSERT_TRUE(a.wait_for_log("lease renewed", 10s)) << a.err();
  open_gate("A");
  finish("acquire_renew_release");
}

/// Redlock: each node issues a token from its own clock; the holder takes the highest of the
/// first quorum to answer and raises the fence of every node whose token is below that one
/// (raise_fence). Which node answers first and which is highest is timing, so the transcripts
/// blank tokens and leave raise_fence out; this checks it: `token` (from the holder's log) is
/// one node's, and a node raised is one whose token was below it, raised to it (a node that
/// answered after the quorum decided is not raised: its renewal carries the token).
std::vector<std::string> fences_raised(const std::string& key, const std::string& holder_log,
                                       const std::vector<std::vector<std::string>>& raw) {
  const auto at = holder_log.find("acquired key=" + key + " token=");
  const std::string token = at == std::string::npos ? "" : holder_log.substr(at + 20 + key.size(), 16);
  std::vector<std::string> issued(raw.size()), raised(raw.size());
  for (std::size_t n = 0; n < raw.size(); ++n) {
    bool in_raise = false;
    for (const auto& line : raw[n]) {
      std::string client;
      std::vector<std::string> args;
      if (!parse_monitor_line(line, client, args)) continue;
      std::string verb = args[0];
      std::transform(verb.begin(), verb.end(), verb.begin(), ::toupper);
      if (client != "lua") {
        in_raise = (verb == "EVAL" && args.size() > 1 && args[1] == std::string(redisgo::lock::kRaiseFence.source)) ||
                   (verb == "EVALSHA" && args.size() > 1 && args[1] == redisgo::lock::kRaiseFence.sha());
        continue;
      }
      if (verb != "SET" || args.size() < 3 || args[1] != "{" + key + "}:fence") continue;
      if (in_raise && raised[n].empty()) raised[n] = args[2];
      if (!in_raise && issued[n].empty()) issued[n] = args[2];
    }
  }
  bool ok = token.size() == 16 && std::find(issued.begin(), issued.end(), token) != issued.end();
  for (std::size_t n = 0; n < raw.size(); ++n) {
    ok = ok && issued[n].size() == 16 && (raised[n].empty() || (issued[n] < token && raised[n] == token));
  }
  EXPECT_TRUE(ok) << "token " << token << "; issued/raised per node: " << [&] {
    std::string s;
    for (std::size_t n = 0; n < raw.size(); ++n) s += issued[n] + "/" + raised[n] + " ";
    return s;
  }();
  return {std::string("raise_fence only where a node's token was below the holder's, to the holder's: ") +
          (ok ? "yes" : "no")};
}

TEST_F(Golden, RedlockAcquireRenewRelease) {
  nodes(3);
  norm_->blank_tokens();
  norm_->drop_op("^EVAL(SHA)? raise_fence ");
  auto& a = daemon("A", config());
  ASSERT_TRUE(started("A")) << a.err();
  ASSERT_TRUE(a.wait_for_log("lease renewed", 10s)) << a.err();
  open_gate("A");
  finish("redlock_acquire_renew_release", [&](const auto& raw) { return fences_raised(key_, a.err(), raw); });
}

// A holds; B misses, joins the line and waits; A's release gives B the turn.
TEST_F(Golden, FairLineMissThenTurn) {
  nodes(1);
  const auto cfg = config();
  auto& a = daemon("A", cfg);
  ASSERT_TRUE(started("A")) << a.err();
  auto& b = daemon("B", cfg);
  ASSERT_TRUE(line_reaches(1)) << b.err();
  open_gate("A");
  ASSERT_TRUE(started("B")) << b.err();
  open_gate("B");
  finish("fair_line_turn");
}

// Redlock: B misses on every node and joins the line on each; it leaves when stopped. (The
// turn itself is left out here: B acts on the first node's wake while A's release may not yet
// have reached the others, so B's calls there are timing.) An attempt that has lost its quorum
// undoes its grant on the nodes that have not answered yet, the slowest: left out, as timing.
TEST_F(Golden, RedlockFairLineMiss) {
  nodes(3);
  norm_->blank_tokens();
  norm_->drop_op("^EVAL(SHA)? (raise_fence|undo) ");
  const auto cfg = config();
  auto& a = daemon("A", cfg);
  ASSERT_TRUE(started("A")) << a.err();
  auto& b = daemon("B", cfg);
  for (std::size_t i = 0; i < 3; ++i) ASSERT_TRUE(line_reaches(1, i)) << b.err();
  b.signal(SIGTERM);
  ASSERT_TRUE(b.wait_for(20s).has_value()) << b.err();
  for (std::size_t i = 0; i < 3; ++i) ASSERT_TRUE(line_reaches(0, i)) << b.err();
  open_gate("A");
  finish("redlock_fair_line_miss", [&](const auto& raw) { return fences_raised(key_, a.err(), raw); });
}

// The restart guard: a node restarted empty under a holder. A newcomer (B, --no-wait) is held
// back by the guard, and the holder's next renewal sets the key again. The holder is stopped
// (SIGSTOP) from just after a renewal until the node is back, tapped again and B has run, so
// that it sees the restart as one instant, well within its lease. The node is first up for
// longer than the guard (expire), so that A's own first acquisition is not held back (how
// many times a wait for the guard tries again is timing).
TEST_F(Golden, RestartGuard) {
  nodes(1);
  ASSERT_TRUE(wait_until(
      [&] {
        const auto info = local_cli(*servers_[0], {"INFO", "server"});
        const auto at = info.find("uptime_in_seconds:");
        return at != std::string::npos && std::atoi(info.c_str() + at + 18) >= 5;
      },
      10s, 100ms));
  const auto cfg = config("oneshot", "", "", /*guard=*/true);
  auto& a = daemon("A", cfg);
  ASSERT_TRUE(started("A")) << a.err();
  ASSERT_TRUE(a.wait_for_log("lease renewed (1)", 10s)) << a.err();
  ASSERT_TRUE(a.wait_for_log("lease renewed (2)", 10s)) << a.err();
  ::kill(a.pid(), SIGSTOP);
  taps_[0]->lines();  // everything before the restart is in
  taps_[0]->detach();
  servers_[0]->restart();
  taps_[0]->attach();
  run_to_end("B", {"task", "--config", cfg, "--holder-prefix", "B", "--no-wait", "--", "/bin/true"});
  ::kill(a.pid(), SIGCONT);
  ASSERT_TRUE(a.wait_for_log("set again", 10s)) << a.err();
  // A plain renewal after the one that set the key again.
  const auto renewals = [&] {
    const auto err = a.err();
    int n = 0;
    for (auto at = err.find("lease renewed", err.find("set again")); at != std::string::npos;
         at = err.find("lease renewed", at + 1)) {
      ++n;
    }
    return n;
  };
  ASSERT_TRUE(wait_until([&] { return renewals() >= 2; }, 10s, 10ms)) << a.err();
  open_gate("A");
  finish("restart_guard");
}

// `pause` on a held key while the holder runs, then `resume`; the holder finishes.
TEST_F(Golden, PauseAndResume) {
  nodes(1);
  const auto cfg = config();
  auto& a = daemon("A", cfg);
  ASSERT_TRUE(started("A")) << a.err();
  run_to_end("pause", {"pause", "--config", cfg, "--for", "30s", "--reason", "golden pause"});
  ASSERT_TRUE(a.wait_for_log("lease renewed", 10s)) << a.err();
  run_to_end("resume", {"resume", "--config", cfg});
  open_gate("A");
  finish("pause_resume");
}

// A semaphore of 2: A and B run; C finds both slots held and, with --no-wait, gives up (75).
// (C waiting instead is timing: its wait line names the holder whose lease ends first, and is
// said again whenever that one changes, as A's and B's renewals interleave.)
TEST_F(Golden, SemaphoreOfTwo) {
  nodes(1);
  // Each holder starts its rotation over the slots at a slot of its own (a hash of its random
  // holder id): which slot key each one gets is chance, so slot keys and numbers are blanked;
  // so is which holder's lease ends first.
  norm_->rule("^(golden:lock|\\{golden:lock\\}:slot:[0-9]+)$", "<slot>");
  norm_->log_rule("slot=[0-9]+", "slot=<n>");
  norm_->log_rule("held by [AB]\\b", "held by <A or B>");
  const auto cfg = config("oneshot", "limit = 2\n");
  auto& a = daemon("A", cfg);
  ASSERT_TRUE(started("A")) << a.err();
  auto& b = daemon("B", cfg);
  ASSERT_TRUE(started("B")) << b.err();
  run_to_end("C", {"task", "--config", cfg, "--holder-prefix", "C", "--no-wait", "--", "/bin/true"});
  open_gate("A");
  open_gate("B");
  finish("semaphore_limit_2");
}

// once_per: A claims the slot, runs and records it; B, later in the same slot, skips it.
TEST_F(Golden, OncePerClaimAndSkip) {
  // The slot (1 h) must not end during the scenario: a run in its last minute waits for the next.
  const auto slot_end = [] {
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    return 3600 - s.count() % 3600;
  };
  if (slot_end() < 60) {
    ASSERT_TRUE(wait_until([&] { return slot_end() > 60; }, 65s, 100ms));
  }
  nodes(1);
  norm_->rule("(^|[^0-9])1[0-9]{9}(?![0-9])", "$1<epoch-s>");  // the slot's start
  const auto cfg = config("oneshot", "once_per = \"1h\"\n");
  auto& a = daemon("A", cfg);
  ASSERT_TRUE(started("A")) << a.err();
  open_gate("A");
  ASSERT_TRUE(a.wait_for(20s).has_value()) << a.err();
  auto& b = daemon("B", cfg);
  ASSERT_TRUE(b.wait_for(20s).has_value()) << b.err();
  finish("once_per_claim");
}

// handover: A leads (supervise), B stands by in the line; `handover` moves the lease to B.
TEST_F(Golden, Handover) {
  nodes(1);
  // handover looks at the key every 100 ms until another holder has it: how often is timing.
  norm_->repeatable_op("^EVAL(SHA)? inspect ");
  const auto cfg = config("supervise", "step_down_hold = \"60s\"\n");
  auto& a = daemon("A", cfg);
  ASSERT_TRUE(started("A")) << a.err();
  auto& b = daemon("B", cfg);
  ASSERT_TRUE(line_reaches(1)) << b.err();
  ASSERT_TRUE(renewed("A")) << a.err();
  run_to_end("handover", {"handover", "--config", cfg});
  ASSERT_TRUE(started("B")) << b.err();
  ASSERT_TRUE(renewed("B")) << b.err();
  a.signal(SIGTERM);
  ASSERT_TRUE(a.wait_for(20s).has_value()) << a.err();
  b.signal(SIGTERM);
  finish("handover");
}

// Give-ups, one per exit cause. Busy: --no-wait on a held key (75).
TEST_F(Golden, GiveUpBusy) {
  nodes(1);
  const auto cfg = config();
  auto& a = daemon("A", cfg);
  ASSERT_TRUE(started("A")) << a.err();
  run_to_end("B", {"task", "--config", cfg, "--holder-prefix", "B", "--no-wait", "--", "/bin/true"});
  open_gate("A");
  finish("give_up_busy");
}

// --wait-timeout on a held key: B waits in line, then gives up (75) and leaves the line.
TEST_F(Golden, GiveUpWaitTimeout) {
  nodes(1);
  const auto cfg = config();
  auto& a = daemon("A", cfg);
  ASSERT_TRUE(started("A")) << a.err();
  run_to_end("B", {"task", "--config", cfg, "--holder-prefix", "B", "--wait-timeout", "1s", "--", "/bin/true"});
  open_gate("A");
  finish("give_up_wait_timeout");
}

// Unreachable: nothing listens at the only node's address (69). The port is held bound (not
// listening) for the whole test, so that no other test's server can take it: a connect is refused.
TEST_F(Golden, GiveUpUnreachable) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  normaliser({});
  norm_->node(address, "node1");
  ConfigSpec s;
  s.nodes = "host = \"" + address + "\"";
  s.key = key_;
  s.expire = "3s";
  s.cron = "500ms";
  s.kill_grace = "300ms";
  s.io_timeout = "500ms";
  const auto cfg = dir_.write("unreachable.toml", make_config(s));
  run_to_end("B", {"task", "--config", cfg, "--holder-prefix", "B", "--no-wait", "--", "/bin/true"});
  finish("give_up_unreachable");
  ::close(fd);
}

// Refused: an ACL user without the rights on the key (77).
TEST_F(Golden, GiveUpRefused) {
  nodes(1, with_acl_user("user job on >job-pw ~other:* &* +@all"));
  const auto cfg = config("oneshot", "", "username = \"job\"\npassword_env = \"GOLDEN_PW\"\n");
  run_to_end("B", {"task", "--config", cfg, "--holder-prefix", "B", "--no-wait", "--", "/bin/true"},
             {{"GOLDEN_PW", "job-pw"}});
  finish("give_up_refused");
}

}  // namespace

}  // namespace golden_transcripts_test
