// Waiting at a terminal (issue 11): with stderr on a pseudo-terminal, a waiter shows one
// line rewritten in place (who holds the key, its TTL, attempts, time waited) and clears
// it when the wait ends; without a terminal it logs an info line when the holder changes
// and otherwise stays quiet.

#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "daemon/waiting.h"
#include "support/redis_server.h"
#include "support/task_process.h"

namespace cli_terminal_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

std::string config_text(const RedisServer& redis) {
  return "[redis]\nhost = \"" + redis.address() +
         "\"\nkey = \"rgt:tty\"\nexpire = \"5s\"\nrestart_guard = false\n[backoff]\ninitial = \"20ms\"\nmax = \"200ms\"\n"
         "[task]\ncommand = [\"/bin/true\"]\n";
}

TEST(CliTerminal, AWaiterShowsOneLineUpdatedInPlaceAndClearsIt) {
  TempDir dir;
  RedisServer redis;
  const auto cfg = dir.write("tty.toml", config_text(redis));
  redis.cli({"SET", "rgt:tty", "other-host:7:feed", "PX", "1500"});

  int master = -1, slave = -1;
  winsize ws{};
  ws.ws_row = 24;
  ws.ws_col = 70;  // narrower than the line: it must be cut, not wrapped
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, &ws), 0);
  const std::string bin = task_binary();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setsid();
    ::dup2(slave, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, STDOUT_FILENO);
    ::close(master);
    ::execl(bin.c_str(), bin.c_str(), "task", "--config", cfg.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(slave);

  // Read the terminal until the daemon exits (it gets the lease once the TTL runs out).
  std::string screen;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  int status = -1;
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      char buf[4096];
      ssize_t n = ::read(master, buf, sizeof buf);
      if (n > 0) screen.append(buf, static_cast<std::size_t>(n));
    }
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL() << "no exit within 10 s; the terminal showed:\n" << screen;
    }
  }
  ::close(master);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << screen;
  EXPECT_NE(screen.find("\r\033[Kwaiting for key=rgt:tty: held by other-host:7:feed, ttl "), std::string::npos)
      << screen;
  for (std::size_t at = screen.find("\r\033[Kwaiting"); at != std::string::npos; at = screen.find("\r\033[Kwaiting", at + 1)) {
    const auto end = screen.find('\r', at + 1);
    EXPECT_LE((end == std::string::npos ? screen.size() : end) - at - 4, 69u) << "wider than the terminal";
  }
  EXPECT_GE(std::count(screen.begin(), screen.end(), '\r'), 3) << "redrawn while the TTL runs: " << screen;
  // Rewritten in place: several updates, no newline between them, and cleared at the end.
  const auto first = screen.find("waiting for key=");
  const auto acquired = screen.find("acquired key=rgt:tty");
  ASSERT_NE(acquired, std::string::npos) << screen;
  const std::string waiting_part = screen.substr(first, acquired - first);
  EXPECT_GE(std::count(waiting_part.begin(), waiting_part.end(), '\r') , 2) << waiting_part;
  EXPECT_EQ(waiting_part.find('\n'), std::string::npos) << "one line, rewritten: " << waiting_part;
  EXPECT_NE(waiting_part.find("\r\033[K", waiting_part.rfind("\r\033[Kwaiting") + 1), std::string::npos)
      << "cleared before the next log line: " << waiting_part;
}

TEST(CliTerminal, WithoutATerminalAWaitIsOneInfoLinePerHolder) {
  TempDir dir;
  RedisServer redis;
  const auto cfg = dir.write("log.toml", config_text(redis));
  redis.cli({"SET", "rgt:tty", "other-host:7:feed", "PX", "1500"});
  auto r = run_task_binary({"task", "--config", cfg}, 10s);
  EXPECT_EQ(r.code, 0) << r.err;
  std::size_t lines = 0;
  for (auto at = r.err.find("waiting for key=rgt:tty: held by other-host:7:feed"); at != std::string::npos;
       at = r.err.find("waiting for key=", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
}

TEST(WaitReporterLine, SaysHolderTtlAttemptsAndTimeWaited) {
  using redisgo::daemon::WaitReporter;
  EXPECT_EQ(WaitReporter::line("k", "h:1:x", 1500, 3, 12'300ms), "waiting for key=k: held by h:1:x, ttl 1500ms; attempt 3, waited 12s");
  EXPECT_EQ(WaitReporter::line("k", "", -1, 1, 0ms), "waiting for key=k: no holder with a quorum; attempt 1, waited 0ms");
  // Too few nodes answered this host: that nobody was named is no news of the key.
  EXPECT_EQ(WaitReporter::line("k", "", -1, 1, 0ms, -1, 0, 0, false),
            "waiting for key=k: holder unknown: too few nodes answer this host; attempt 1, waited 0ms");
  // The restart guard says why nobody can have the lease, and for how long.
  EXPECT_EQ(WaitReporter::line("k", "", -1, 2, 1000ms, 2500),
            "waiting for key=k: a Redis node restarted, no lease granted for 2500ms (restart guard); attempt 2, waited 1s");
  // A holder with a quorum comes first.
  EXPECT_EQ(WaitReporter::line("k", "h", 900, 2, 1000ms, 2500), "waiting for key=k: held by h, ttl 900ms; attempt 2, waited 1s");
}

}  // namespace

}  // namespace cli_terminal_test
