// The kinds of redisgo_task_redis_errors_total are the manual's, one per fault an operator
// tells apart.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "wiring/servers.h"

namespace redisgo {
namespace {

using redis::Fault;

TEST(RedisErrorKind, EveryFaultHasOneOfTheManualsKinds) {
  const std::set<std::string> manual = {"unreachable", "timeout", "closed", "protocol", "auth", "tls", "reply"};
  for (Fault f : {Fault::kResolve, Fault::kConnect, Fault::kTimeout, Fault::kClosed, Fault::kProtocol, Fault::kAuth,
                  Fault::kTls, Fault::kReply}) {
    const char* kind = wiring::redis_error_kind(f);
    ASSERT_NE(kind, nullptr) << redis::to_string(f);
    EXPECT_TRUE(manual.count(kind)) << redis::to_string(f) << " -> " << kind;
  }
}

TEST(RedisErrorKind, ALookupAndARefusedConnectAreOneKind) {
  EXPECT_STREQ(wiring::redis_error_kind(Fault::kResolve), "unreachable");
  EXPECT_STREQ(wiring::redis_error_kind(Fault::kConnect), "unreachable");
}

TEST(RedisErrorKind, NothingFailedOrOurOwnStopIsNotCounted) {
  EXPECT_EQ(wiring::redis_error_kind(Fault::kNone), nullptr);
  EXPECT_EQ(wiring::redis_error_kind(Fault::kCancelled), nullptr);
}

}  // namespace
}  // namespace redisgo
