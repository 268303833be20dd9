// Repeated failures logged by cause (issue 8 item 9): once, then a summary at most every
// interval, and one line when the cause recovers; pending is neither.

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "log/cause_log.h"
#include "util/clock.h"

namespace log_cause_log_test {

using namespace std::chrono_literals;
using redisgo::FakeClock;
using redisgo::log::CauseLog;

namespace {

struct Captured {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> logger;
  Captured() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    sink->set_pattern("%l %v");
    logger = std::make_shared<spdlog::logger>("cause-test", sink);
    logger->set_level(spdlog::level::trace);
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> v;
    std::istringstream in(out.str());
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }
};

}  // namespace

TEST(CauseLog, FirstFailureAtOnceThenOneSummaryPerInterval) {
  Captured c;
  FakeClock clock;
  CauseLog log(c.logger, "acquire", 30s, clock);
  // A thousand attempts against one dead node in ten seconds: one line.
  for (int i = 0; i < 1000; ++i) {
    log.failure("10.0.0.1:6379", "redis 10.0.0.1:6379: connect: refused, attempt " + std::to_string(i));
    clock.advance(10ms);
  }
  ASSERT_EQ(c.lines().size(), 1u);
  EXPECT_EQ(c.lines()[0], "warning acquire: redis 10.0.0.1:6379: connect: refused, attempt 0");
  clock.advance(20s);  // 30 s after the first line
  log.failure("10.0.0.1:6379", "redis 10.0.0.1:6379: connect: refused, attempt 1000");
  ASSERT_EQ(c.lines().size(), 2u);
  EXPECT_NE(c.lines()[1].find("still failing (1000 more time(s) in the last 30s)"), std::string::npos) << c.lines()[1];
  EXPECT_NE(c.lines()[1].find("attempt 1000"), std::string::npos);
  EXPECT_EQ(log.active(), 1u);
}

TEST(CauseLog, CausesAreIndependentAndRecoverOnSuccessOnly) {
  Captured c;
  FakeClock clock;
  CauseLog log(c.logger, "renew", 30s, clock);
  log.failure("a", "a is down");
  log.failure("b", "b is down");
  log.failure("a", "a is still down");
  ASSERT_EQ(c.lines().size(), 2u);
  log.success("c");  // never failed: nothing to say
  EXPECT_EQ(c.lines().size(), 2u);
  log.success("a");
  ASSERT_EQ(c.lines().size(), 3u);
  EXPECT_EQ(c.lines()[2], "info renew: a recovered after 2 failure(s)");
  EXPECT_EQ(log.active(), 1u);
  clock.advance(30s);
  log.failure("a", "a is down again");  // a new episode, an interval after its last line: at once
  ASSERT_EQ(c.lines().size(), 4u);
  EXPECT_EQ(c.lines()[3], "warning renew: a is down again");
  EXPECT_EQ(log.active(), 2u);
}

// A cause that fails every other attempt (attack round, issue 19: waiters meeting a corrupt
// fence counter, then another's turn, logged a warning and a recovery every 0.5 s) costs at
// most two lines per interval: its first failure and recovery, then lines an interval apart
// that count the flaps in between.
TEST(CauseLog, AFlappingCauseIsSummarisedNotLoggedAtEachFlap) {
  Captured c;
  FakeClock clock;
  CauseLog log(c.logger, "acquire", 30s, clock);
  for (int i = 0; i < 120; ++i) {  // 60 s of a failure and a recovery every 0.5 s
    log.failure("n", "fence counter {k}:fence is not an integer, attempt " + std::to_string(i));
    clock.advance(250ms);
    log.success("n");
    clock.advance(250ms);
  }
  const auto lines = c.lines();
  ASSERT_LE(lines.size(), 4u) << c.out.str();
  ASSERT_GE(lines.size(), 3u) << c.out.str();
  EXPECT_EQ(lines[0], "warning acquire: fence counter {k}:fence is not an integer, attempt 0");
  EXPECT_EQ(lines[1], "info acquire: n recovered after 1 failure(s)");
  EXPECT_NE(lines[2].find(" time(s) in between)"), std::string::npos) << lines[2];
  EXPECT_EQ(log.active(), 0u);
}

}  // namespace log_cause_log_test
