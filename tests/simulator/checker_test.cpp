// The invariants on made-up client records: each rule fails where it should and only there.
#include "simulator/checker.h"

#include <gtest/gtest.h>

#include <vector>

namespace redisgo::simulator {
namespace {

struct Records {
  World world{1};
  std::vector<HolderView> views;
  Checker checker;
  explicit Records(int limit, int clients) : views(static_cast<std::size_t>(clients)), checker(world, limit) {
    for (int i = 0; i < clients; ++i) checker.add_client("host" + std::to_string(i), [this, i] { return views[static_cast<std::size_t>(i)]; });
  }
  void hold(int c, std::uint64_t token, int slot, const std::string& holder) {
    views[static_cast<std::size_t>(c)] = HolderView{true, true, token, slot, holder, true, holder + "#1"};
    checker.holding_began(c);
  }
};

TEST(SimChecker, TwoHoldersOfOneLeaseAreAViolation) {
  Records r(1, 2);
  r.hold(0, 10, 0, "a");
  EXPECT_FALSE(r.checker.violated());
  r.hold(1, 11, 0, "b");
  ASSERT_TRUE(r.checker.violated());
  EXPECT_NE(r.checker.violation()->find("mutual exclusion"), std::string::npos);
}

TEST(SimChecker, AHolderWhoseDeadlinePassedDoesNotCount) {
  Records r(1, 2);
  r.hold(0, 10, 0, "a");
  r.views[0].deadline_valid = false;  // frozen past its lease: no daemon can prevent that
  r.hold(1, 11, 0, "b");
  EXPECT_FALSE(r.checker.violated());
}

TEST(SimChecker, SemaphoreHoldersMayNotShareASlotOrAToken) {
  Records slot(2, 2);
  slot.hold(0, 10, 1, "a");
  slot.hold(1, 11, 1, "b");
  EXPECT_TRUE(slot.checker.violated());
  Records token(2, 2);
  token.hold(0, 10, 0, "a");
  token.hold(1, 10, 1, "b");
  ASSERT_TRUE(token.checker.violated());
  EXPECT_NE(token.checker.violation()->find("share token"), std::string::npos);
}

TEST(SimChecker, ASlotsNextHolderHasAHigherTokenAndALeaseMayHoldAgain) {
  Records r(1, 2);
  r.hold(0, 10, 0, "a");
  r.views[0].child_alive = false;
  r.hold(1, 11, 0, "b");
  r.views[1].child_alive = false;
  r.hold(1, 11, 0, "b");  // its child restarted under the same lease
  EXPECT_FALSE(r.checker.violated());
  r.views[1].child_alive = false;
  r.hold(0, 10, 0, "a");  // the older lease holds again after b's
  ASSERT_TRUE(r.checker.violated());
  EXPECT_NE(r.checker.violation()->find("tokens"), std::string::npos);
}

TEST(SimChecker, AHolderWhoseKeyAnOperatorDeletedIsExcusedUntilItRenewsThenChecked) {
  Records r(1, 2);
  r.hold(0, 10, 0, "a");
  r.world.run_until(kSecond);
  r.checker.lease_deleted("a#1");  // an operator's DEL: b may take the key while a's child runs
  r.hold(1, 11, 0, "b");
  EXPECT_FALSE(r.checker.violated());
  r.checker.renewal_confirmed(0, kSecond - 1);  // a round that ran before the DEL ends nothing
  EXPECT_FALSE(r.checker.violated());
  r.views[1].child_alive = false;  // b's run ends and frees the key
  r.checker.renewal_confirmed(0, kSecond);  // a's key set again after b's higher token held
  ASSERT_TRUE(r.checker.violated());
  EXPECT_NE(r.checker.violation()->find("tokens"), std::string::npos);
}

TEST(SimChecker, ARenewalThatSetsADeletedKeyAgainBeforeAnyoneElseHeldIsNoViolation) {
  Records r(1, 2);
  r.hold(0, 10, 0, "a");
  r.checker.lease_deleted("a#1");
  r.checker.renewal_confirmed(0, 0);
  EXPECT_FALSE(r.checker.violated());
  r.hold(1, 11, 0, "b");  // and a counts again: b beside it is two holders
  ASSERT_TRUE(r.checker.violated());
  EXPECT_NE(r.checker.violation()->find("mutual exclusion"), std::string::npos);
}

TEST(SimChecker, AFreeSlotWithAWaiterMustBeTakenWithinTheBound) {
  Records r(1, 2);
  r.checker.quiet_from(0, kSecond);
  r.checker.waiting(1, true);
  r.checker.check_liveness();  // the slot is free and someone waits from now on
  r.world.run_until(900 * kMs);
  r.checker.check_liveness();
  EXPECT_FALSE(r.checker.violated());
  r.world.run_until(1100 * kMs);
  r.checker.check_liveness();
  ASSERT_TRUE(r.checker.violated());
  EXPECT_NE(r.checker.violation()->find("liveness"), std::string::npos);
}

TEST(SimChecker, NoWaiterOrNoFreeSlotIsNoLivenessFault) {
  Records r(1, 2);
  r.checker.quiet_from(0, kSecond);
  r.views[0].leading = true;  // the slot is taken
  r.checker.waiting(1, true);
  r.world.run_until(5 * kSecond);
  r.checker.check_liveness();
  EXPECT_FALSE(r.checker.violated());
}

}  // namespace
}  // namespace redisgo::simulator
