// redis/acl.h: what an error reply refuses and the right that grants it, on the texts Redis
// 7.0 (Debian 12) and 8.0 (Debian 13) really send, inside and outside a script (captured from
// both servers: `ACL SETUSER u ... -pexpire`, then the command and EVAL of it).
#include <gtest/gtest.h>

#include "redis/acl.h"
#include "redis/connection.h"

namespace redis_acl_test {

using namespace redisgo::redis;

namespace {

TEST(RedisAcl, ACommandRefusalIsReadOnEveryVersion) {
  // 7.0, inside a script: the command is not named.
  const char* v7_script =
      "ERR The user executing the script can't run this command or subcommand script: "
      "da05f454447a73e4fafdac4c459b2b5f4d4e5a32, on @user_script:1.";
  EXPECT_EQ(refusal_of(v7_script), Refusal::kCommand);
  EXPECT_EQ(refused_command(v7_script), std::nullopt);
  // 8.0, inside a script, and either version outside one: named.
  const char* v8_script =
      "ERR ACL failure in script: User u has no permissions to run the 'pexpire' command script: "
      "da05f454447a73e4fafdac4c459b2b5f4d4e5a32, on @user_script:1.";
  EXPECT_EQ(refusal_of(v8_script), Refusal::kCommand);
  EXPECT_EQ(refused_command(v8_script), "pexpire");
  EXPECT_EQ(refused_command("NOPERM this user has no permissions to run the 'pexpire' command"), "pexpire");
  EXPECT_EQ(refused_command("NOPERM User w2 has no permissions to run the 'config|get' command"), "config|get");
  // As a node's error quotes it.
  EXPECT_EQ(refused_command("redis 127.0.0.1:6379: ERR ACL failure in script: User u has no permissions to run the "
                            "'PEXPIRE' command"),
            "pexpire");
}

TEST(RedisAcl, KeysChannelsAndCredentialsAreToldApart) {
  EXPECT_EQ(refusal_of("ERR The user executing the script can't access at least one of the keys mentioned in the "
                       "command arguments"),
            Refusal::kKey);
  EXPECT_EQ(refusal_of("ERR ACL failure in script: No permissions to access a key"), Refusal::kKey);
  EXPECT_EQ(refusal_of("NOPERM this user has no permissions to access one of the keys used as arguments"), Refusal::kKey);
  EXPECT_EQ(refusal_of("NOPERM No permissions to access a key"), Refusal::kKey);
  EXPECT_EQ(refusal_of("ERR The user executing the script can't publish to the channel mentioned in the command"),
            Refusal::kChannel);
  EXPECT_EQ(refusal_of("ERR ACL failure in script: No permissions to access a channel"), Refusal::kChannel);
  EXPECT_EQ(refusal_of("WRONGPASS invalid username-password pair or user is disabled."), Refusal::kCredentials);
  EXPECT_EQ(refusal_of("redis 127.0.0.1:1: AUTH failed: WRONGPASS invalid username-password pair"),
            Refusal::kCredentials);
  EXPECT_EQ(refusal_of("NOAUTH Authentication required."), Refusal::kCredentials);
  EXPECT_EQ(refusal_of("Protocol error: unauthenticated multibulk length"), Refusal::kCredentials);
  EXPECT_EQ(refusal_of("READONLY You can't write against a read only replica."), Refusal::kNone);
  EXPECT_EQ(refusal_of("OOM command not allowed when used memory > 'maxmemory'."), Refusal::kNone);
  EXPECT_EQ(refused_command("NOPERM No permissions to access a key"), std::nullopt);
}

TEST(RedisAcl, ARightIsTheCommandInLowerCaseAfterAPlus) {
  EXPECT_EQ(right_for("PEXPIRE"), "+pexpire");
  EXPECT_EQ(right_for("config|get"), "+config|get");
}

// Redis 8 words a refusal inside a script "ACL failure in script": our credentials' rights, as
// 7.0's "can't run this command" is (a plain error reply read it as a broken node: a renewal
// refused so was no refusal, and a supervise leader took the lease back every restart_delay).
TEST(RedisAcl, Redis8sScriptRefusalIsARefusalOfOurRights) {
  EXPECT_EQ(classify_error_reply("ERR ACL failure in script: User u has no permissions to run the 'pexpire' command "
                                 "script: da05f454447a73e4fafdac4c459b2b5f4d4e5a32, on @user_script:1."),
            Fault::kAuth);
  EXPECT_EQ(classify_error_reply("ERR ACL failure in script: No permissions to access a key"), Fault::kAuth);
  EXPECT_EQ(classify_error_reply("ERR The user executing the script can't run this command or subcommand"), Fault::kAuth);
  EXPECT_EQ(classify_error_reply("READONLY You can't write against a read only replica."), Fault::kReply);
  EXPECT_EQ(classify_error_reply("ERR Error running script: lease key k holds a hash"), Fault::kReply);
}

}  // namespace

}  // namespace redis_acl_test
