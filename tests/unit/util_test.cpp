#include <gtest/gtest.h>

#include <charconv>
#include <chrono>
#include <cstring>
#include <random>
#include <cmath>
#include <limits>
#include <thread>

#include "util/clock.h"
#include "util/duration.h"
#include "util/exit_status.h"
#include "util/interrupt.h"
#include "util/float_text.h"
#include "util/rounding.h"
#include "util/text.h"
#include "util/timer.h"
#include "util/unique_fd.h"

#include <poll.h>

#include <fcntl.h>

namespace util_test {

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

// util/rounding.h stands in for libm's ceil, llround and pow (the binary no longer loads
// libm.so.6): the same answers wherever the daemon uses them.
TEST(Rounding, AgreesWithLibm) {
  const double xs[] = {0.0, 0.2, 0.5, 0.7, 1.0, 1.5, 2.5, 99.99, 100.0, 150.0000001, 4999.5, -0.5, -1.5, -2.2,
                       -0.2, 123456789.5, 4503599627370495.5, 4503599627370496.0, 9.0e15, -9.0e15};
  for (double x : xs) {
    EXPECT_EQ(redisgo::ceil_to_int(x), static_cast<std::int64_t>(std::ceil(x))) << x;
    EXPECT_EQ(redisgo::round_to_int(x), std::llround(x)) << x;
  }
  // expire × drift_factor, as the config's cross-check computes it.
  EXPECT_EQ(redisgo::ceil_to_int(5000.0 * 0.01), 50);
  EXPECT_EQ(redisgo::ceil_to_int(3333.0 * 0.01), 34);
  for (std::uint64_t n = 0; n < 64; ++n) {
    EXPECT_EQ(redisgo::power(2.0, n), std::pow(2.0, static_cast<double>(n))) << n;
    if (n <= 33) {
      EXPECT_EQ(redisgo::power(1.5, n), std::pow(1.5, static_cast<double>(n))) << n;
    }
    EXPECT_NEAR(redisgo::power(1.1, n), std::pow(1.1, static_cast<double>(n)), 1e-12 * std::pow(1.1, static_cast<double>(n)));
  }
  EXPECT_EQ(redisgo::power(3.0, 0), 1.0);
  EXPECT_EQ(redisgo::power(2.0, 5000), std::numeric_limits<double>::infinity());
  EXPECT_EQ(redisgo::power(2.0, ~std::uint64_t{0}), std::numeric_limits<double>::infinity());
  EXPECT_EQ(redisgo::power(1.0, ~std::uint64_t{0}), 1.0);
}

// util/float_text.h writes doubles as std::to_chars does (the binary no longer links
// libstdc++'s floating_to_chars, whose fesetround made it load libm.so.6): the same text
// for special values, random bit patterns and the metrics' typical values.
TEST(FloatText, WritesWhatToCharsWrites) {
  const auto check = [](double v) {
    if (!std::isfinite(v)) return;
    char buf[512];
    std::string got;
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    redisgo::append_shortest(got, v, redisgo::FloatStyle::kShortest);
    ASSERT_EQ(got, std::string(buf, r.ptr)) << "shortest " << v;
    got.clear();
    r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
    redisgo::append_shortest(got, v, redisgo::FloatStyle::kGeneral);
    ASSERT_EQ(got, std::string(buf, r.ptr)) << "general " << v;
    got.clear();
    r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 3);
    redisgo::append_fixed(got, v, 3);
    ASSERT_EQ(got, std::string(buf, r.ptr)) << "fixed 3 " << v;
  };
  for (double v : {0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 2.0, 9.5, 100.0, 0.01, 0.0001, 0.00001, 1e-4, 1e-5, 1e6, 999999.0,
                   1234567.0, 1e15, 1e16, 1e21, 1e22, 1e100, 123456789012345678.0, 1700000000.75, 1795805107.934,
                   0.005, 0.0125, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308}) {
    check(v);
    check(-v);
  }
  std::mt19937_64 rng(20261127);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t bits = rng();
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    check(v);
    check(static_cast<double>(rng() % 100000000) / std::pow(10.0, static_cast<double>(rng() % 12)));
    check(static_cast<double>(rng() % 100000));
  }
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
  EXPECT_EQ(exit_status(Outcome::kKeeperKilled), 71);
  EXPECT_EQ(exit_status(Outcome::kOutputFailed), 74);
  EXPECT_EQ(exit_status(Outcome::kCannotRun), 126);
  EXPECT_EQ(exit_status(Outcome::kNotFound), 127);
}

// A server's text as messages show it: escaped, at most kShownBytes, and how much was cut.
TEST(ShownText, ShortTextIsEscapedWhole) {
  EXPECT_EQ(redisgo::shown_text("ERR plain"), "ERR plain");
  EXPECT_EQ(redisgo::shown_text("a\nb\r\x01\x7f\xff"), "a\\nb\\r\\x01\\x7f\\xff");
  EXPECT_EQ(redisgo::shown_text("caf\xc3\xa9"), "caf\xc3\xa9");  // valid UTF-8 kept
  EXPECT_EQ(redisgo::shown_text(redisgo::shown_text("x\ny")), "x\\ny");  // escaping twice changes nothing
}

TEST(ShownText, LongTextIsCutAndSaysHowMuch) {
  const std::string big(100'000, 'x');
  const std::string shown = redisgo::shown_text(big);
  EXPECT_EQ(shown, std::string(redisgo::kShownBytes, 'x') + "... (" + std::to_string(100'000 - redisgo::kShownBytes) +
                       " bytes cut)");
  // Escapes count as shown bytes, and a cut never splits one, nor a UTF-8 sequence.
  const std::string controls(1000, '\x01');
  const std::string c = redisgo::shown_text(controls);
  EXPECT_EQ(c.substr(0, 4), "\\x01");
  EXPECT_EQ(c.find("... ("), redisgo::kShownBytes / 4 * 4);
  EXPECT_NE(c.find("(" + std::to_string(1000 - redisgo::kShownBytes / 4) + " bytes cut)"), std::string::npos) << c;
  std::string accents;
  for (int i = 0; i < 400; ++i) accents += "\xc3\xa9";
  const std::string a = redisgo::shown_text(accents, 11);
  EXPECT_EQ(a, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9... (790 bytes cut)");
  EXPECT_EQ(redisgo::shown_text(std::string(512, 'y')), std::string(512, 'y'));  // exactly the bound: whole
}

}  // namespace util_test
