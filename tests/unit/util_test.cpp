#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "util/clock.h"
#include "util/duration.h"
#include "util/exit_status.h"
#include "util/interrupt.h"
#include "util/timer.h"
#include "util/unique_fd.h"

#include <poll.h>

#include <fcntl.h>

using namespace std::chrono_literals;
using redisgo::format_duration;
using redisgo::parse_duration;

TEST(Duration, ParsesUnitsAndCompounds) {
  EXPECT_EQ(parse_duration("500ms"), 500ms);
  EXPECT_EQ(parse_duration("5s"), 5s);
  EXPECT_EQ(parse_duration("1m"), 1min);
  EXPECT_EQ(parse_duration("1h"), 1h);
  EXPECT_EQ(parse_duration("1m30s"), 90s);
  EXPECT_EQ(parse_duration("0ms"), 0ms);
  // A bare "0" is zero in any unit (the manual's "0 is allowed" was refused as "missing unit").
  EXPECT_EQ(parse_duration("0"), 0ms);
  EXPECT_EQ(parse_duration("000"), 0ms);
}

TEST(Duration, RejectsWithReason) {
  std::string why;
  EXPECT_FALSE(parse_duration("5", &why));
  EXPECT_NE(why.find("missing unit"), std::string::npos) << why;
  EXPECT_FALSE(parse_duration("1s0", &why));  // only a whole "0" goes without a unit
  EXPECT_FALSE(parse_duration("0s0", &why));
  EXPECT_FALSE(parse_duration("5sec", &why));
  EXPECT_NE(why.find("unknown unit 'sec'"), std::string::npos) << why;
  EXPECT_FALSE(parse_duration("-5s", &why));
  EXPECT_NE(why.find("negative"), std::string::npos) << why;
  EXPECT_FALSE(parse_duration("", &why));
  EXPECT_FALSE(parse_duration("5 s", &why));
  EXPECT_FALSE(parse_duration("99999999999999999999h", &why));
  EXPECT_NE(why.find("too large"), std::string::npos) << why;
}

TEST(Duration, FormatsShortestExactForm) {
  EXPECT_EQ(format_duration(1h), "1h");
  EXPECT_EQ(format_duration(90s), "90s");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(0ms), "0ms");
}

TEST(Clock, UntilNeverNegative) {
  redisgo::FakeClock clock;
  auto now = clock.now();
  EXPECT_EQ(redisgo::until(now - 1s, now), 0ms);
  EXPECT_EQ(redisgo::until(now + 1500us, now), 2ms);  // rounds up: never wake early
  clock.advance(5s);
  EXPECT_EQ(clock.now() - now, 5s);
}

TEST(Interrupt, WakesSleepingWaiterAtOnce) {
  redisgo::Interrupt interrupt;
  EXPECT_FALSE(interrupt.wait_for(1ms));
  auto start = std::chrono::steady_clock::now();
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    interrupt.trigger();
  });
  EXPECT_TRUE(interrupt.wait_for(10s));
  t.join();
  // Bounded well below the 10 s timeout: the waiter did not sleep it out.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(interrupt.triggered());
  interrupt.clear();
  EXPECT_FALSE(interrupt.triggered());
}

TEST(UniqueFd, PipeIsCloexecAndClosesOnDestruction) {
  int raw;
  {
    auto [r, w] = redisgo::pipe_cloexec();
    raw = r.get();
    EXPECT_TRUE(fcntl(raw, F_GETFD) & FD_CLOEXEC);
  }
  EXPECT_EQ(fcntl(raw, F_GETFD), -1);
}

TEST(BootTimer, FiresAtAnAbsoluteBootTimeInstant) {
  redisgo::BootTimer timer;
  const auto& clock = redisgo::SystemClock::instance();
  pollfd p{timer.fd(), POLLIN, 0};
  timer.arm(clock.now() + std::chrono::milliseconds(60));
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // not yet
  const auto t0 = clock.now();
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  EXPECT_GE(clock.now() - t0, std::chrono::milliseconds(40));
  timer.clear();
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // consumed
  timer.arm(clock.now() - std::chrono::seconds(1));  // in the past: at once
  EXPECT_EQ(::poll(&p, 1, 100), 1);
  timer.clear();
  timer.arm(clock.now() + std::chrono::milliseconds(20));
  timer.disarm();
  EXPECT_EQ(::poll(&p, 1, 60), 0);
  EXPECT_TRUE(::fcntl(timer.fd(), F_GETFD) & FD_CLOEXEC);
}

TEST(ExitStatus, OneTableFromOutcomeToStatus) {
  using redisgo::exit_status;
  using redisgo::Outcome;
  EXPECT_EQ(exit_status(Outcome::kDone), 0);
  EXPECT_EQ(exit_status(Outcome::kBusy), 75);
  EXPECT_EQ(exit_status(Outcome::kLeaseLost), 75);
  EXPECT_EQ(exit_status(Outcome::kUnavailable), 69);
  EXPECT_EQ(exit_status(Outcome::kRefused), 77);
  EXPECT_EQ(exit_status(Outcome::kBadConfig), 78);
  EXPECT_EQ(exit_status(Outcome::kTimedOut), 124);
  EXPECT_EQ(exit_status(Outcome::kBug), 70);
  EXPECT_EQ(exit_status(Outcome::kOutputFailed), 74);
  EXPECT_EQ(exit_status(Outcome::kCannotRun), 126);
  EXPECT_EQ(exit_status(Outcome::kNotFound), 127);
}
