// scripts/cron-example, the wrapper `cmake --install` installs as redisgo_task-cron next to
// the binary: the same crontab line on every host runs the job on one of them; the others
// stay silent (cron mails any output), while real failures stay loud.
// The real script, the real binary (REDISGO_TASK, or found next to the script as
// installed), a real redis-server.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/redis_server.h"
#include "support/task_process.h"

namespace ops_cron_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

const std::string kScript = std::string(REDISGO_SOURCE_DIR) + "/scripts/cron-example";

/// The wrapper's closing line: the last line of the mail.
std::string summary(const std::string& mail) {
  auto lines = split_lines(mail);
  return lines.empty() ? "" : lines.back();
}

/// Checks the closing line of a failure: it starts with `who` (the config, and the key when
/// known), not with the job's first word, and says `what` and `status`.
void expect_summary(const std::string& mail, const std::string& who, const std::string& what, int status) {
  const std::string line = summary(mail);
  EXPECT_EQ(line.rfind("redisgo_task-cron: " + who + " on ", 0), 0) << line << "\n" << mail;
  EXPECT_NE(line.find(what), std::string::npos) << line << "\n" << mail;
  EXPECT_NE(line.find("exit status " + std::to_string(status)), std::string::npos) << line << "\n" << mail;
}

/// How the wrapper is run: by default the source script through /bin/sh with REDISGO_TASK
/// naming the build's binary; `installed` execs that path (as cron does, so the script sees
/// where it is) with no REDISGO_TASK, the way an installed wrapper runs from a crontab.
struct HowRun {
  std::string installed;
  /// Its stderr to a file of its own (Wrapper::err) instead of the mail.
  bool split_stderr = false;
  /// TMPDIR, if not the test's directory.
  std::string tmpdir;

  static HowRun installed_at(std::string path) {
    HowRun how;
    how.installed = std::move(path);
    return how;
  }
  static HowRun stderr_apart() {
    HowRun how;
    how.split_stderr = true;
    return how;
  }
  static HowRun with_tmpdir(std::string dir) {
    HowRun how;
    how.tmpdir = std::move(dir);
    return how;
  }
};

/// The wrapper as cron runs it: stdout and stderr into one file (what cron would mail).
class Wrapper {
 public:
  Wrapper(const TempDir& dir, const std::string& name, const std::vector<std::string>& args, const HowRun& how = {})
      : out_path_(dir.path() + "/" + name + ".mail"), err_path_(dir.path() + "/" + name + ".err") {
    std::vector<std::string> argv_s{"/bin/sh", kScript};
    if (!how.installed.empty()) argv_s = {how.installed};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string bin = "REDISGO_TASK=" + task_binary();
    std::string tmp = "TMPDIR=" + (how.tmpdir.empty() ? dir.path() : how.tmpdir);
    // cron's PATH: not the directory the binary is installed in.
    std::vector<char*> envp{tmp.data(), const_cast<char*>("PATH=/usr/bin:/bin"), nullptr};
    if (how.installed.empty()) envp.insert(envp.begin(), bin.data());
    int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) throw std::runtime_error("cannot open " + out_path_);
    int err = out;
    if (how.split_stderr) err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err < 0) throw std::runtime_error("cannot open " + err_path_);
    pid_ = ::fork();
    if (pid_ == 0) {
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      ::setpgid(0, 0);  // so a test that gives up can kill the wrapper and redisgo_task together
      ::dup2(out, 1);
      ::dup2(err, 2);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(out);
    if (err != out) ::close(err);
  }
  ~Wrapper() {
    if (!code_ && pid_ > 0) {
      ::kill(-pid_, SIGKILL);  // the group this test started (redisgo_task's child dies by PDEATHSIG)
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Wrapper(const Wrapper&) = delete;
  Wrapper& operator=(const Wrapper&) = delete;

  /// Exit status within `timeout` (nullopt if still running).
  std::optional<int> wait_for(std::chrono::milliseconds timeout) {
    wait_until(
        [&] {
          int status;
          if (!code_ && ::waitpid(pid_, &status, WNOHANG) == pid_) {
            code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          }
          return code_.has_value();
        },
        timeout);
    return code_;
  }
  std::string mail() const { return read_file(out_path_); }
  /// Its stderr, with HowRun::split_stderr.
  std::string err() const { return read_file(err_path_); }
  /// Signals the wrapper's shell alone (not redisgo_task or the job).
  void signal(int sig) const { ::kill(pid_, sig); }

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  std::optional<int> code_;
};

class OpsCron : public ::testing::Test {
 protected:
  std::string config(const std::string& log_format = "text") {
    ConfigSpec spec;
    spec.nodes = "host = \"" + redis_.address() + "\"";
    spec.key = test_key();
    spec.expire = "1500ms";
    spec.cron = "300ms";
    spec.kill_grace = "400ms";
    spec.log_level = "info";
    // [log] is the last table make_config writes.
    return dir_.write("cron-" + log_format + ".toml", make_config(spec) + "format = \"" + log_format + "\"\n");
  }
  /// Runs the wrapper to its end (bounded) and returns {status, mail}.
  std::pair<int, std::string> run(const std::vector<std::string>& args, const HowRun& how = {}) {
    Wrapper w(dir_, "run" + std::to_string(++runs_), args, how);
    auto code = w.wait_for(20s);
    return {code.value_or(-1), w.mail()};
  }

  RedisServer redis_;
  TempDir dir_;
  int runs_ = 0;
};

TEST_F(OpsCron, BusyLeaseIsASilentSuccess) {
  for (const std::string format : {"text", "json"}) {
    auto cfg = config(format);
    redis_.cli({"SET", test_key(), "other-host", "PX", "60000"});
    auto [code, mail] = run({"--min-hold", "0", cfg, "--", "/bin/sh", "-c", "echo ran"});
    EXPECT_EQ(code, 0) << format << ": " << mail;
    EXPECT_EQ(mail, "") << format << ": cron would mail this on every host that skipped";
    EXPECT_EQ(redis_.cli({"GET", test_key()}), "other-host");
    redis_.cli({"DEL", test_key()});
  }
}

TEST_F(OpsCron, ARestartGuardRefusalIsNoSilentSkip) {
  // The fixture's server started a moment ago: a Redis that may have lost a lease. Nobody
  // runs the job until its guard opens, and the mail says why.
  ConfigSpec spec;
  spec.nodes = "host = \"" + redis_.address() + "\"";
  spec.key = test_key();
  spec.expire = "5s";
  spec.log_level = "info";
  spec.restart_guard = true;
  const auto cfg = dir_.write("guarded.toml", make_config(spec));
  auto [code, mail] = run({cfg, "--", "/bin/sh", "-c", "echo job-ran"});
  EXPECT_EQ(code, 75) << mail;
  EXPECT_EQ(mail.find("job-ran"), std::string::npos) << mail;
  EXPECT_NE(mail.find("(restart guard); giving up"), std::string::npos) << mail;
  expect_summary(mail, cfg + " (key " + test_key() + ")", "the job was not run", 75);
}

TEST_F(OpsCron, ASkippedOncePerSlotIsMailedWithItsReason) {
  // A server started a moment ago with no persistence, once_per 1 h: it cannot tell "never saw
  // the key" from "restarted empty", so the slot is not run. Unlike a slot that another host
  // ran (silent), nobody runs this one: the mail says so, which slot, and why. (The wrapper
  // runs with --no-wait: first past the lease's own restart guard, one expire long.)
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string info = redis_.cli({"INFO", "server"});
        const auto at = info.find("uptime_in_seconds:");
        return at != std::string::npos && std::atoi(info.c_str() + at + 18) >= 4;
      },
      10s, 100ms));
  for (const std::string format : {"text", "json"}) {
    ConfigSpec spec;
    spec.nodes = "host = \"" + redis_.address() + "\"";
    spec.key = test_key(format);
    spec.log_level = "info";
    spec.restart_guard = true;
    spec.extra_task = "once_per = \"1h\"\n";
    const auto cfg = dir_.write("skipped-" + format + ".toml", make_config(spec) + "format = \"" + format + "\"\n");
    auto [code, mail] = run({cfg, "--", "/bin/sh", "-c", "echo job-ran"});
    EXPECT_EQ(code, 75) << format << ": " << mail;
    EXPECT_EQ(mail.find("job-ran"), std::string::npos) << mail;
    EXPECT_NE(mail.find("once_per slot skipped"), std::string::npos) << format << ": " << mail;
    EXPECT_NE(mail.find("redisgo_task adopt --config " + cfg), std::string::npos) << format << ": " << mail;
    expect_summary(mail, cfg + " (key " + test_key(format) + ")", "the job was not run: its once_per slot of ", 75);
    EXPECT_NE(summary(mail).find("was skipped: only 0 of 1 Redis node(s) count as unclaimed"),
              std::string::npos)
        << format << ": " << summary(mail);
  }
}

TEST_F(OpsCron, TheJobsOutputAndStatusPassThrough) {
  auto cfg = config();
  auto [code, mail] = run({"--min-hold", "0", cfg, "--", "/bin/sh", "-c", "echo job-output; exit 3"});
  EXPECT_EQ(code, 3) << mail;
  EXPECT_NE(mail.find("job-output"), std::string::npos) << mail;
  EXPECT_NE(mail.find("exit status 3"), std::string::npos) << "a failing job must mail even if silent\n" << mail;
  // Which cron job failed: its config and key, not "/bin/sh"; and redisgo_task's log with it.
  expect_summary(mail, cfg + " (key " + test_key() + ")", "the job failed", 3);
  EXPECT_NE(mail.find("child exited status=3"), std::string::npos) << mail;
  EXPECT_EQ(redis_.cli({"EXISTS", test_key()}), "0") << "released";

  std::tie(code, mail) = run({"--min-hold", "0", cfg, "--", "/bin/true"});
  EXPECT_EQ(code, 0) << mail;
}

TEST_F(OpsCron, MinimumHoldMakesALateHostSkip) {
  // Host A's cron fired first and its job is done in a moment; host B's cron fires a
  // little later (clock skew). Without the hold B would find the key free and run again.
  auto cfg = config();
  const std::string log = dir_.path() + "/runs.log";
  const std::string job = "echo run-$REDISGO_TASK_TOKEN >> " + log;
  Wrapper a(dir_, "a", {"--min-hold", "2", cfg, "--", "/bin/sh", "-c", job});
  ASSERT_TRUE(wait_until([&] { return !read_file(log).empty(); }, 10s)) << a.mail();
  EXPECT_FALSE(a.wait_for(0ms).has_value()) << "A must still hold the lease after its job ended\n" << a.mail();
  EXPECT_NE(redis_.cli({"GET", test_key()}), "") << "the lease is still held";

  auto [code_b, mail_b] = run({"--min-hold", "2", cfg, "--", "/bin/sh", "-c", job});
  EXPECT_EQ(code_b, 0) << mail_b;
  EXPECT_EQ(mail_b, "");

  auto code_a = a.wait_for(10s);
  ASSERT_TRUE(code_a.has_value()) << a.mail();
  EXPECT_EQ(*code_a, 0) << a.mail();
  const std::string runs = read_file(log);
  EXPECT_EQ(std::count(runs.begin(), runs.end(), '\n'), 1) << runs;
  EXPECT_EQ(redis_.cli({"EXISTS", test_key()}), "0") << "released after the hold";
}

TEST_F(OpsCron, RedisDownIsLoudOnEveryHost) {
  // Nobody can run the job: each host must say so, not skip it as if another host had.
  auto cfg = config();
  redis_.stop();
  auto [code, mail] = run({"--min-hold", "0", cfg, "--", "/bin/sh", "-c", "echo ran"});
  EXPECT_EQ(code, 69) << mail;  // EX_UNAVAILABLE: not the 75 of a busy lease
  EXPECT_NE(mail.find("Connection refused"), std::string::npos) << mail;
  EXPECT_NE(mail.find("no quorum of Redis nodes (1 unreachable"), std::string::npos) << mail;
  EXPECT_EQ(mail.find("ran\n"), std::string::npos) << mail;
  expect_summary(mail, cfg + " (key " + test_key() + ")", "no quorum of Redis nodes", 69);
}

TEST_F(OpsCron, LeaseLostWhileTheJobRanIsLoud) {
  auto cfg = config();
  const std::string marker = dir_.path() + "/job-started";
  Wrapper w(dir_, "lost", {"--min-hold", "0", cfg, "--", "/bin/sh", "-c", "touch " + marker + "; sleep 30"});
  ASSERT_TRUE(wait_until([&] { return ::access(marker.c_str(), F_OK) == 0; }, 10s))
      << w.mail();
  redis_.stop();
  auto code = w.wait_for(15s);
  ASSERT_TRUE(code.has_value()) << w.mail();
  EXPECT_EQ(*code, 75) << w.mail();
  expect_summary(w.mail(), cfg + " (key " + test_key() + ")", "the lease was lost while the job ran", 75);
}

// The release found another host's lease where ours had stood (the key lost and taken while
// the job ran, unseen by a renewal): the job's own status, and a mail that says so first.
TEST_F(OpsCron, AReleaseThatFoundAnotherHostsLeaseIsMailed) {
  ConfigSpec spec;
  spec.nodes = "host = \"" + redis_.address() + "\"";
  spec.key = test_key();
  spec.expire = "5s";  // no renewal (every 2 s) within the job's few hundred milliseconds
  spec.cron = "2s";
  spec.log_level = "info";
  const auto cfg = dir_.write("taken.toml", make_config(spec));
  const std::string started = dir_.path() + "/started", go = dir_.path() + "/go";
  Wrapper w(dir_, "taken",
            {cfg, "--", "/bin/sh", "-c",
             "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.01; done; echo job-done"});
  ASSERT_TRUE(wait_until([&] { return ::access(started.c_str(), F_OK) == 0; }, 10s)) << w.mail();
  redis_.cli({"SET", test_key(), "other-host:1:00", "PX", "60000"});
  dir_.write("go", "");
  auto code = w.wait_for(15s);
  ASSERT_TRUE(code.has_value()) << w.mail();
  EXPECT_EQ(*code, 0) << "the job ran to its end\n" << w.mail();
  EXPECT_NE(w.mail().find("job-done"), std::string::npos) << w.mail();
  expect_summary(w.mail(), cfg + " (key " + test_key() + ")",
                 "another host took the lease while the job ran (redisgo_task found it at the release): two runs may "
                 "have overlapped",
                 0);
}

TEST_F(OpsCron, BadConfigOrUsageIs78AndLoud) {
  auto bad = dir_.write("bad.toml", "[redis]\nkey = \"k\"\n");
  auto [code, mail] = run({bad, "--", "/bin/true"});
  EXPECT_EQ(code, 78);
  EXPECT_NE(mail.find("redisgo_task: error:"), std::string::npos) << mail;
  expect_summary(mail, bad, "invalid", 78);  // no key: the config could not be read
  std::tie(code, mail) = run({config(), "/bin/true"});  // no --
  EXPECT_EQ(code, 78);
  EXPECT_NE(mail.find("usage:"), std::string::npos) << mail;
  EXPECT_NE(mail.find("exit status 78"), std::string::npos) << mail;
}

TEST_F(OpsCron, HelpIsUsageOnStdoutAndExitsZero) {
  for (const std::string flag : {"--help", "-h"}) {
    Wrapper w(dir_, "help" + flag, {flag}, HowRun::stderr_apart());
    EXPECT_EQ(w.wait_for(10s), 0) << flag << ": " << w.mail() << w.err();
    EXPECT_NE(w.mail().find("usage: redisgo_task-cron [--min-hold SECONDS] CONFIG -- JOB [ARG...]"),
              std::string::npos)
        << flag << ": " << w.mail();
    EXPECT_EQ(w.err(), "") << flag;
  }
  // Asked for or not, a wrong command line stays an error: 78, on stderr, saying what.
  Wrapper w(dir_, "bogus", {"--bogus", config(), "--", "/bin/true"}, HowRun::stderr_apart());
  EXPECT_EQ(w.wait_for(10s), 78) << w.mail() << w.err();
  EXPECT_EQ(w.mail(), "");
  EXPECT_NE(w.err().find("usage:"), std::string::npos) << w.err();
  EXPECT_NE(w.err().find("--bogus"), std::string::npos) << w.err();
}

TEST_F(OpsCron, ASucceedingJobMailsItsOwnOutputOnly) {
  // cron mails what the job prints, as it would without the wrapper; redisgo_task's info
  // lines (contending, acquired, child started, released) are no news on a run that went well.
  for (const std::string format : {"text", "json"}) {
    auto cfg = config(format);
    auto [code, mail] = run({cfg, "--", "/bin/sh", "-c", "echo job-out; echo job-err >&2"});
    EXPECT_EQ(code, 0) << format << ": " << mail;
    EXPECT_EQ(mail, "job-out\njob-err\n") << format;
    std::tie(code, mail) = run({cfg, "--", "/bin/true"});
    EXPECT_EQ(code, 0) << format << ": " << mail;
    EXPECT_EQ(mail, "") << format << ": a job that succeeded and printed nothing must not mail";
  }
}

TEST_F(OpsCron, ASuccessRedisgoTaskWarnedAboutMailsItsLog) {
  // Redlock over three nodes, one down: the job runs on a quorum of two and redisgo_task
  // warns about the third. The job succeeded, but a node is down: worth a mail.
  RedisServer second, third;
  third.stop();
  ConfigSpec spec;
  spec.nodes = "nodes = [\"" + redis_.address() + "\", \"" + second.address() + "\", \"" + third.address() + "\"]";
  spec.key = test_key();
  spec.expire = "1500ms";
  spec.cron = "300ms";
  spec.kill_grace = "400ms";
  spec.log_level = "info";
  const auto cfg = dir_.write("three.toml", make_config(spec));
  auto [code, mail] = run({cfg, "--", "/bin/sh", "-c", "echo job-out"});
  EXPECT_EQ(code, 0) << mail;
  EXPECT_NE(mail.find("job-out"), std::string::npos) << mail;
  EXPECT_NE(mail.find("Connection refused"), std::string::npos) << mail;
  expect_summary(mail, cfg + " (key " + test_key() + ")", "the job succeeded, but redisgo_task logged", 0);
}

TEST_F(OpsCron, TheClosingLineSaysWhatHappened) {
  // A timeout and refused credentials, besides the job's own failure, a lost lease, Redis
  // down and a bad config above: each names the config and key and says it in words.
  auto timed = [&] {
    ConfigSpec spec;
    spec.nodes = "host = \"" + redis_.address() + "\"";
    spec.key = test_key();
    spec.expire = "1500ms";
    spec.cron = "300ms";
    spec.kill_grace = "400ms";
    spec.log_level = "info";
    spec.extra_task = "timeout = \"300ms\"\n";
    return dir_.write("timeout.toml", make_config(spec));
  }();
  auto [code, mail] = run({timed, "--", "/bin/sh", "-c", "echo job-started; exec sleep 10"});
  EXPECT_EQ(code, 124) << mail;
  EXPECT_NE(mail.find("job-started"), std::string::npos) << mail;
  expect_summary(mail, timed + " (key " + test_key() + ")", "the job ran past [task] timeout and was stopped", 124);

  RedisServer guarded(with_password("s3cret"));
  ConfigSpec spec;
  spec.nodes = "host = \"" + guarded.address() + "\"";
  spec.key = test_key();
  spec.log_level = "info";
  const auto refused = dir_.write("refused.toml", make_config(spec));  // no password
  std::tie(code, mail) = run({refused, "--", "/bin/sh", "-c", "echo job-ran"});
  EXPECT_EQ(code, 77) << mail;
  EXPECT_EQ(mail.find("job-ran"), std::string::npos) << mail;
  expect_summary(mail, refused + " (key " + test_key() + ")", "Redis refused the credentials", 77);
}

TEST_F(OpsCron, NoTemporaryDirectoryIsLoud) {
  auto cfg = config();
  const std::string marker = dir_.path() + "/job-ran";
  auto [code, mail] = run({cfg, "--", "/bin/sh", "-c", "touch " + marker}, HowRun::with_tmpdir(dir_.path() + "/missing"));
  EXPECT_EQ(code, 75) << mail;
  expect_summary(mail, cfg + " (key " + test_key() + ")", "cannot create a temporary directory", 75);
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the job must not run when its output could not be kept";
}

TEST_F(OpsCron, ASignalToTheWrapperStopsTheJobAndIsLoud) {
  // The wrapper alone is told to stop (an operator's kill, cron stopping): it passes the
  // signal on to redisgo_task, which stops the job and releases, and then says what it got.
  // An INT goes on as a TERM (a command in a script's background ignores SIGINT).
  for (const int sig : {SIGTERM, SIGINT}) {
    const std::string name = sig == SIGTERM ? "TERM" : "INT";
    SCOPED_TRACE(name);
    auto cfg = config();
    const std::string started = dir_.path() + "/job-started-" + name;
    const std::string ended = dir_.path() + "/job-ended-" + name;
    const std::string job = "touch " + started + "; sleep 30; touch " + ended + "; echo job-out";
    Wrapper w(dir_, "signalled-" + name, {cfg, "--", "/bin/sh", "-c", job});
    ASSERT_TRUE(wait_until([&] { return ::access(started.c_str(), F_OK) == 0; }, 10s)) << w.mail();
    const auto sent = std::chrono::steady_clock::now();
    w.signal(sig);
    auto code = w.wait_for(15s);
    ASSERT_TRUE(code.has_value()) << w.mail();
    // Stopped: the daemon's kill_signal and the job's exit (a sleep dies at SIGTERM), well
    // under a second; waited for, the job would end after its 30 s. 5 s is between the two
    // with room for a loaded machine.
    EXPECT_LT(std::chrono::steady_clock::now() - sent, 5s) << "the job was stopped, not waited for";
    EXPECT_EQ(*code, 128 + sig) << w.mail();
    EXPECT_NE(::access(ended.c_str(), F_OK), 0) << "the job was stopped";
    EXPECT_EQ(w.mail().find("job-out"), std::string::npos) << w.mail();
    EXPECT_NE(w.mail().find("the job was killed by signal 15"), std::string::npos) << w.mail();
    expect_summary(w.mail(), cfg + " (key " + test_key() + ")", "SIG" + name, 128 + sig);
    EXPECT_EQ(redis_.cli({"EXISTS", test_key()}), "0") << "the lease was released";
  }
}

TEST_F(OpsCron, InstalledItRunsTheBinaryNextToIt) {
  // As `cmake --install` lays it out: <prefix>/bin/redisgo_task-cron beside
  // <prefix>/bin/redisgo_task, run from a crontab whose PATH does not include that bin.
  TempDir prefix;
  const std::string bin = prefix.path() + "/bin";
  std::filesystem::create_directories(bin);
  std::filesystem::copy_file(kScript, bin + "/redisgo_task-cron");
  std::filesystem::create_symlink(task_binary(), bin + "/redisgo_task");
  auto cfg = config();
  auto [code, mail] = run({"--min-hold", "0", cfg, "--", "/bin/sh", "-c", "echo ran-$REDISGO_TASK_TOKEN"},
                          HowRun::installed_at(bin + "/redisgo_task-cron"));
  EXPECT_EQ(code, 0) << mail;
  EXPECT_NE(mail.find("ran-"), std::string::npos) << mail;

  // Nothing next to it and nothing on PATH: loud, and says what to do.
  std::filesystem::remove(bin + "/redisgo_task");
  ASSERT_NE(::access("/usr/bin/redisgo_task", F_OK), 0) << "this test assumes no redisgo_task on cron's PATH";
  std::tie(code, mail) = run({"--min-hold", "0", cfg, "--", "/bin/true"}, HowRun::installed_at(bin + "/redisgo_task-cron"));
  EXPECT_EQ(code, 127) << mail;
  EXPECT_NE(mail.find("cannot run 'redisgo_task'"), std::string::npos) << mail;
  EXPECT_NE(mail.find("set REDISGO_TASK"), std::string::npos) << mail;
}

}  // namespace

}  // namespace ops_cron_test
