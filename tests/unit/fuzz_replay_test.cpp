// Replays every fuzz input kept in the repository (tests/fuzz/corpus: the seeds and what
// the fuzzers found interesting; tests/fuzz/regressions: inputs that once crashed or
// broke a property) through the same targets the fuzzers run, without libFuzzer.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/targets.h"

namespace fuzz_replay_test {

namespace {

namespace fs = std::filesystem;
using Target = int (*)(const std::uint8_t*, std::size_t);

std::size_t replay(const std::string& name, Target target) {
  std::size_t n = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    const fs::path dir = fs::path(REDISGO_SOURCE_DIR) / "tests" / "fuzz" / kind / name;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      SCOPED_TRACE(entry.path().string());
      target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++n;
    }
  }
  return n;
}

}  // namespace

TEST(FuzzReplay, Config) { EXPECT_GT(replay("config", redisgo::fuzz::config), 0u); }
TEST(FuzzReplay, Duration) { EXPECT_GT(replay("duration", redisgo::fuzz::duration), 0u); }
TEST(FuzzReplay, Resp) { EXPECT_GT(replay("resp", redisgo::fuzz::resp), 0u); }
TEST(FuzzReplay, Connection) { EXPECT_GT(replay("connection", redisgo::fuzz::connection), 0u); }

}  // namespace fuzz_replay_test
