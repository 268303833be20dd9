// Credentials (redis/credentials.h): the password every connection of a process shares,
// read again when Redis refuses it. Many connections on several threads are refused at
// once after a rotation: the file is read once, and every one of them learns the result.

#include "redis/credentials.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace redisgo::redis::redis_credentials_test {
namespace {

using namespace std::chrono_literals;

TEST(Credentials, ThreadsRefusedAtOnceReadTheFileOnceAndAllRetryWithTheNewPassword) {
  std::atomic<int> reads{0};
  std::string in_file = "new-pw";
  Credentials c(
      "old-pw",
      [&](const std::string& current) -> std::optional<std::string> {
        ++reads;
        std::this_thread::sleep_for(20ms);  // a slow file system: the others wait for this read
        if (in_file == current) return std::nullopt;
        return in_file;
      },
      1s);
  const auto before = c.current();
  std::atomic<int> retries{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      if (c.refused(before.generation)) ++retries;
      EXPECT_EQ(c.current().password.size(), 6u);  // "old-pw" or "new-pw", never torn
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(reads.load(), 1);
  EXPECT_EQ(retries.load(), 8);
  EXPECT_EQ(c.current().password, "new-pw");
  EXPECT_NE(c.current().generation, before.generation);
  // Refused under the new password within the second: no read, the refusal stands.
  EXPECT_FALSE(c.refused(c.current().generation));
  EXPECT_EQ(reads.load(), 1);
}

TEST(Credentials, AnUnchangedFileIsARefusalAndIsReadAgainOnlyAfterTheGap) {
  int reads = 0;
  Credentials c(
      "pw",
      [&](const std::string&) -> std::optional<std::string> {
        ++reads;
        return std::nullopt;  // unchanged, or unreadable: the reader said why
      },
      50ms);
  const auto g = c.current().generation;
  EXPECT_FALSE(c.refused(g));
  EXPECT_FALSE(c.refused(g));
  EXPECT_EQ(reads, 1);
  std::this_thread::sleep_for(60ms);
  EXPECT_FALSE(c.refused(g));
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(c.current().password, "pw");
  EXPECT_EQ(c.current().generation, g);
}

TEST(Credentials, WithoutARereadARefusalStands) {
  Credentials c("pw");
  EXPECT_FALSE(c.refused(c.current().generation));
  EXPECT_EQ(c.current().password, "pw");
}

TEST(Credentials, ARereadThatThrowsIsARefusal) {
  Credentials c("pw", [](const std::string&) -> std::optional<std::string> { throw std::runtime_error("EIO"); }, 0ms);
  EXPECT_FALSE(c.refused(c.current().generation));
}

}  // namespace
}  // namespace redisgo::redis::redis_credentials_test
