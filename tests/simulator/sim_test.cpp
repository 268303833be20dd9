// Whole runs: a seed replays its run byte for byte, and every mutant still finds the text it
// changes (a mutant that no longer applies would pass its test unmutated).
#include "simulator/sim.h"

#include <gtest/gtest.h>

namespace redisgo::simulator {
namespace {

TEST(SimRun, ASeedReplaysItsRunByteForByte) {
  RunOptions traced;
  traced.trace = true;
  for (std::uint64_t seed : {3u, 12u, 41u}) {
    const RunResult a = run_seed(seed, traced);
    const RunResult b = run_seed(seed, traced);
    ASSERT_GT(a.trace.size(), 1000u) << seed;
    EXPECT_EQ(a.trace, b.trace) << seed;
    EXPECT_EQ(a.stats.operations(), b.stats.operations()) << seed;
  }
  EXPECT_NE(run_seed(3, traced).trace, run_seed(4, traced).trace);
}

TEST(SimRun, TracingChangesNothingOfTheRun) {
  RunOptions traced;
  traced.trace = true;
  const RunResult plain = run_seed(7);
  const RunResult with = run_seed(7, traced);
  EXPECT_EQ(plain.stats.operations(), with.stats.operations());
  EXPECT_EQ(plain.stats.commands, with.stats.commands);
  EXPECT_EQ(plain.stats.events, with.stats.events);
}

TEST(SimMutants, EachMutantStillApplies) {
  for (const auto& m : mutants()) {
    RunOptions o;
    o.mutant = &m;
    EXPECT_NO_THROW(Sim(1, o)) << m.name;
  }
}

}  // namespace
}  // namespace redisgo::simulator
