// systemd notification through a real unix datagram socket (path and abstract), as
// systemd itself provides it: READY / STATUS / STOPPING text, the watchdog rate, and the
// silence of a stuck main loop.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/notify_socket.h"
#include "systemd/notify.h"
#include "util/clock.h"

namespace systemd_notify_test {

using namespace std::chrono_literals;
using redisgo::systemd::Notifier;
using redisgo::systemd::Watchdog;
using redisgo::testing::NotifySocket;
using redisgo::testing::ScopedEnvVars;
using Strings = std::vector<std::string>;

namespace {

std::size_t thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

std::size_t count(const Strings& v, const std::string& text) {
  std::size_t n = 0;
  for (const auto& s : v) n += s == text ? 1 : 0;
  return n;
}

// Env for one test: the socket, and no watchdog unless the test asks for one.
void point_at(ScopedEnvVars& env, const NotifySocket& sock) {
  env.set("NOTIFY_SOCKET", sock.address()).set("WATCHDOG_USEC", std::nullopt).set("WATCHDOG_PID", std::nullopt);
}

// Lifecycle messages as the daemon sends them. A unix datagram is queued in the
// receiver when sendmsg returns, so drain() right after sees everything: no waiting.
void check_lifecycle(NotifySocket::Kind kind) {
  NotifySocket sock(kind);
  ScopedEnvVars env;
  point_at(env, sock);
  Notifier n;
  ASSERT_TRUE(n.enabled());
  EXPECT_FALSE(n.watchdog_interval());

  n.ready();
  n.status("standby");
  n.status("leader token=42");
  // A newline inside a reason must not become a second assignment.
  n.status("lease lost: renewal failed\nREADY=1");
  n.stopping();
  EXPECT_EQ(sock.drain(), (Strings{"READY=1", "STATUS=standby", "STATUS=leader token=42",
                                   "STATUS=lease lost: renewal failed READY=1", "STOPPING=1"}));
  for (const auto& d : sock.history()) EXPECT_EQ(d.pid, ::getpid()) << d.text;
}

}  // namespace

TEST(SystemdNotify, PathSocketGetsLifecycleMessages) { check_lifecycle(NotifySocket::Kind::kPath); }

TEST(SystemdNotify, AbstractSocketGetsLifecycleMessages) {
  NotifySocket probe(NotifySocket::Kind::kAbstract);
  ASSERT_EQ(probe.address()[0], '@');
  check_lifecycle(NotifySocket::Kind::kAbstract);
}

TEST(SystemdNotify, NothingWhenUnset) {
  NotifySocket sock;
  ScopedEnvVars env;
  env.set("NOTIFY_SOCKET", std::nullopt).set("WATCHDOG_USEC", "200000").set("WATCHDOG_PID", std::nullopt);
  Notifier n;
  EXPECT_FALSE(n.enabled());
  EXPECT_FALSE(n.watchdog_interval()) << "no watchdog without a socket to ping";
  n.ready();
  n.status("standby");
  n.watchdog();
  n.stopping();
  auto before = thread_count();
  {
    Watchdog w(n);
    EXPECT_FALSE(w.period());
    EXPECT_EQ(thread_count(), before) << "no watchdog thread without a watchdog";
    w.heartbeat();
  }
  EXPECT_TRUE(sock.drain().empty());

  env.set("NOTIFY_SOCKET", "");
  EXPECT_FALSE(Notifier().enabled()) << "empty counts as unset";
}

TEST(SystemdNotify, WatchdogOnlyForOurPid) {
  NotifySocket sock;
  ScopedEnvVars env;
  point_at(env, sock);
  env.set("WATCHDOG_USEC", "200000");
  EXPECT_EQ(Notifier().watchdog_interval(), std::chrono::microseconds(200000));

  env.set("WATCHDOG_PID", std::to_string(::getpid()));
  EXPECT_EQ(Notifier().watchdog_interval(), std::chrono::microseconds(200000));

  // Inherited from a watched parent: not ours to ping.
  env.set("WATCHDOG_PID", std::to_string(::getppid()));
  Notifier other;
  EXPECT_TRUE(other.enabled());
  EXPECT_FALSE(other.watchdog_interval());
  auto before = thread_count();
  {
    Watchdog w(other);
    EXPECT_FALSE(w.period());
    EXPECT_EQ(thread_count(), before);
  }
  EXPECT_TRUE(sock.drain().empty());

  // The variables stay for the daemon's own later reads (and tests).
  EXPECT_NE(std::getenv("WATCHDOG_USEC"), nullptr);
}

TEST(SystemdNotify, WatchdogPingsAtHalfIntervalWhileMainLoopBeats) {
  NotifySocket sock;
  ScopedEnvVars env;
  point_at(env, sock);
  env.set("WATCHDOG_USEC", "200000");
  Notifier n;
  Watchdog w(n);
  ASSERT_EQ(w.period(), 50ms);
  ASSERT_EQ(w.ping_interval(), 100ms);

  // The main loop beats more often than period(); for 1 s that is ~10 pings (one at
  // start, then every 100 ms). Loose bounds: a loaded machine may delay a few.
  auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 1s) {
    w.heartbeat();
    std::this_thread::sleep_for(20ms);
  }
  auto pings = sock.drain();
  EXPECT_EQ(pings.size(), count(pings, "WATCHDOG=1"));
  EXPECT_GE(pings.size(), 6u);
  EXPECT_LE(pings.size(), 14u);

  // Main loop stuck: at most one more ping (a heartbeat stays fresh for 100 ms), then
  // silence, so systemd's timer runs out.
  auto tail = sock.recv_all(300ms);
  EXPECT_LE(tail.size(), 2u);
  EXPECT_TRUE(sock.recv_all(500ms).empty()) << "pings went on without heartbeats";

  // Recovered loop: it beats again, and pings resume. (It beats on: one beat alone stays
  // fresh for one ping interval, which a loaded machine's ping thread can oversleep; the
  // clean-clone ASan run did.)
  bool resumed = false;
  for (auto until = std::chrono::steady_clock::now() + 5s; !resumed && std::chrono::steady_clock::now() < until;) {
    w.heartbeat();
    for (const auto& m : sock.recv_all(20ms)) resumed = resumed || m == "WATCHDOG=1";
  }
  EXPECT_TRUE(resumed);
}

TEST(SystemdNotify, StaleHeartbeatOnInjectedClockStopsPings) {
  NotifySocket sock;
  ScopedEnvVars env;
  point_at(env, sock);
  env.set("WATCHDOG_USEC", "40000");  // ping every 20 ms
  redisgo::FakeClock clock;
  Notifier n;
  Watchdog w(n, clock);
  ASSERT_EQ(w.period(), 10ms);

  // The fake clock stands still, so the construction-time heartbeat never ages.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sock.wait_for("WATCHDOG=1", 5s)) << i;

  clock.advance(20ms);  // exactly the ping interval: stale
  sock.recv_all(300ms);  // a ping decided just before the advance may still arrive
  EXPECT_TRUE(sock.recv_all(200ms).empty()) << "pinged with a stale heartbeat";

  w.heartbeat();
  EXPECT_TRUE(sock.wait_for("WATCHDOG=1", 5s));
}

TEST(SystemdNotify, WatchdogStopsPromptlyOnDestruction) {
  NotifySocket sock;
  ScopedEnvVars env;
  point_at(env, sock);
  env.set("WATCHDOG_USEC", "60000000");  // ping every 30 s
  Notifier n;
  auto before = thread_count();
  auto start = std::chrono::steady_clock::now();
  std::size_t during = 0;
  {
    Watchdog w(n);
    EXPECT_EQ(w.period(), 15s);
    // Relative counts: a sanitizer runtime may start a helper thread of its own with ours.
    during = thread_count();
    EXPECT_GT(during, before);
    EXPECT_TRUE(sock.wait_for("WATCHDOG=1", 5s)) << "first ping at start";
  }
  // The stop wakes the thread instead of waiting out its sleep (15 s, the period): under
  // 1 ms measured. 10 s is two thirds of the wrong value.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  // A joined thread can linger in /proc/self/task for a moment while the kernel reaps it.
  EXPECT_TRUE(redisgo::testing::wait_until([&] { return thread_count() == during - 1; }, 2s)) << thread_count();
}

}  // namespace systemd_notify_test
