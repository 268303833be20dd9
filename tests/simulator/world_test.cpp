// The scheduler: simulated time, the event order, fibers that wait and are woken, frozen
// processes, and the same seed giving the same run.
#include "simulator/world.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace redisgo::simulator {
namespace {

TEST(SimWorld, EventsRunInTimeOrderAndTiesInTheOrderScheduled) {
  World w(1);
  std::vector<int> seen;
  w.at(20, nullptr, [&] { seen.push_back(3); });
  w.at(10, nullptr, [&] { seen.push_back(1); });
  w.at(10, nullptr, [&] { seen.push_back(2); });
  w.run_until(100);
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(w.now(), 100);
}

TEST(SimWorld, AFiberWaitsUntilItsDeadlineOrANotification) {
  World w(1);
  std::vector<std::string> seen;
  Fiber* waiter = nullptr;
  waiter = &w.spawn(nullptr, "waiter", [&] {
    w.wait(50 * kMs);
    seen.push_back("timer at " + format_time(w.now()));
    w.wait(kNever);
    seen.push_back("notified at " + format_time(w.now()));
  });
  w.at(70 * kMs, nullptr, [&] { w.notify(waiter); });
  w.run_until(kSecond);
  EXPECT_EQ(seen, (std::vector<std::string>{"timer at 0.050000", "notified at 0.070000"}));
  EXPECT_TRUE(waiter->done());
}

TEST(SimWorld, AStaleDeadlineDoesNotEndALaterWait) {
  World w(1);
  std::vector<Time> woke;
  Fiber* f = nullptr;
  f = &w.spawn(nullptr, "f", [&] {
    w.wait(100 * kMs);  // notified at 10 ms: the 100 ms deadline must not end the next wait
    woke.push_back(w.now());
    w.wait(300 * kMs);
    woke.push_back(w.now());
  });
  w.at(10 * kMs, nullptr, [&] { w.notify(f); });
  w.run_until(kSecond);
  EXPECT_EQ(woke, (std::vector<Time>{10 * kMs, 300 * kMs}));
}

TEST(SimWorld, AFrozenProcessRunsNothingUntilThawed) {
  World w(1);
  Process p("daemon");
  std::vector<Time> ran;
  w.at(10 * kMs, &p, [&] { ran.push_back(w.now()); });
  w.spawn(&p, "f", [&] {
    w.sleep_until(20 * kMs);
    ran.push_back(w.now());
  });
  w.at(5 * kMs, nullptr, [&] { w.freeze(p); });
  w.at(500 * kMs, nullptr, [&] { w.thaw(p); });
  w.run_until(kSecond);
  EXPECT_EQ(ran, (std::vector<Time>{500 * kMs, 500 * kMs}));
}

std::string run_of(std::uint64_t seed) {
  World w(seed);
  w.set_tracing(true);
  Process p("p");
  for (int i = 0; i < 4; ++i) {
    w.spawn(&p, "f" + std::to_string(i), [&w, i] {
      for (int k = 0; k < 5; ++k) {
        w.sleep_until(w.now() + w.rng().between(1, 50) * kMs);
        w.trace("f" + std::to_string(i), "step " + std::to_string(k));
      }
    });
  }
  w.at(30 * kMs, nullptr, [&] { w.freeze(p); });
  w.at(90 * kMs, nullptr, [&] { w.thaw(p); });
  w.run_until(10 * kSecond);
  return w.trace_text();
}

TEST(SimWorld, TheSameSeedGivesTheSameRun) {
  EXPECT_EQ(run_of(7), run_of(7));
  EXPECT_NE(run_of(7), run_of(8));
}

}  // namespace
}  // namespace redisgo::simulator
