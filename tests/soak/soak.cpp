// redisgo_soak: a randomized, seeded soak of the real daemon under faults (issue 9).
//
//   redisgo_soak --duration SECONDS --seed N [--nodes 1|3] [--daemons K] [--limit N]
//                [--unfair] [--verbose] [--keep DIR]
//
// --verbose prints each fault, and each node's INFO commandstats and CLIENT LIST for every
// second past half the bound; the daemons then log at debug (--keep DIR keeps their logs).
//
// With --limit N every daemon runs a semaphore of N slots (issue 12): the records are
// checked per slot (each slot is a lease of its own) and no slot outside 0..N-1.
//
// K daemons contend for one key over N redis-servers, each daemon talking to each node
// through its own fault proxy (so one daemon can be cut off from one node alone). The
// first half are supervise daemons, the others oneshot runs started again as each ends.
// Their children (redisgo_soak_child) record start / beat every 10 ms / stop in one file.
// A seeded schedule injects faults: SIGKILL of a daemon, SIGSTOP/SIGCONT of a daemon or
// of its whole process tree (past the TTL), proxy latency / blackhole / reset per link,
// Redis SIGSTOP, CLIENT PAUSE, Redis SIGKILLed and started empty 0.1-1.5 s later (any
// node, any number of them: the restart guard, docs/DESIGN.md, holds them), and CLIENT
// KILL. Not a DEL of the key on a node: a DEL leaves the server's uptime as it was, so the
// restart guard cannot see it, and it is data loss outside the Redlock contract — a
// holder that renews on exactly a quorum (its third node missed a renewal to latency or
// a pause) loses exclusion to it. An earlier version injected it and the checker caught
// exactly those overlaps, 0-6 ms after the DEL let a second holder in.
//
// The checker reads the records: an overlap is a child writing after another child
// (another token) started and before that one stopped — alive together. A child whose
// whole tree was frozen is excused until 100 ms after its SIGCONT (docs/DESIGN.md, invariant 1: no
// daemon can prevent that; the stale child must be stopped at once on resume).
// The storm meter samples every node's INFO each second (commands/s per daemon: over the
// span since that node last answered, and not while a CLIENT PAUSE lasts, because a stopped
// or paused node runs every command that queued meanwhile at once when it resumes) and
// every daemon's info-or-louder log lines (lines/s over 10 s windows). Oneshot runs last
// 0.3-2 s and start again 0.1-1 s after each ends: their own acquire/release cycles are
// work, not a storm, and are paced so as not to hide one.
//
// Prints one line:
//   handovers= faults= overlaps= max_leaderless_ms= max_cmds_per_s= max_log_lines_per_s= seed=
// and exits 1 on any overlap, a storm bound exceeded, or a key left without a TTL.

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/fault_proxy.h"
#include "support/records.h"
#include "support/redis_server.h"
#include "support/storm_meter.h"
#include "support/task_process.h"

namespace {

using namespace std::chrono_literals;
using redisgo::testing::FaultProxy;
using redisgo::testing::Freeze;
using redisgo::testing::RedisServer;
using redisgo::testing::TaskProcess;
using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

constexpr Millis kExpire{1500};
constexpr double kMaxCmdsPerDaemonPerNode = redisgo::testing::StormMeter::kMaxCommandsPerDaemonPerNode;
constexpr double kMaxLogLinesPerSecond = redisgo::testing::StormMeter::kMaxLogLinesPerSecond;

struct Args {
  int duration_s = 60;
  std::uint64_t seed = 1;
  int nodes = 3;
  int daemons = 4;
  int limit = 1;  ///< [task] limit: a semaphore of this many slots (records checked per slot)
  bool verbose = false;
  bool fair = true;  ///< the waiting line (fair = true, the default); --unfair: fair = false
  std::string keep;  ///< keep the daemons' logs and the records here (for a failure's post-mortem)
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "redisgo_soak: " << why
            << "\nusage: redisgo_soak --duration SECONDS --seed N [--nodes 1|3] [--daemons K] [--limit N] [--unfair] [--verbose] [--keep DIR]\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + arg);
      return argv[++i];
    };
    if (arg == "--duration") a.duration_s = std::stoi(value());
    else if (arg == "--seed") a.seed = std::stoull(value());
    else if (arg == "--nodes") a.nodes = std::stoi(value());
    else if (arg == "--daemons") a.daemons = std::stoi(value());
    else if (arg == "--limit") a.limit = std::stoi(value());
    else if (arg == "--verbose") a.verbose = true;
    else if (arg == "--keep") a.keep = value();
    else if (arg == "--unfair") a.fair = false;
    else usage("unknown option " + arg);
  }
  if (a.nodes != 1 && a.nodes != 3) usage("--nodes must be 1 or 3");
  if (a.daemons < 2) usage("--daemons must be at least 2");
  if (a.limit < 1 || a.limit >= a.daemons) usage("--limit must be at least 1 and fewer than --daemons");
  if (a.duration_s < 5) usage("--duration must be at least 5");
  return a;
}

long long realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

/// A bounded redis-cli call (a paused server must not hang the soak); "" on failure.
std::string cli(int port, const std::string& args) {
  std::string cmd = "timeout 1 redis-cli -h 127.0.0.1 -p " + std::to_string(port) + " " + args + " 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

long long total_commands(int port) {
  const std::string info = cli(port, "INFO stats");
  const std::string tag = "total_commands_processed:";
  auto at = info.find(tag);
  return at == std::string::npos ? -1 : std::stoll(info.substr(at + tag.size()));
}

/// Every live descendant of `root` (from /proc), root included.
std::vector<pid_t> process_tree(pid_t root) {
  std::map<pid_t, pid_t> parent;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    pid_t ppid;
    if (rest >> state >> ppid) parent[std::stoi(name)] = ppid;
  }
  std::vector<pid_t> tree{root};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    for (const auto& [pid, ppid] : parent) {
      if (ppid == tree[i]) tree.push_back(pid);
    }
  }
  return tree;
}

struct Daemon {
  int index = 0;
  bool supervise = false;
  std::string config;
  std::string log;                         // stderr of the current process
  std::unique_ptr<TaskProcess> process;
  std::optional<Clock::time_point> restart_at;
  std::vector<std::string> logs;           // every stderr file it had, for the meter
};

class Soak {
 public:
  explicit Soak(Args args) : args_(args), rng_(args.seed) {}
  int run();

 private:
  void start_daemon(Daemon& d);
  void schedule_fault();
  void tick_storm();
  int check_records();
  int check_keys();
  Millis uniform(Millis lo, Millis hi) {
    return Millis(std::uniform_int_distribution<long long>(lo.count(), hi.count())(rng_));
  }
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  void note(const std::string& what) {
    ++faults_;
    const std::string line = std::to_string(realtime_ns()) + " " + what;
    fault_log_ += line + "\n";
    if (args_.verbose) std::cerr << "soak: " << line << "\n";
  }

  Args args_;
  std::mt19937_64 rng_;
  redisgo::testing::TempDir dir_;
  std::string records_;
  std::string child_binary_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::vector<std::unique_ptr<FaultProxy>>> proxies_;  // [daemon][node]
  std::vector<Daemon> daemons_;
  // Heals due: (when, action). Faults overlap in time.
  std::vector<std::pair<Clock::time_point, std::function<void()>>> heals_;
  std::vector<Freeze> freezes_;
  std::vector<Clock::time_point> node_data_loss_;  // last time a node lost (or may lose) its data
  std::vector<bool> node_down_;
  std::vector<Clock::time_point> paused_until_;  // CLIENT PAUSE: scripts queue until then
  int faults_ = 0;
  int runs_ = 0;
  std::string fault_log_;  // "<realtime ns> <fault>" lines
  // Storm sampling.
  std::vector<long long> last_cmds_;          // each node's counter at its last answered INFO
  std::vector<Clock::time_point> last_times_;  // when that INFO was answered
  Clock::time_point last_sample_;
  double max_cmds_ = 0;
  std::map<int, std::deque<std::pair<Clock::time_point, std::size_t>>> log_samples_;
  double max_lines_ = 0;
  std::string worst_lines_;
};

void Soak::start_daemon(Daemon& d) {
  d.log = "daemon" + std::to_string(d.index) + "-" + std::to_string(++runs_);
  std::vector<std::string> argv{"task", "--config", d.config};
  if (!d.supervise) {
    argv.insert(argv.end(), {"--", child_binary_, records_, std::to_string(uniform(300ms, 2000ms).count())});
  }
  d.process = std::make_unique<TaskProcess>(dir_.path(), d.log, argv);
  d.logs.push_back(dir_.path() + "/" + d.log + ".err");
  d.restart_at.reset();
}

void Soak::schedule_fault() {
  const auto now = Clock::now();
  const int kind = static_cast<int>(pick(8));
  Daemon& d = daemons_[pick(daemons_.size())];
  const std::size_t n = pick(nodes_.size());
  switch (kind) {
    case 0: {  // SIGKILL a daemon
      if (!d.process || !d.process->running()) return;
      note("SIGKILL daemon " + std::to_string(d.index));
      d.process->signal(SIGKILL);
      d.restart_at = now + uniform(200ms, 1000ms);
      return;
    }
    case 1: {  // SIGSTOP the daemon alone
      if (!d.process || !d.process->running()) return;
      const pid_t pid = d.process->pid();
      note("SIGSTOP daemon " + std::to_string(d.index));
      ::kill(pid, SIGSTOP);
      heals_.emplace_back(now + uniform(300ms, 2500ms), [pid] { ::kill(pid, SIGCONT); });
      return;
    }
    case 2: {  // SIGSTOP the whole tree, past the TTL
      if (!d.process || !d.process->running()) return;
      const pid_t pid = d.process->pid();
      auto tree = process_tree(pid);
      note("SIGSTOP tree of daemon " + std::to_string(d.index) + " (" + std::to_string(tree.size()) + " processes)");
      const long long from = realtime_ns();
      for (pid_t p : tree) ::kill(p, SIGSTOP);
      const auto hold = uniform(kExpire, kExpire * 2);
      freezes_.push_back({pid, from, 0});
      const std::size_t idx = freezes_.size() - 1;
      heals_.emplace_back(now + hold, [this, tree, idx] {
        freezes_[idx].to_ns = realtime_ns();
        for (pid_t p : tree) ::kill(p, SIGCONT);
      });
      return;
    }
    case 3: {  // a link: latency, blackhole or reset
      auto& proxy = *proxies_[static_cast<std::size_t>(d.index)][n];
      const int mode = static_cast<int>(pick(3));
      if (mode == 0) {
        const auto ms = uniform(20ms, 400ms);
        note("latency " + std::to_string(ms.count()) + " ms on link " + std::to_string(d.index) + "->" + std::to_string(n));
        proxy.latency(ms);
      } else if (mode == 1) {
        note("blackhole link " + std::to_string(d.index) + "->" + std::to_string(n));
        proxy.blackhole();
      } else {
        note("reset link " + std::to_string(d.index) + "->" + std::to_string(n));
        proxy.reset();
      }
      heals_.emplace_back(now + uniform(300ms, 3000ms), [&proxy] { proxy.pass(); });
      return;
    }
    case 4: {  // Redis paused
      if (node_down_[n]) return;
      note("SIGSTOP redis " + std::to_string(n));
      nodes_[n]->pause();
      heals_.emplace_back(now + uniform(300ms, 2000ms), [this, n] { nodes_[n]->resume(); });
      return;
    }
    case 5: {  // Redis killed and started empty at once: the restart guard (on by default)
               // must hold every node, any number of them, at any moment
      if (node_down_[n]) return;
      note("SIGKILL redis " + std::to_string(n) + ", back empty soon");
      nodes_[n]->kill();
      node_down_[n] = true;
      node_data_loss_[n] = Clock::time_point::max();  // until it is back
      heals_.emplace_back(now + uniform(100ms, 1500ms), [this, n] {
        nodes_[n]->start();
        node_down_[n] = false;
        node_data_loss_[n] = Clock::now();
      });
      return;
    }
    case 6: {  // CLIENT PAUSE WRITE: scripts wait, the connection and INFO stay alive
      if (node_down_[n]) return;
      const auto ms = uniform(300ms, 2000ms);
      note("CLIENT PAUSE " + std::to_string(ms.count()) + " ms on redis " + std::to_string(n));
      cli(nodes_[n]->port(), "CLIENT PAUSE " + std::to_string(ms.count()) + " WRITE");
      paused_until_[n] = Clock::now() + ms;
      return;
    }
    case 7: {  // CLIENT KILL
      if (node_down_[n]) return;
      note("CLIENT KILL on redis " + std::to_string(n));
      cli(nodes_[n]->port(), "CLIENT KILL TYPE normal");
      return;
    }
    default: return;
  }
}

void Soak::tick_storm() {
  const auto now = Clock::now();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (Clock::now() - last_times_[i] < 1s) continue;  // rates over a second at least
    // Under CLIENT PAUSE WRITE a node still answers INFO, but the scripts queue until the
    // pause ends and then all run at once: like a stopped node, it is sampled again only
    // once that backlog has run, over the whole span.
    if (Clock::now() < paused_until_[i] + 200ms) continue;
    // Each node's rate over the time between its own answered samples: a node that did
    // not answer (SIGSTOP) keeps its last sample, because when it resumes it
    // runs at once every command that queued while it was stopped, and those were sent
    // over the whole span. The nodes are read one after another, and one that does not
    // answer holds up the next for the client's timeout: hence a time per node.
    if (node_down_[i]) {  // killed: it comes back empty, with a counter started again
      last_cmds_[i] = -1;
      continue;
    }
    const long long c = total_commands(nodes_[i]->port());
    const auto at = Clock::now();
    if (c < 0) continue;
    const double secs = std::chrono::duration<double>(at - last_times_[i]).count();
    if (last_cmds_[i] >= 0 && c >= last_cmds_[i] && secs > 0) {
      const double per_daemon = static_cast<double>(c - last_cmds_[i] - 1) / secs / static_cast<double>(daemons_.size());
      if (args_.verbose && per_daemon > 0.5 * kMaxCmdsPerDaemonPerNode) {
        std::cerr << "soak: node " << i << ": " << per_daemon << " commands/s per daemon in the last " << secs << " s\n"
                  << cli(nodes_[i]->port(), "INFO commandstats") << cli(nodes_[i]->port(), "CLIENT LIST");
      }
      if (args_.verbose) cli(nodes_[i]->port(), "CONFIG RESETSTAT");  // the next dump covers one window
      max_cmds_ = std::max(max_cmds_, per_daemon);
    }
    last_cmds_[i] = args_.verbose ? total_commands(nodes_[i]->port()) : c;
    last_times_[i] = Clock::now();
  }
  if (std::chrono::duration<double>(now - last_sample_).count() < 1.0) return;
  last_sample_ = now;
  // Log lines: per daemon (all the processes it had, a restart does not reset it), over
  // the last 10 s.
  for (auto& d : daemons_) {
    std::size_t loud = 0;
    for (const auto& path : d.logs) loud += redisgo::testing::count_loud_lines(redisgo::testing::read_file(path));
    auto& q = log_samples_[d.index];
    q.emplace_back(now, loud);
    // The oldest sample kept is the newest one at least 10 s old: windows of 10 s or a
    // little more (samples come about once a second).
    while (q.size() > 2 && now - q[1].first >= 10s) q.pop_front();
    const double span = std::chrono::duration<double>(q.back().first - q.front().first).count();
    if (span >= 10.0) {
      const double rate = static_cast<double>(q.back().second - q.front().second) / span;
      if (rate > max_lines_) {
        max_lines_ = rate;
        worst_lines_ = "daemon " + std::to_string(d.index);
      }
    }
  }
}

int Soak::run() {
  child_binary_ = redisgo::testing::recorder_binary();
  if (::access(child_binary_.c_str(), X_OK) != 0) usage("missing " + child_binary_ + " (build target redisgo_soak_child)");
  records_ = dir_.path() + "/records";
  for (int i = 0; i < args_.nodes; ++i) nodes_.push_back(std::make_unique<RedisServer>());
  node_data_loss_.assign(nodes_.size(), Clock::time_point{});
  node_down_.assign(nodes_.size(), false);
  paused_until_.assign(nodes_.size(), Clock::time_point{});
  const int supervise = (args_.daemons + 1) / 2;
  for (int d = 0; d < args_.daemons; ++d) {
    proxies_.emplace_back();
    std::string list;
    for (auto& n : nodes_) {
      proxies_.back().push_back(std::make_unique<FaultProxy>(n->port()));
      list += (list.empty() ? "\"" : ", \"") + proxies_.back().back()->address() + "\"";
    }
    Daemon daemon;
    daemon.index = d;
    daemon.supervise = d < supervise;
    std::ostringstream cfg;
    cfg << "[redis]\n" << (args_.nodes == 1 ? "host = " + list : "nodes = [" + list + "]") << "\n"
        << "key = \"soak\"\nexpire = \"1500ms\"\ncron = \"300ms\"\nio_timeout = \"250ms\"\nconnect_timeout = \"250ms\"\n"
        << "fair = " << (args_.fair ? "true" : "false") << "\n"
        << "[backoff]\nstrategy = \"exponential\"\ninitial = \"30ms\"\nmax = \"500ms\"\n"
        << "[task]\nmode = \"" << (daemon.supervise ? "supervise" : "oneshot") << "\"\nkill_grace = \"300ms\"\n"
        << "limit = " << args_.limit << "\n";
    if (daemon.supervise) {
      cfg << "command = [\"" << child_binary_ << "\", \"" << records_ << "\", \"0\"]\n"
          << "restart = \"always\"\nrestart_delay = \"200ms\"\nstep_down_hold = \"1s\"\n";
    }
    cfg << "[log]\nlevel = \"" << (args_.verbose ? "debug" : "info") << "\"\n";
    daemon.config = dir_.write("daemon" + std::to_string(d) + ".toml", cfg.str());
    daemons_.push_back(std::move(daemon));
  }
  for (auto& d : daemons_) start_daemon(d);
  last_cmds_.assign(nodes_.size(), -1);
  last_times_.assign(nodes_.size(), Clock::now());
  last_sample_ = Clock::now();
  tick_storm();

  const auto end = Clock::now() + std::chrono::seconds(args_.duration_s);
  auto next_fault = Clock::now() + 2s;  // let a leader settle first
  while (Clock::now() < end) {
    const auto now = Clock::now();
    // Heals that are due.
    for (auto it = heals_.begin(); it != heals_.end();) {
      if (it->first <= now) {
        auto heal = std::move(it->second);
        it = heals_.erase(it);
        heal();
      } else {
        ++it;
      }
    }
    // Oneshot runs are started again as each ends; killed daemons after their delay.
    for (auto& d : daemons_) {
      if (d.process && !d.process->running() && !d.restart_at) {
        d.restart_at = now + (d.supervise ? uniform(200ms, 1000ms) : uniform(100ms, 1000ms));
      }
      if (d.restart_at && now >= *d.restart_at && (!d.process || !d.process->running())) start_daemon(d);
    }
    if (now >= next_fault) {
      schedule_fault();
      next_fault = now + uniform(300ms, 1500ms);
    }
    tick_storm();
    std::this_thread::sleep_for(20ms);  // the schedule's own tick
  }
  // Heal everything, stop every daemon, let the children's last records land.
  for (auto& [when, heal] : heals_) heal();
  heals_.clear();
  for (auto& d : daemons_) {
    if (d.process && d.process->running()) d.process->signal(SIGTERM);
  }
  for (auto& d : daemons_) {
    if (d.process) d.process->wait_for(10s);
  }
  tick_storm();

  int bad = check_records();
  bad += check_keys();
  if (!args_.keep.empty()) {
    // The daemons' logs, the records and the faults with their times, for a post-mortem.
    std::filesystem::create_directories(args_.keep);
    std::ofstream(args_.keep + "/faults") << fault_log_;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      if (e.is_regular_file()) {
        std::filesystem::copy_file(e.path(), args_.keep + "/" + e.path().filename().string(),
                                   std::filesystem::copy_options::overwrite_existing);
      }
    }
    std::cerr << "soak: logs, records and faults kept in " << args_.keep << "\n";
  }
  const bool storm = max_cmds_ > kMaxCmdsPerDaemonPerNode || max_lines_ > kMaxLogLinesPerSecond;
  if (max_lines_ > kMaxLogLinesPerSecond) std::cerr << "soak: log bound exceeded by " << worst_lines_ << "\n";
  return (bad > 0 || storm) ? 1 : 0;
}

int Soak::check_records() {
  const auto check = redisgo::testing::check_records(records_, freezes_, args_.limit);
  for (const auto& p : check.problems) std::cerr << "soak: " << p << "\n";
  const int handovers = check.children.empty() ? 0 : static_cast<int>(check.children.size()) - 1;
  std::printf("handovers=%d faults=%d overlaps=%d max_leaderless_ms=%lld max_cmds_per_s=%.1f max_log_lines_per_s=%.2f "
              "seed=%llu\n",
              handovers, faults_, check.overlaps, check.max_gap_ns / 1000000, max_cmds_, max_lines_,
              static_cast<unsigned long long>(args_.seed));
  std::fflush(stdout);
  if (check.children.empty()) {
    std::cerr << "soak: no child ever ran\n";
    return 1;
  }
  return check.overlaps;
}

int Soak::check_keys() {
  // Whatever is left behind expires: the lease within its TTL, the fence counter with one.
  int bad = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (node_down_[i]) continue;
    const std::string lease = cli(nodes_[i]->port(), "PTTL soak");
    const std::string fence = cli(nodes_[i]->port(), "PTTL {soak}:fence");
    const long long lease_ms = lease.empty() ? -3 : std::stoll(lease);
    const long long fence_ms = fence.empty() ? -3 : std::stoll(fence);
    if (lease_ms == -1 || lease_ms > kExpire.count()) {
      std::cerr << "soak: node " << i << ": the lease key has PTTL " << lease_ms << "\n";
      ++bad;
    }
    if (fence_ms == -1) {
      std::cerr << "soak: node " << i << ": the fence counter has no TTL\n";
      ++bad;
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  // Whatever signal the caller sends, the temp dir and every process started are
  // cleaned up by destructors only on a normal return: ignore SIGPIPE, run, return.
  ::signal(SIGPIPE, SIG_IGN);
  Soak soak(parse(argc, argv));
  return soak.run();
}
