#include "support/task_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/redis_server.h"

namespace redisgo::testing {
namespace {

int decode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TaskProcess::TaskProcess(const std::string& dir, const std::string& name, const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env, const std::string& program)
    : out_path_(dir + "/" + name + ".out"), err_path_(dir + "/" + name + ".err") {
  std::string binary = program.empty() ? task_binary() : program;
  std::vector<std::string> argv_s{binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && env.count(kv.substr(0, eq))) continue;
    env_s.push_back(kv);
  }
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || err < 0) throw std::runtime_error("cannot open output files in " + dir);
  pid_ = ::fork();
  if (pid_ == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(out, 1);
    ::dup2(err, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::execve(binary.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out);
  ::close(err);
  if (pid_ < 0) throw std::runtime_error("fork failed");
}

TaskProcess::~TaskProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool TaskProcess::running() {
  if (code_ || pid_ <= 0) return false;
  int status;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    code_ = decode(status);
    return false;
  }
  return true;
}

std::optional<int> TaskProcess::wait_for(std::chrono::milliseconds timeout) {
  wait_until([&] { return !running(); }, timeout);
  return code_;
}

void TaskProcess::signal(int sig) {
  if (running()) ::kill(pid_, sig);
}

std::string TaskProcess::out() const { return read_file(out_path_); }
std::string TaskProcess::err() const { return read_file(err_path_); }

bool TaskProcess::wait_for_log(const std::string& text, std::chrono::milliseconds timeout) {
  return wait_until([&] { return err().find(text) != std::string::npos; }, timeout);
}

RunResult run_task_binary(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                          const std::map<std::string, std::string>& env) {
  TempDir dir;
  TaskProcess p(dir.path(), "run", args, env);
  RunResult r;
  auto code = p.wait_for(timeout);
  r.code = code.value_or(-1);
  r.out = p.out();
  r.err = p.err();
  return r;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

std::vector<std::vector<std::string>> markdown_table(const std::string& text, const std::string& header) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line.rfind(header, 0) == 0;
      continue;
    }
    if (line.rfind("|", 0) != 0) break;
    if (line.rfind("| ---", 0) == 0) continue;
    std::vector<std::string> cells;
    std::istringstream cols(line.substr(1));
    for (std::string cell; std::getline(cols, cell, '|');) {
      const auto first = cell.find_first_not_of(' ');
      const auto last = cell.find_last_not_of(' ');
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
    }
    rows.push_back(cells);
  }
  return rows;
}

std::vector<std::string> quoted_paths(const std::string& cell) {
  std::vector<std::string> out;
  for (auto open = cell.find("`/"); open != std::string::npos; open = cell.find("`/", open + 1)) {
    const auto close = cell.find('`', open + 1);
    if (close == std::string::npos) break;
    out.push_back(cell.substr(open + 1, close - open - 1));
    open = close;
  }
  return out;
}

std::string staged_install_command(const std::string& build, const std::string& destdir, const std::string& prefix,
                                   const std::string& manifest_copy) {
  std::string script = "env DESTDIR='" + destdir + "' cmake --install '" + build + "' --prefix '" + prefix + "'";
  if (!manifest_copy.empty()) script += " && cp '" + build + "/install_manifest.txt' '" + manifest_copy + "'";
  return "flock '" + build + "/.install.lock' sh -c \"" + script + "\"";
}

bool process_alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

pid_t keeper_of(pid_t daemon) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const std::string stat = read_file((e.path() / "stat").string());
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    pid_t ppid;
    if (rest >> state >> ppid && ppid == daemon && read_file((e.path() / "comm").string()) == "redisgo-keeper\n") {
      return std::stoi(name);
    }
  }
  return -1;
}

ChildRecord parse_child_record(const std::string& line) {
  ChildRecord r;
  std::istringstream in(line);
  in >> r.pid >> r.token;
  return r;
}

std::string interval_job(const std::string& log, const std::string& seconds) {
  return "echo \"start $(date +%s%N) $REDISGO_TASK_TOKEN\" >> " + log + "; sleep " + seconds +
         "; echo \"end $(date +%s%N)\" >> " + log;
}

void expect_exclusive_intervals(const std::string& log_text, std::size_t jobs) {
  auto events = split_lines(log_text);
  ASSERT_EQ(events.size(), 2 * jobs) << log_text;
  std::vector<std::pair<long long, std::string>> timeline;
  std::vector<std::pair<long long, unsigned long long>> starts;
  for (const auto& e : events) {
    std::istringstream in(e);
    std::string kind;
    long long t = 0;
    in >> kind >> t;
    timeline.emplace_back(t, kind);
    if (kind == "start") {
      unsigned long long token = 0;
      in >> token;
      starts.emplace_back(t, token);
    }
  }
  std::sort(timeline.begin(), timeline.end());
  for (std::size_t i = 0; i < timeline.size(); ++i) {
    ASSERT_EQ(timeline[i].second, i % 2 == 0 ? "start" : "end") << "overlap at event " << i << "\n" << log_text;
  }
  std::sort(starts.begin(), starts.end());
  for (std::size_t i = 1; i < starts.size(); ++i) EXPECT_GT(starts[i].second, starts[i - 1].second) << log_text;
}

ConfigSpec fault_config_spec() {
  ConfigSpec spec;
  spec.mode = "supervise";
  spec.expire = "1500ms";
  spec.cron = "300ms";
  spec.kill_grace = "400ms";
  spec.extra_task = "restart = \"always\"\nrestart_delay = \"100ms\"\n";
  return spec;
}

ConfigSpec leader_standby_spec(const std::string& extra_task) {
  ConfigSpec s;
  s.mode = "supervise";
  s.expire = "1500ms";
  s.cron = "300ms";
  s.kill_grace = "300ms";
  s.io_timeout = "250ms";
  s.log_level = "info";
  s.extra_task = "restart = \"always\"\nrestart_delay = \"100ms\"\n" + extra_task;
  return s;
}

void expect_exclusive_records(const std::string& records, const std::vector<Freeze>& freezes, int limit) {
  auto check = check_records(records, freezes, limit);
  for (const auto& p : check.problems) ADD_FAILURE() << p;
  EXPECT_EQ(check.overlaps, 0);
}

void expect_child_stopped_before_lease_ends(const std::string& dir, const std::string& config,
                                            const std::function<void()>& fault, std::chrono::milliseconds fault_for,
                                            const std::function<void()>& heal) {
  using namespace std::chrono_literals;
  const std::string pids = dir + "/pids";
  TaskProcess p(dir, "leader",
                {"task", "--config", config, "--", "/bin/sh", "-c",
                 "echo \"$$ $REDISGO_TASK_TOKEN\" >> " + pids + "; exec sleep 60"});
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(pids)).size() == 1; }, 10s)) << p.err();
  // At least one renewal, so the check covers a renewed lease, not just the first.
  ASSERT_TRUE(p.wait_for_log("lease renewed", 5s)) << p.err();
  auto first = parse_child_record(split_lines(read_file(pids))[0]);

  auto fault_at = std::chrono::steady_clock::now();
  fault();
  ASSERT_TRUE(wait_until([&] { return !process_alive(first.pid); }, 5s)) << p.err();
  auto dead_after = std::chrono::steady_clock::now() - fault_at;
  // The last renewal Redis confirmed was sent before the fault, so the lease there ends
  // no earlier than that + expire (1500 ms): the child must be dead before then. Measured
  // 1.005-1.009 s under ASan: the keeper's SIGKILL at its deadline, expire x (1 - drift)
  // after that renewal's send, up to a cron (300 ms) before the fault.
  EXPECT_LT(dead_after, 1500ms) << p.err();
  std::cout << "child stopped " << std::chrono::duration_cast<std::chrono::milliseconds>(dead_after).count()
            << " ms after the fault (TTL 1500 ms)\n";
  std::this_thread::sleep_for(fault_for);  // the fault's duration, not a synchronisation
  heal();
  ASSERT_TRUE(wait_until([&] { return split_lines(read_file(pids)).size() >= 2; }, 10s)) << p.err();
  EXPECT_GT(parse_child_record(split_lines(read_file(pids))[1]).token, first.token);
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_for(10s), 0) << p.err();
}

std::string make_config(const ConfigSpec& spec) {
  std::ostringstream s;
  s << "[redis]\n" << spec.nodes << "\nkey = \"" << spec.key << "\"\nexpire = \"" << spec.expire << "\"\ncron = \""
    << spec.cron << "\"\nconnect_timeout = \"" << spec.io_timeout << "\"\nio_timeout = \"" << spec.io_timeout << "\"\nrestart_guard = " << (spec.restart_guard ? "true" : "false") << "\n"
    << spec.extra_redis << "\n"
    << "[backoff]\n" << spec.backoff << "\n"
    << "[task]\nmode = \"" << spec.mode << "\"\nkill_grace = \"" << spec.kill_grace << "\"\n" << spec.extra_task << "\n"
    << "[log]\nlevel = \"" << spec.log_level << "\"\n";
  return s.str();
}

}  // namespace redisgo::testing
