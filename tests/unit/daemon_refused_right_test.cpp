// Refused renewals named (redisgo_task(1) "Renewals refused"): what the hold says the ACL user
// lacks, from Redis 7.0's and 7.2+'s words, and when a probe lets it contend again.

#include <gtest/gtest.h>

#include "daemon/refused_right.h"

namespace redisgo::daemon {
namespace {

using Kind = RefusedRight::Kind;

lock::NodeError refusal(std::string message, redis::Fault fault = redis::Fault::kAuth) {
  return {"127.0.0.1:6379", fault, std::move(message)};
}

RefusedRight named(const lock::NodeError& e, const std::string& probed = "") {
  return refused_right(e, probed, "redisgo", "jobs:nightly", "{jobs:nightly}");
}

TEST(RefusedRight, Redis72NamesTheCommandItself) {
  const auto e = refusal("ERR ACL failure in script: User redisgo has no permissions to run the 'pexpire' command");
  EXPECT_FALSE(refusal_needs_probe(e));
  const auto r = named(e);
  EXPECT_EQ(r.kind, Kind::kCommand);
  EXPECT_EQ(r.right, "+pexpire");
  EXPECT_EQ(r.text, "the ACL user 'redisgo' lacks +pexpire");
  EXPECT_FALSE(r.credentials());
}

TEST(RefusedRight, Redis70LeavesTheCommandToTheProbe) {
  const auto e = refusal("NOPERM The user executing the script can't run this command or subcommand script: ...");
  EXPECT_TRUE(refusal_needs_probe(e));
  EXPECT_EQ(named(e, "PEXPIRE").right, "+pexpire");
  const auto unnamed = named(e);
  EXPECT_EQ(unnamed.kind, Kind::kUnnamed);
  EXPECT_EQ(unnamed.right, "unknown");
  EXPECT_NE(unnamed.text.find("redisgo_task check"), std::string::npos) << unnamed.text;
}

TEST(RefusedRight, AKeyRefusalNamesTheKeysAndTheRecipe) {
  const auto r = named(refusal("NOPERM this user has no permissions to access one of the keys used as arguments"));
  EXPECT_EQ(r.kind, Kind::kKeys);
  EXPECT_EQ(r.text, "the ACL user 'redisgo' may not use jobs:nightly or {jobs:nightly}:* (the README's ACL recipe)");
}

TEST(RefusedRight, TlsAndCredentialsAreTheirOwn) {
  const auto tls = named(refusal("redis 127.0.0.1:6379: certificate verify failed", redis::Fault::kTls));
  EXPECT_EQ(tls.kind, Kind::kTls);
  EXPECT_EQ(tls.right, "tls");
  const auto wrongpass = refusal("WRONGPASS invalid username-password pair or user is disabled.");
  const auto pass = named(wrongpass);
  EXPECT_EQ(pass.kind, Kind::kCredentials);
  EXPECT_EQ(pass.right, "credentials");
  EXPECT_TRUE(pass.credentials());
  EXPECT_FALSE(refusal_needs_probe(wrongpass));
}

TEST(RefusedRight, TheProbeTriesWhatTheRenewScriptRuns) {
  EXPECT_EQ(renewal_commands(false), (std::vector<std::string>{"GET", "PEXPIRE", "SET"}));
  EXPECT_EQ(renewal_commands(true), (std::vector<std::string>{"GET", "PEXPIRE", "SET", "HGET", "EXISTS"}));
}

TEST(RefusedRight, RightsAreBackWhenAQuorumRanEveryCommand) {
  lock::RightsProbe p;
  p.allowed = 1;
  EXPECT_FALSE(rights_granted(p, 2));
  p.allowed = 2;
  EXPECT_TRUE(rights_granted(p, 2));
}

}  // namespace
}  // namespace redisgo::daemon
