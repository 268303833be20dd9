// `redisgo_task validate` and `task` on malformed configuration files, through the real
// binary: every case must exit 78 (EX_CONFIG) and name the problem, with file:line.
// (config_load_test.cpp checks the same rules in depth at the library level.)

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/redis_server.h"
#include "support/task_process.h"

namespace cli_validate_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

struct BadConfig {
  const char* name;
  std::string toml;
  std::vector<std::string> mentions;  ///< each must appear in stderr
};

const std::string kRedis = "[redis]\nhost = \"127.0.0.1:6379\"\nkey = \"k\"\n";

const std::vector<BadConfig> kCases = {
    {"syntax", "[redis\nhost = 1\n", {":1:"}},
    {"no_key", "[redis]\nhost = \"127.0.0.1:6379\"\n", {"redis.key"}},
    {"no_node", "[redis]\nkey = \"k\"\n", {"redis.host"}},
    {"host_and_nodes", kRedis + "nodes = [\"127.0.0.1:1\", \"127.0.0.1:2\", \"127.0.0.1:3\"]\n", {"redis.nodes", "'host'"}},
    {"node_no_port", "[redis]\nhost = \"localhost\"\nkey = \"k\"\n", {"redis.host", ":2:"}},
    {"node_bad_port", "[redis]\nhost = \"127.0.0.1:99999\"\nkey = \"k\"\n", {"redis.host", "99999"}},
    {"node_relative_unix", "[redis]\nhost = \"unix://run/redis.sock\"\nkey = \"k\"\n", {"redis.host"}},
    {"expire_zero", kRedis + "expire = \"0s\"\n", {"redis.expire", ":4:"}},
    {"expire_negative", kRedis + "expire = \"-5s\"\n", {"redis.expire"}},
    {"expire_bad_unit", kRedis + "expire = \"5 seconds\"\n", {"redis.expire", "5 seconds"}},
    {"expire_bool", kRedis + "expire = true\n", {"redis.expire", "boolean"}},
    {"cron_ge_expire", kRedis + "expire = \"2s\"\ncron = \"2s\"\n", {"redis.cron", "redis.expire"}},
    {"cron_grace_ge_expire", kRedis + "expire = \"3s\"\ncron = \"1s\"\n[task]\nkill_grace = \"2s\"\n", {"kill_grace"}},
    {"retries_fraction", kRedis + "retries_count = 4.5\n", {"redis.retries_count", "4.5"}},
    {"retries_zero", kRedis + "retries_count = 0\n", {"redis.retries_count"}},
    {"password_twice", kRedis + "password = \"a\"\npassword_env = \"B\"\n", {"password", "password_env"}},
    {"password_env_unset", kRedis + "password_env = \"REDISGO_TEST_SURELY_UNSET_VAR\"\n", {"REDISGO_TEST_SURELY_UNSET_VAR"}},
    {"password_file_missing", kRedis + "password_file = \"/nonexistent/redis.pass\"\n", {"/nonexistent/redis.pass"}},
    {"strategy_unknown", kRedis + "[backoff]\nstrategy = \"fibonacci\"\n", {"backoff.strategy", "fibonacci"}},
    {"jitter_unknown", kRedis + "[backoff]\njitter = \"some\"\n", {"backoff.jitter", "some"}},
    {"initial_gt_max", kRedis + "[backoff]\ninitial = \"2s\"\nmax = \"1s\"\n", {"backoff.initial", "backoff.max"}},
    {"simple_no_intervals", kRedis + "[backoff]\nstrategy = \"simple\"\n", {"backoff.intervals"}},
    {"empty_command_array", kRedis + "[task]\ncommand = []\n", {"task.command"}},
    {"empty_command_string", kRedis + "[task]\ncommand = \"\"\n", {"task.command"}},
    {"mode_unknown", kRedis + "[task]\nmode = \"daemon\"\n", {"task.mode", "daemon"}},
    {"restart_unknown", kRedis + "[task]\nrestart = \"sometimes\"\n", {"task.restart", "sometimes"}},
    {"signal_unknown", kRedis + "[task]\nkill_signal = \"SIGFOO\"\n", {"task.kill_signal", "SIGFOO"}},
    {"timeout_zero", kRedis + "[task]\ntimeout = \"0s\"\n", {"task.timeout"}},
    {"env_not_table", kRedis + "[task]\nenv = \"A=B\"\n", {"task.env"}},
    {"level_unknown", kRedis + "[log]\nlevel = \"verbose\"\n", {"log.level", "verbose"}},
    {"format_unknown", kRedis + "[log]\nformat = \"xml\"\n", {"log.format", "xml"}},
};

TEST(CliValidate, EveryMalformedConfigExits78AndNamesTheProblem) {
  ASSERT_GE(kCases.size(), 25u);
  TempDir dir;
  for (const auto& c : kCases) {
    std::string path = dir.write(std::string(c.name) + ".toml", c.toml);
    for (const char* sub : {"validate", "task"}) {
      std::vector<std::string> args{sub, "--config", path};
      if (std::string(sub) == "task") args.insert(args.end(), {"--", "/bin/true"});
      auto r = run_task_binary(args, 10s);
      EXPECT_EQ(r.code, 78) << c.name << " (" << sub << ")\n" << r.err;
      EXPECT_NE(r.err.find(path), std::string::npos) << c.name << ": the file is named\n" << r.err;
      for (const auto& m : c.mentions) {
        EXPECT_NE(r.err.find(m), std::string::npos) << c.name << " (" << sub << "): expected '" << m << "' in\n" << r.err;
      }
      EXPECT_TRUE(r.out.empty()) << c.name << ": nothing on stdout for a bad config\n" << r.out;
    }
  }
}

TEST(CliValidate, AllErrorsOfAFileAreReportedAtOnce) {
  TempDir dir;
  std::string path = dir.write("many.toml", "[redis]\nexpire = \"0s\"\n[task]\nmode = \"x\"\n[log]\nlevel = \"y\"\n");
  auto r = run_task_binary({"validate", "--config", path}, 10s);
  EXPECT_EQ(r.code, 78);
  for (const char* key : {"redis.key", "redis.expire", "task.mode", "log.level"}) {
    EXPECT_NE(r.err.find(key), std::string::npos) << key << "\n" << r.err;
  }
}

TEST(CliValidate, ValidConfigPrintsTheEffectiveSettingsWithTheSecretMasked) {
  TempDir dir;
  std::string path = dir.write("ok.toml", kRedis + "password_env = \"REDISGO_TEST_PW\"\n[task]\ncommand = [\"/bin/true\"]\n");
  auto r = run_task_binary({"validate", "--config", path}, 10s, {{"REDISGO_TEST_PW", "hunter2-secret"}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cron = \"1s\""), std::string::npos) << "defaults filled in\n" << r.out;
  EXPECT_NE(r.out.find("********"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("hunter2-secret"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("hunter2-secret"), std::string::npos) << r.err;
}

TEST(CliValidate, UnknownKeyIsAnErrorWithItsLineAndASuggestion) {
  // Round 8, #4: a misspelt expire ran silently with the 5 s default.
  TempDir dir;
  std::string path = dir.write("typo.toml", kRedis + "expir = \"60s\"\n");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"validate", "--config", path},
                                               std::vector<std::string>{"task", "--config", path, "--", "/bin/true"}}) {
    const auto& sub = args[0];
    auto r = run_task_binary(args, 10s);
    EXPECT_EQ(r.code, 78) << sub << ": " << r.err;
    EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(":4:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("did you mean 'expire'?"), std::string::npos) << r.err;
  }
}

}  // namespace

}  // namespace cli_validate_test
