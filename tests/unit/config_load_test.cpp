// Config loading: defaults, durations, every validation rule (table-driven malformed
// files checked for key, line and what was expected/found), warnings, secret masking,
// the shipped example, and render_effective() round trip.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "support/redis_server.h"

namespace config_load_test {

using namespace std::chrono_literals;
using namespace redisgo::config;
using redisgo::testing::TempDir;

namespace {

constexpr const char* kFile = "test.toml";
/// A secret that must never show up in any output.
constexpr const char* kSecret = "Sup3rS3cretPa55";

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

LoadResult load(const std::string& text, const EnvLookup& env = fake_env({})) {
  return load_string(text, kFile, env);
}

std::string all_diagnostics(const LoadResult& r) {
  std::string out;
  for (const auto& d : r.errors) out += "E " + d.str() + "\n";
  for (const auto& d : r.warnings) out += "W " + d.str() + "\n";
  return out;
}

const std::string kBase = "[redis]\nhost = \"127.0.0.1:6379\"\nkey = \"k\"\n";  // lines 1-3

TEST(ConfigDefaults, MinimalFileGetsEveryDefault) {
  auto r = load(kBase);
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.warnings.empty()) << all_diagnostics(r);
  const Config& c = *r.config;
  EXPECT_EQ(c.source, kFile);
  EXPECT_EQ(c.redis.nodes, std::vector<std::string>{"127.0.0.1:6379"});
  EXPECT_EQ(c.redis.key, "k");
  EXPECT_TRUE(c.redis.monitor_try_all);
  EXPECT_EQ(c.redis.retries_count, 4);
  EXPECT_EQ(c.redis.expire, 5s);
  EXPECT_EQ(c.redis.cron, 1000ms);  // expire/5
  EXPECT_EQ(c.redis.value, "");
  EXPECT_EQ(c.redis.username, "");
  EXPECT_EQ(c.redis.password, "");
  EXPECT_EQ(c.redis.password_source, PasswordSource::kNone);
  EXPECT_EQ(c.redis.db, 0);
  EXPECT_EQ(c.redis.connect_timeout, 500ms);
  EXPECT_EQ(c.redis.io_timeout, 500ms);
  EXPECT_DOUBLE_EQ(c.redis.drift_factor, 0.01);
  EXPECT_EQ(c.redis.drift_fixed, 2ms);
  EXPECT_TRUE(c.redis.restart_guard);
  EXPECT_EQ(c.backoff.strategy, Strategy::kExponential);
  EXPECT_EQ(c.backoff.initial, 30ms);
  EXPECT_EQ(c.backoff.max, 1s);
  EXPECT_DOUBLE_EQ(c.backoff.factor, 2.0);
  EXPECT_EQ(c.backoff.jitter, Jitter::kFull);
  EXPECT_TRUE(c.backoff.intervals.empty());
  EXPECT_TRUE(c.task.command.empty());  // may come after `--`
  EXPECT_FALSE(c.task.command_is_shell);
  EXPECT_EQ(c.task.mode, Mode::kOneshot);
  EXPECT_EQ(c.task.restart, Restart::kOnFailure);
  EXPECT_EQ(c.task.restart_delay, 1s);
  EXPECT_EQ(c.task.kill_signal, SIGTERM);
  EXPECT_EQ(c.task.kill_grace, 2s);
  EXPECT_FALSE(c.task.timeout);
  EXPECT_EQ(c.task.workdir, "");
  EXPECT_TRUE(c.task.env.empty());
  EXPECT_EQ(c.log.level, LogLevel::kInfo);
  EXPECT_EQ(c.log.format, LogFormat::kText);
}

TEST(ConfigDefaults, CronDefaultFollowsExpire) {
  auto r = load(kBase + "expire = \"9s\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.cron, 1800ms);  // expire/5
}

TEST(ConfigValues, DurationsWithUnitsAndIntegerSeconds) {
  auto r = load(kBase +
                "expire = 3600\n"          // integer = seconds
                "cron = \"1m30s\"\n"
                "connect_timeout = \"250ms\"\n"
                "io_timeout = 2\n"
                "drift_fixed = \"0ms\"\n"  // 0 allowed here
                "[task]\nkill_grace = \"1m\"\ntimeout = \"1h\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.expire, 1h);
  EXPECT_EQ(r.config->redis.cron, 90s);
  EXPECT_EQ(r.config->redis.connect_timeout, 250ms);
  EXPECT_EQ(r.config->redis.io_timeout, 2s);
  EXPECT_EQ(r.config->redis.drift_fixed, 0ms);
  EXPECT_EQ(r.config->task.kill_grace, 1min);
  EXPECT_EQ(r.config->task.timeout, 1h);
  r = load(kBase + "[task]\nmode = \"supervise\"\nrestart_delay = 0\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->task.restart_delay, 0ms);
}

TEST(ConfigValues, RetriesCountAsWholeFloat) {
  auto r = load(kBase + "retries_count = 4.0\nmonitor_try_all = false\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.retries_count, 4);
  EXPECT_FALSE(r.config->redis.monitor_try_all);
}

TEST(ConfigValues, NodesAndAddressForms) {
  auto r = load(
      "[redis]\nkey = \"k\"\n"
      "nodes = [\"10.0.0.1:6379\", \"[::1]:6380\", \"unix:///run/redis/redis.sock\", \"redis-3.example:7000\"]\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.nodes,
            (std::vector<std::string>{"10.0.0.1:6379", "[::1]:6380", "unix:///run/redis/redis.sock",
                                      "redis-3.example:7000"}));
  auto u = load("[redis]\nkey = \"k\"\nhost = \"unix:///tmp/r.sock\"\n");
  ASSERT_TRUE(u.config) << all_diagnostics(u);
  EXPECT_EQ(u.config->redis.nodes, std::vector<std::string>{"unix:///tmp/r.sock"});
}

TEST(ConfigValues, EveryEnumAndTaskField) {
  auto r = load(kBase +
                "db = 15\nusername = \"app\"\npassword_env = \"PW\"\nvalue = \"me\"\ndrift_factor = 0\n"
                "[backoff]\nstrategy = \"simple\"\nintervals = [\"10ms\", 1, \"2m\"]\njitter = \"decorrelated\"\n"
                "factor = 1\ninitial = \"1s\"\nmax = \"1s\"\n"
                "[task]\ncommand = \"echo hi && exit 3\"\nmode = \"supervise\"\nrestart = \"always\"\n"
                "kill_signal = \"INT\"\nworkdir = \"/tmp\"\nenv = { A = \"1\", B = \"\" }\n"
                "[log]\nlevel = \"debug\"\nformat = \"json\"\n",
                fake_env({{"PW", "pw"}}));
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  const Config& c = *r.config;
  EXPECT_EQ(c.redis.db, 15);
  EXPECT_EQ(c.redis.username, "app");
  EXPECT_EQ(c.redis.value, "me");
  EXPECT_DOUBLE_EQ(c.redis.drift_factor, 0.0);
  EXPECT_EQ(c.backoff.strategy, Strategy::kSimple);
  EXPECT_EQ(c.backoff.intervals, (std::vector<Millis>{10ms, 1s, 2min}));
  EXPECT_EQ(c.backoff.jitter, Jitter::kDecorrelated);
  EXPECT_DOUBLE_EQ(c.backoff.factor, 1.0);
  EXPECT_EQ(c.task.command, (std::vector<std::string>{"/bin/sh", "-c", "echo hi && exit 3"}));
  EXPECT_TRUE(c.task.command_is_shell);
  EXPECT_EQ(c.task.mode, Mode::kSupervise);
  EXPECT_EQ(c.task.restart, Restart::kAlways);
  EXPECT_EQ(c.task.kill_signal, SIGINT);
  EXPECT_EQ(c.task.workdir, "/tmp");
  EXPECT_EQ(c.task.env, (std::map<std::string, std::string>{{"A", "1"}, {"B", ""}}));
  EXPECT_EQ(c.log.level, LogLevel::kDebug);
  EXPECT_EQ(c.log.format, LogFormat::kJson);
}

TEST(ConfigValues, ArrayCommandIsExecdDirectly) {
  auto r = load(kBase + "[task]\ncommand = [\"/usr/bin/env\", \"\", \"x y\"]\nkill_signal = 9\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->task.command, (std::vector<std::string>{"/usr/bin/env", "", "x y"}));
  EXPECT_FALSE(r.config->task.command_is_shell);
  EXPECT_EQ(r.config->task.kill_signal, SIGKILL);
}

TEST(ConfigSignals, NamesAndNumbers) {
  EXPECT_EQ(parse_signal("SIGTERM"), SIGTERM);
  EXPECT_EQ(parse_signal("TERM"), SIGTERM);
  EXPECT_EQ(parse_signal("sigint"), SIGINT);
  EXPECT_EQ(parse_signal("15"), 15);
  EXPECT_EQ(parse_signal("SIGKILL"), SIGKILL);
  EXPECT_EQ(parse_signal("1"), 1);
  EXPECT_EQ(parse_signal("31"), 31);
  EXPECT_FALSE(parse_signal("0"));
  EXPECT_FALSE(parse_signal("32"));
  EXPECT_FALSE(parse_signal("SIGFOO"));
  EXPECT_FALSE(parse_signal(""));
  EXPECT_FALSE(parse_signal("-1"));
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGHUP), "SIGHUP");
  for (int s = 1; s <= 31; ++s) {
    EXPECT_EQ(parse_signal(signal_name(s)), s) << s;  // names round-trip
  }
}

TEST(ConfigEnums, ToStringNamesMatchTheFile) {
  EXPECT_STREQ(to_string(Strategy::kAdaptive), "adaptive");
  EXPECT_STREQ(to_string(Jitter::kEqual), "equal");
  EXPECT_STREQ(to_string(Mode::kSupervise), "supervise");
  EXPECT_STREQ(to_string(Restart::kOnFailure), "on-failure");
  EXPECT_STREQ(to_string(LogLevel::kWarn), "warn");
  EXPECT_STREQ(to_string(LogFormat::kJson), "json");
}

TEST(ConfigDiagnostic, StrFormat) {
  EXPECT_EQ((Diagnostic{"f.toml", 3, 7, "redis.expire", "bad"}.str()), "f.toml:3:7: redis.expire: bad");
  EXPECT_EQ((Diagnostic{"f.toml", 3, 0, "redis.expire", "bad"}.str()), "f.toml:3: redis.expire: bad");
  EXPECT_EQ((Diagnostic{"f.toml", 0, 0, "", "bad"}.str()), "f.toml: bad");
}

// ---- malformed files ------------------------------------------------------------------

struct Malformed {
  const char* name;
  std::string toml;
  std::string key;                    ///< the key the error names
  int line;                           ///< where it points
  std::vector<std::string> mentions;  ///< what was expected / found
};

// GoogleTest prints a parameter in test listings; the case name says it all.
void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

class ConfigMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(ConfigMalformed, ErrorNamesKeyLineExpectedAndFound) {
  const Malformed& m = GetParam();
  auto r = load(m.toml, fake_env({{"EMPTY_VAR", ""}}));
  EXPECT_FALSE(r.config) << "accepted: " << m.toml;
  ASSERT_FALSE(r.errors.empty()) << m.toml;
  const Diagnostic* found = nullptr;
  for (const auto& e : r.errors) {
    if (e.key == m.key) {
      found = &e;
      break;
    }
  }
  ASSERT_NE(found, nullptr) << "no error for key '" << m.key << "' in:\n" << all_diagnostics(r);
  EXPECT_EQ(found->file, kFile);
  EXPECT_EQ(found->line, m.line) << found->str();
  if (m.line > 0) {
    EXPECT_GT(found->column, 0) << found->str();
  }
  for (const auto& s : m.mentions) {
    EXPECT_NE(found->message.find(s), std::string::npos) << "'" << s << "' missing from: " << found->str();
  }
  std::string prefix = std::string(kFile) + ":" + std::to_string(m.line) + ":";
  if (m.line > 0) {
    EXPECT_EQ(found->str().rfind(prefix, 0), 0u) << found->str();
  }
  if (!m.key.empty()) {
    EXPECT_NE(found->str().find(m.key + ": "), std::string::npos) << found->str();
  }
}

std::string base_with(const std::string& redis_extra, const std::string& rest = "") {
  return kBase + redis_extra + rest;  // redis_extra starts at line 4
}

const std::vector<Malformed> kMalformed = {
    // syntax
    {"syntax_unclosed_header", "[redis\nhost = \"h:1\"\n", "", 1, {"invalid TOML"}},
    {"syntax_duplicate_key", kBase + "key = \"again\"\n", "", 4, {"invalid TOML"}},
    {"syntax_bad_value", kBase + "expire = 5s\n", "", 4, {"invalid TOML"}},
    // toml++ 3.3.0 reaches __builtin_unreachable() on some of these (fuzzing found it)
    {"syntax_non_ascii_between_tokens", kBase + "expire =\xC2\xA1 \"5s\"\n", "", 4, {"non-ASCII character outside a string"}},
    {"syntax_non_ascii_in_header", "[\xEF\xBB\xBFrfdiy @ \x18\n", "", 1, {"non-ASCII character"}},
    {"syntax_non_ascii_bare_key", kBase + "caf\xC3\xA9 = 1\n", "", 4, {"must be quoted"}},
    {"syntax_non_ascii_after_a_bare_quote", "[redis]\nhost =0\"1:x\xD2\x82=k\"\n", "", 2, {"outside a string"}},
    {"syntax_non_ascii_after_line_ending_backslash", kBase + "value = \"\"\"a\\\n   \xC3\xA9\"\"\"\n", "", 5,
     {"right after a backslash in a multi-line string"}},
    // sections
    {"section_not_table", "redis = 5\n", "redis", 1, {"expected a table", "found integer"}},
    {"task_section_array", "task = [1, 2]\n" + kBase, "task", 1, {"expected a table", "found array"}},
    {"backoff_array_of_tables", kBase + "[[backoff]]\nmax = \"1s\"\n", "backoff", 4, {"expected a table", "found array"}},
    // nodes
    {"missing_key", "[redis]\nhost = \"h:1\"\n", "redis.key", 1, {"missing", "lock key"}},
    {"no_node", "\n[redis]\nkey = \"k\"\n", "redis.host", 2, {"missing", "'host'", "'nodes'"}},
    {"no_redis_section", "[task]\ncommand = \"true\"\n", "redis.key", 0, {"missing"}},
    {"host_and_nodes", kBase + "nodes = [\"a:1\", \"b:2\", \"c:3\"]\n", "redis.nodes", 4, {"mutually exclusive"}},
    {"host_no_port", "[redis]\nkey = \"k\"\nhost = \"localhost\"\n", "redis.host", 3,
     {"expected a node address", "found \"localhost\"", "missing ':port'"}},
    {"host_port_too_big", "[redis]\nkey = \"k\"\nhost = \"h:70000\"\n", "redis.host", 3, {"1 to 65535", "\"h:70000\""}},
    {"host_port_zero", "[redis]\nkey = \"k\"\nhost = \"h:0\"\n", "redis.host", 3, {"1 to 65535"}},
    {"host_port_word", "[redis]\nkey = \"k\"\nhost = \"h:redis\"\n", "redis.host", 3, {"1 to 65535"}},
    {"host_empty_host", "[redis]\nkey = \"k\"\nhost = \":6379\"\n", "redis.host", 3, {"host is empty"}},
    {"host_ipv6_unbracketed", "[redis]\nkey = \"k\"\nhost = \"::1:6379\"\n", "redis.host", 3, {"brackets"}},
    {"host_unix_relative", "[redis]\nkey = \"k\"\nhost = \"unix://redis.sock\"\n", "redis.host", 3, {"absolute path"}},
    {"host_other_scheme", "[redis]\nkey = \"k\"\nhost = \"redis://h:1\"\n", "redis.host", 3, {"scheme"}},
    {"host_wrong_type", "[redis]\nkey = \"k\"\nhost = 6379\n", "redis.host", 3, {"expected a node address", "found integer"}},
    {"nodes_empty", "[redis]\nkey = \"k\"\nnodes = []\n", "redis.nodes", 3, {"at least one", "empty array"}},
    {"nodes_not_array", "[redis]\nkey = \"k\"\nnodes = \"a:1\"\n", "redis.nodes", 3, {"expected an array", "found string"}},
    {"nodes_element_type", "[redis]\nkey = \"k\"\nnodes = [\"a:1\", 5]\n", "redis.nodes[1]", 3, {"found integer"}},
    {"nodes_duplicate", "[redis]\nkey = \"k\"\nnodes = [\"a:1\", \"b:1\", \"a:1\"]\n", "redis.nodes[2]", 3, {"twice"}},
    {"nodes_bad_address", "[redis]\nkey = \"k\"\nnodes = [\n  \"a:1\",\n  \"b\",\n]\n", "redis.nodes[1]", 5, {"missing ':port'"}},
    // scalar keys of [redis]
    {"key_empty", "[redis]\nhost = \"h:1\"\nkey = \"\"\n", "redis.key", 3, {"non-empty", "empty string"}},
    {"key_wrong_type", "[redis]\nhost = \"h:1\"\nkey = 42\n", "redis.key", 3, {"found integer"}},
    {"monitor_try_all_string", base_with("monitor_try_all = \"yes\"\n"), "redis.monitor_try_all", 4, {"boolean", "found string"}},
    {"retries_fraction", base_with("retries_count = 4.5\n"), "redis.retries_count", 4, {"integer", "4.5", "whole number"}},
    {"retries_zero", base_with("retries_count = 0\n"), "redis.retries_count", 4, {"integer >= 1", "found 0"}},
    {"retries_string", base_with("retries_count = \"4\"\n"), "redis.retries_count", 4, {"integer", "found string"}},
    {"expire_bool", base_with("expire = true\n"), "redis.expire", 4,
     {"expected a duration (string such as \"5s\" or integer seconds), found boolean"}},
    {"expire_no_unit_word", base_with("expire = \"5 seconds\"\n"), "redis.expire", 4, {"a duration", "found \"5 seconds\""}},
    {"expire_unknown_unit", base_with("expire = \"5sec\"\n"), "redis.expire", 4, {"unknown unit 'sec'"}},
    {"expire_zero", base_with("expire = \"0s\"\n"), "redis.expire", 4, {"> 0", "found \"0s\""}},
    {"expire_negative_int", base_with("expire = -5\n"), "redis.expire", 4, {"> 0", "found -5"}},
    {"expire_negative_str", base_with("expire = \"-5s\"\n"), "redis.expire", 4, {"negative"}},
    {"expire_overflow_str", base_with("expire = \"99999999999999999999ms\"\n"), "redis.expire", 4, {"too large"}},
    {"expire_overflow_int", base_with("expire = 9223372036854775807\n"), "redis.expire", 4, {"too large"}},
    {"expire_float", base_with("expire = 1.5\n"), "redis.expire", 4, {"a duration", "found float"}},
    {"cron_equals_expire", base_with("expire = \"5s\"\ncron = \"5s\"\n"), "redis.cron", 5, {"less than redis.expire", "found 5s"}},
    {"cron_plus_grace", base_with("expire = \"3s\"\ncron = \"1s\"\n", "[task]\nkill_grace = \"2s\"\n"), "task.kill_grace", 7,
     {"could not be stopped before the lease expires", "1s", "2s", "3s"}},
    {"cron_default_plus_grace", base_with("expire = \"2s\"\n"), "redis.expire", 4,
     {"could not be stopped before the lease expires", "expire/5", "(default)"}},
    {"cron_zero", base_with("cron = \"0ms\"\n"), "redis.cron", 4, {"> 0"}},
    {"value_empty", base_with("value = \"\"\n"), "redis.value", 4, {"non-empty", "empty string"}},
    {"db_too_big", base_with("db = 16\n"), "redis.db", 4, {"0 to 15", "found 16"}},
    {"db_negative", base_with("db = -1\n"), "redis.db", 4, {"0 to 15", "found -1"}},
    {"db_string", base_with("db = \"0\"\n"), "redis.db", 4, {"0 to 15", "found string"}},
    {"connect_timeout_no_unit", base_with("connect_timeout = \"500\"\n"), "redis.connect_timeout", 4, {"missing unit"}},
    {"io_timeout_zero", base_with("io_timeout = 0\n"), "redis.io_timeout", 4, {"> 0", "found 0"}},
    {"drift_factor_half", base_with("drift_factor = 0.5\n"), "redis.drift_factor", 4, {"0.5", "found 0.5"}},
    {"drift_factor_negative", base_with("drift_factor = -0.1\n"), "redis.drift_factor", 4, {"found -0.1"}},
    {"drift_fixed_bool", base_with("drift_fixed = false\n"), "redis.drift_fixed", 4, {"a duration", "found boolean"}},
    {"restart_guard_string", base_with("restart_guard = \"yes\"\n"), "redis.restart_guard", 4, {"found string"}},
    {"username_without_password", base_with("username = \"app\"\n"), "redis.username", 4, {"password", "found none"}},
    {"username_type", base_with("username = 5\n"), "redis.username", 4, {"found integer"}},
    // passwords
    {"password_two_ways", base_with("password_env = \"PW\"\npassword_file = \"/x\"\n"), "redis.password_file", 5,
     {"'password_env'", "'password_file'", "two ways"}},
    {"password_env_unset", base_with("password_env = \"REDIS_PASSWORD\"\n"), "redis.password_env", 4,
     {"REDIS_PASSWORD", "unset"}},
    {"password_env_empty", base_with("password_env = \"EMPTY_VAR\"\n"), "redis.password_env", 4, {"EMPTY_VAR", "empty"}},
    {"password_env_type", base_with("password_env = 1\n"), "redis.password_env", 4, {"environment variable", "found integer"}},
    {"password_file_missing", base_with("password_file = \"/nonexistent/redis.pass\"\n"), "redis.password_file", 4,
     {"/nonexistent/redis.pass", "No such file"}},
    {"password_file_dir", base_with("password_file = \"/\"\n"), "redis.password_file", 4, {"not a regular file"}},
    {"password_file_device", base_with("password_file = \"/dev/zero\"\n"), "redis.password_file", 4, {"not a regular file"}},
    {"password_empty_inline", base_with("password = \"\"\n"), "redis.password", 4, {"non-empty", "empty string"}},
    {"password_type", base_with("password = 12345\n"), "redis.password", 4, {"a string", "found integer"}},
    // [backoff]
    {"strategy_unknown", base_with("", "[backoff]\nstrategy = \"expo\"\n"), "backoff.strategy", 5,
     {"one of", "\"exponential\"", "\"adaptive\"", "found \"expo\""}},
    {"jitter_unknown", base_with("", "[backoff]\njitter = \"half\"\n"), "backoff.jitter", 5, {"\"decorrelated\"", "found \"half\""}},
    {"factor_below_one", base_with("", "[backoff]\nfactor = 0.5\n"), "backoff.factor", 5, {">= 1.0", "found 0.5"}},
    {"factor_string", base_with("", "[backoff]\nfactor = \"2\"\n"), "backoff.factor", 5, {"found string"}},
    {"initial_above_max", base_with("", "[backoff]\ninitial = \"2s\"\nmax = \"1s\"\n"), "backoff.initial", 5,
     {"initial <= backoff.max", "2s", "1s"}},
    {"simple_without_intervals", base_with("", "[backoff]\nstrategy = \"simple\"\n"), "backoff.intervals", 5, {"simple", "non-empty"}},
    {"simple_empty_intervals", base_with("", "[backoff]\nstrategy = \"simple\"\nintervals = []\n"), "backoff.intervals", 6, {"non-empty"}},
    {"intervals_bad_element", base_with("", "[backoff]\nstrategy = \"simple\"\nintervals = [\"10ms\", \"x\"]\n"),
     "backoff.intervals[1]", 6, {"found \"x\""}},
    {"intervals_not_array", base_with("", "[backoff]\nintervals = \"10ms\"\n"), "backoff.intervals", 5, {"array", "found string"}},
    // [task]
    {"command_empty_array", base_with("", "[task]\ncommand = []\n"), "task.command", 5, {"non-empty command", "empty array"}},
    {"command_empty_string", base_with("", "[task]\ncommand = \"  \"\n"), "task.command", 5, {"non-empty command", "empty string"}},
    {"command_number", base_with("", "[task]\ncommand = 5\n"), "task.command", 5, {"array of strings", "found integer"}},
    {"command_empty_program", base_with("", "[task]\ncommand = [\"\", \"x\"]\n"), "task.command[0]", 5, {"program", "empty string"}},
    {"command_arg_type", base_with("", "[task]\ncommand = [\"/bin/echo\", 1]\n"), "task.command[1]", 5, {"found integer"}},
    {"mode_unknown", base_with("", "[task]\nmode = \"daemon\"\n"), "task.mode", 5, {"\"oneshot\"", "\"supervise\"", "found \"daemon\""}},
    {"restart_unknown", base_with("", "[task]\nrestart = \"sometimes\"\n"), "task.restart", 5, {"\"on-failure\"", "found \"sometimes\""}},
    {"restart_delay_negative", base_with("", "[task]\nrestart_delay = -1\n"), "task.restart_delay", 5, {">= 0", "found -1"}},
    {"kill_signal_unknown", base_with("", "[task]\nkill_signal = \"SIGFOO\"\n"), "task.kill_signal", 5, {"signal name", "found \"SIGFOO\""}},
    {"kill_signal_number", base_with("", "[task]\nkill_signal = 64\n"), "task.kill_signal", 5, {"1 to 31", "found 64"}},
    {"kill_signal_type", base_with("", "[task]\nkill_signal = 1.5\n"), "task.kill_signal", 5, {"found float"}},
    {"kill_grace_zero", base_with("", "[task]\nkill_grace = \"0ms\"\n"), "task.kill_grace", 5, {"> 0"}},
    {"timeout_zero", base_with("", "[task]\ntimeout = \"0s\"\n"), "task.timeout", 5, {"> 0"}},
    {"workdir_type", base_with("", "[task]\nworkdir = 5\n"), "task.workdir", 5, {"directory", "found integer"}},
    {"env_not_table", base_with("", "[task]\nenv = \"A=B\"\n"), "task.env", 5, {"table of strings", "found string"}},
    {"env_value_type", base_with("", "[task]\nenv = { A = 1 }\n"), "task.env.A", 5, {"string", "found integer"}},
    {"env_key_with_equals", base_with("", "[task.env]\n\"A=B\" = \"x\"\n"), "task.env.A=B", 5, {"no '='"}},
    {"restart_limit_negative", base_with("", "[task]\nrestart_limit = -1\n"), "task.restart_limit", 5, {"integer >= 0", "found -1"}},
    {"restart_window_zero", base_with("", "[task]\nrestart_window = \"0s\"\n"), "task.restart_window", 5, {"> 0"}},
    {"restart_window_tiny", base_with("", "[task]\nrestart_window = \"1ms\"\n"), "task.restart_window", 5,
     {"at least 1s", "cannot count a crash loop"}},
    {"cron_tiny", base_with("expire = \"100ms\"\ncron = \"1ms\"\n", "[task]\nkill_grace = \"20ms\"\n"), "redis.cron", 5,
     {"at least 100ms", "found 1ms"}},
    {"step_down_hold_type", base_with("", "[task]\nstep_down_hold = true\n"), "task.step_down_hold", 5, {"a duration", "found boolean"}},
    // maxima (issue 8 item 6): durations at most a year, expire at most a day, keys 512 bytes
    {"timeout_huge", base_with("", "[task]\ntimeout = \"5000000h\"\n"), "task.timeout", 5, {"at most 1 year", "\"5000000h\""}},
    {"timeout_huge_int", base_with("", "[task]\ntimeout = 31536001\n"), "task.timeout", 5, {"at most 1 year", "31536001"}},
    {"expire_above_a_day", base_with("expire = \"25h\"\ncron = \"1h\"\n"), "redis.expire", 4, {"at most 1 day", "found 25h"}},
    {"expire_far_above_a_day", base_with("expire = \"5000000h\"\n"), "redis.expire", 4, {"at most 1 day", "found 5000000h"}},
    {"io_timeout_above_expire", base_with("io_timeout = \"6s\"\n"), "redis.io_timeout", 4, {"shorter than redis.expire (5s)", "found 6s"}},
    {"connect_timeout_huge", base_with("connect_timeout = \"9000h\"\n"), "redis.connect_timeout", 4, {"at most 1 year"}},
    {"cluster_key_brace_without_tag", "[redis]\ncluster_nodes = [\"h:1\"]\nkey = \"a}b\"\n", "redis.key", 3,
     {"non-empty hash tag", "found \"a}b\""}},
    {"cluster_key_empty_tag", "[redis]\ncluster_nodes = [\"h:1\"]\nkey = \"{}x\"\n", "redis.key", 3, {"non-empty hash tag"}},
    {"key_too_long", "[redis]\nhost = \"h:1\"\nkey = \"" + std::string(513, 'k') + "\"\n", "redis.key", 3,
     {"at most 512 bytes", "found 513 bytes"}},
    // [log]
    {"level_unknown", base_with("", "[log]\nlevel = \"verbose\"\n"), "log.level", 5, {"\"trace\"", "\"error\"", "found \"verbose\""}},
    {"format_unknown", base_with("", "[log]\nformat = \"xml\"\n"), "log.format", 5, {"\"json\"", "found \"xml\""}},
};

INSTANTIATE_TEST_SUITE_P(Table, ConfigMalformed, ::testing::ValuesIn(kMalformed),
                         [](const ::testing::TestParamInfo<Malformed>& p) { return std::string(p.param.name); });

TEST(ConfigMalformedCount, AtLeastThirtyCases) { EXPECT_GE(kMalformed.size(), 30u); }

// Strict config (issue 11): a misspelt or misplaced key is an error with a suggestion,
// never a silent default; each case names the key, its line and the likely intent.
const std::vector<Malformed> kStrict = {
    {"expier_misspelt", base_with("expier = \"10s\"\n"), "redis.expier", 4, {"unknown key 'redis.expier'", "did you mean 'expire'?"}},
    {"tsl_misspelt", base_with("tsl = true\n"), "redis.tsl", 4, {"did you mean 'tls'?"}},
    {"passwrod_env_misspelt", base_with("passwrod_env = \"X\"\n"), "redis.passwrod_env", 4, {"did you mean 'password_env'?"}},
    {"crom_misspelt", base_with("crom = \"1s\"\n"), "redis.crom", 4, {"did you mean 'cron'?"}},
    {"nodess_misspelt", "[redis]\nnodess = [\"h:1\"]\nkey = \"k\"\n", "redis.nodess", 2, {"did you mean 'nodes'?"}},
    {"monitor_try_al_misspelt", base_with("monitor_try_al = false\n"), "redis.monitor_try_al", 4, {"did you mean 'monitor_try_all'?"}},
    {"tls_ca_misspelt", base_with("tls = true\ntls_ca = \"/x\"\n"), "redis.tls_ca", 5, {"did you mean 'tls_ca_file'?"}},
    {"sentinel_mater_misspelt", "[redis]\nsentinels = [\"h:1\"]\nsentinel_mater = \"m\"\nkey = \"k\"\n", "redis.sentinel_mater", 3,
     {"did you mean 'sentinel_master'?"}},
    {"strategy_in_redis", base_with("strategy = \"constant\"\n"), "redis.strategy", 4, {"belongs in [backoff]"}},
    {"kill_grace_in_redis", base_with("kill_grace = \"1s\"\n"), "redis.kill_grace", 4, {"belongs in [task]"}},
    {"comand_misspelt", base_with("", "[task]\ncomand = [\"true\"]\n"), "task.comand", 5, {"did you mean 'command'?"}},
    {"restart_dealy_misspelt", base_with("", "[task]\nrestart_dealy = \"1s\"\n"), "task.restart_dealy", 5, {"did you mean 'restart_delay'?"}},
    {"kill_signl_misspelt", base_with("", "[task]\nkill_signl = \"SIGINT\"\n"), "task.kill_signl", 5, {"did you mean 'kill_signal'?"}},
    {"workdri_misspelt", base_with("", "[task]\nworkdri = \"/\"\n"), "task.workdri", 5, {"did you mean 'workdir'?"}},
    {"jiter_misspelt", base_with("", "[backoff]\njiter = \"full\"\n"), "backoff.jiter", 5, {"did you mean 'jitter'?"}},
    {"levle_misspelt", base_with("", "[log]\nlevle = \"debug\"\n"), "log.levle", 5, {"did you mean 'level'?"}},
    {"section_tsak", base_with("", "[tsak]\nmode = \"oneshot\"\n"), "tsak", 4, {"unknown section [tsak]", "did you mean 'task'?"}},
    {"section_logs", base_with("", "[logs]\nlevel = \"info\"\n"), "logs", 4, {"did you mean 'log'?"}},
    {"timeout_above_a_year", base_with("", "[task]\ntimeout = \"9000h\"\n"), "task.timeout", 5, {"at most 1 year", "found \"9000h\""}},
    {"restart_delay_above_a_year", base_with("", "[task]\nrestart_delay = \"366d\"\n"), "task.restart_delay", 5, {"found"}},
    {"backoff_max_above_a_year", base_with("", "[backoff]\nmax = \"9000h\"\n"), "backoff.max", 5, {"at most 1 year"}},
    {"limit_above_its_maximum", base_with("", "[task]\nlimit = 100\n"), "task.limit", 5, {"from 1 to 64", "found 100"}},
    {"health_falls_misspelt", base_with("", "[task]\nhealth_falls = 3\n"), "task.health_falls", 5, {"did you mean 'health_fall'?"}},
};

INSTANTIATE_TEST_SUITE_P(Strict, ConfigMalformed, ::testing::ValuesIn(kStrict),
                         [](const ::testing::TestParamInfo<Malformed>& p) { return std::string(p.param.name); });

TEST(ConfigStrictCount, AtLeastFifteenCases) { EXPECT_GE(kStrict.size(), 15u); }

// `status` needs only [redis] (and [log]): a broken [task] or [backoff] is not its business.
TEST(ConfigScope, RedisScopeIgnoresProblemsOfTaskAndBackoff) {
  const std::string text = kBase + "[task]\ncomand = [\"true\"]\nmode = \"sometimes\"\n[backoff]\nstrategy = \"zigzag\"\n";
  auto all = load_string(text, kFile, fake_env({}), Scope::kAll);
  EXPECT_FALSE(all.config);
  EXPECT_EQ(all.errors.size(), 3u) << all_diagnostics(all);
  auto redis = load_string(text, kFile, fake_env({}), Scope::kRedis);
  ASSERT_TRUE(redis.config) << all_diagnostics(redis);
  EXPECT_EQ(redis.config->redis.key, "k");
  // A broken [redis] still fails in that scope.
  auto bad = load_string(kBase + "expier = \"1s\"\n[task]\nmode = \"x\"\n", kFile, fake_env({}), Scope::kRedis);
  EXPECT_FALSE(bad.config);
  ASSERT_EQ(bad.errors.size(), 1u) << all_diagnostics(bad);
  EXPECT_EQ(bad.errors[0].key, "redis.expier");
}

TEST(ConfigValues, NonAsciiInStringsCommentsAndQuotedKeysIsFine) {
  auto r = load(kBase + "# caf\xC3\xA9 \xE2\x80\x94 a comment\nvalue = \"h\xC3\xB4te\"\n[task]\n"
                "command = '''/bin/echo \xF0\x9F\x94\x92'''\nenv = { \"na\xC3\xAFve\" = \"\\\"\xC3\xA9\\\"\", "
                "B = \"\"\"x\xC3\xA9\\\n  y\"\"\", C = '\xC3\xA9' }\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.value, "h\xC3\xB4te");
  EXPECT_EQ(r.config->task.env.at("na\xC3\xAFve"), "\"\xC3\xA9\"");
}

TEST(ConfigValues, StepDownSettingsAndTheirDefaults) {
  auto r = load(kBase + "expire = \"4s\"\n[task]\nmode = \"supervise\"\nrestart_limit = 0\nrestart_window = \"10m\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->task.restart_limit, 0);
  EXPECT_EQ(r.config->task.restart_window, 10min);
  EXPECT_FALSE(r.config->task.step_down_hold);
  EXPECT_EQ(redisgo::config::effective_step_down_hold(*r.config), 8s);  // 2 x expire
  r = load(kBase + "[task]\nmode = \"supervise\"\nstep_down_hold = \"0s\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(redisgo::config::effective_step_down_hold(*r.config), 0s);
  // At the maxima, accepted.
  r = load(kBase + "expire = \"24h\"\ncron = \"1h\"\n[task]\ntimeout = \"8760h\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(*r.config->task.timeout, 8760h);
  r = load("[redis]\nhost = \"h:1\"\nkey = \"" + std::string(512, 'k') + "\"\n");
  EXPECT_TRUE(r.config) << all_diagnostics(r);
}

TEST(ConfigErrors, AllErrorsOfAFileAreReportedInOrder) {
  auto r = load(
      "[redis]\n"                       // 1
      "host = \"nohost\"\n"             // 2
      "key = \"k\"\n"                   // 3
      "expire = true\n"                 // 4
      "[backoff]\n"                     // 5
      "jitter = \"lots\"\n"             // 6
      "[task]\n"                        // 7
      "command = []\n"                  // 8
      "kill_signal = \"SIGNOPE\"\n"     // 9
      "[log]\n"                         // 10
      "level = \"loud\"\n");            // 11
  EXPECT_FALSE(r.config);
  std::vector<std::pair<std::string, int>> got;
  for (const auto& e : r.errors) got.emplace_back(e.key, e.line);
  std::vector<std::pair<std::string, int>> want = {{"redis.host", 2},   {"redis.expire", 4}, {"backoff.jitter", 6},
                                                   {"task.command", 8}, {"task.kill_signal", 9}, {"log.level", 11}};
  EXPECT_EQ(got, want) << all_diagnostics(r);
}

TEST(ConfigErrors, UnreadableFileIsOneError) {
  auto r = load_file("/nonexistent/dir/x.toml", fake_env({}));
  EXPECT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, "/nonexistent/dir/x.toml");
  EXPECT_NE(r.errors[0].str().find("/nonexistent/dir/x.toml"), std::string::npos);
  EXPECT_NE(r.errors[0].message.find("No such file"), std::string::npos) << r.errors[0].str();
}

// Found by an attack round: `--config /dev/zero` grew the process to 5 GB, and a 1 GB
// file took 2 GB and 8 s, before the first byte's error was reported.
TEST(ConfigErrors, AFileFarTooLargeForAConfigIsRefusedWithoutReadingItAll) {
  auto r = load_file("/dev/zero", fake_env({}));
  EXPECT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u) << all_diagnostics(r);
  EXPECT_EQ(r.errors[0].file, "/dev/zero");
  EXPECT_NE(r.errors[0].message.find("larger than 4 MiB"), std::string::npos) << r.errors[0].str();
}

TEST(ConfigErrors, LoadFileReportsThePathAndLine) {
  TempDir dir;
  std::string path = dir.write("bad.toml", kBase + "\nexpire = \"soon\"\n");
  auto r = load_file(path, fake_env({}));
  ASSERT_EQ(r.errors.size(), 1u) << all_diagnostics(r);
  EXPECT_EQ(r.errors[0].str().rfind(path + ":5:", 0), 0u) << r.errors[0].str();
}

// ---- warnings -------------------------------------------------------------------------

const Diagnostic* error_for(const LoadResult& r, const std::string& key) {
  for (const auto& e : r.errors) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

const Diagnostic* warning_for(const LoadResult& r, const std::string& key) {
  for (const auto& w : r.warnings) {
    if (w.key == key) return &w;
  }
  return nullptr;
}

TEST(ConfigCoordinator, TheCoordinatorKeysLoadWithTheirDefaults) {
  auto r = load(kBase + "[task]\nmode = \"supervise\"\nlimit = 3\nhealth_command = [\"true\"]\n"
                        "health_interval = \"2s\"\nhealth_timeout = \"1s\"\nhealth_fall = 4\n"
                        "[metrics]\nlisten = \"127.0.0.1:9464\"\ntextfile = \"/tmp/x.prom\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  const auto& t = r.config->task;
  EXPECT_EQ(t.limit, 3);
  EXPECT_EQ(t.health_command, (std::vector<std::string>{"true"}));
  EXPECT_EQ(t.health_interval, std::chrono::seconds(2));
  EXPECT_EQ(t.health_timeout, std::chrono::seconds(1));
  EXPECT_EQ(t.health_fall, 4);
  EXPECT_FALSE(t.once_per);
  EXPECT_EQ(r.config->metrics.listen, "127.0.0.1:9464");
  EXPECT_EQ(r.config->metrics.textfile, "/tmp/x.prom");
  EXPECT_TRUE(r.config->metrics.enabled());

  auto d = load(kBase + "[task]\nonce_per = \"15m\"\n");
  ASSERT_TRUE(d.config) << all_diagnostics(d);
  EXPECT_EQ(d.config->task.once_per, std::chrono::minutes(15));
  EXPECT_EQ(d.config->task.limit, 1);
  EXPECT_TRUE(d.config->task.health_command.empty());
  EXPECT_FALSE(d.config->metrics.enabled());
  // validate shows them, with what "none" means.
  const std::string shown = render_effective(*d.config);
  EXPECT_NE(shown.find("once_per = \"15m\""), std::string::npos) << shown;
  EXPECT_NE(shown.find("limit = 1"), std::string::npos) << shown;
  EXPECT_NE(shown.find("[metrics]"), std::string::npos) << shown;
}

// A key that only the other mode uses is a warning and is dropped, whichever key it is
// (issue 20 item 7): restart keys in a oneshot file used to pass without a word while
// health_command was refused. Not an error: the manual's example gives restart keys in a
// oneshot file, and switching `mode` must not make the rest of a file invalid.
TEST(ConfigModes, EveryKeyOfTheOtherModeIsWarnedAboutAndIgnored) {
  struct Case {
    std::string redis, task;  ///< the key's line, in its section
    const char* key;
  };
  const std::string supervise = "mode = \"supervise\"\n";
  const std::vector<Case> cases = {
      {"", "restart = \"always\"\n", "task.restart"},
      {"", "restart_delay = \"5s\"\n", "task.restart_delay"},
      {"", "restart_limit = 1\n", "task.restart_limit"},
      {"", "restart_window = \"5m\"\n", "task.restart_window"},
      {"", "step_down_hold = \"1m\"\n", "task.step_down_hold"},
      {"", "health_command = [\"true\"]\n", "task.health_command"},
      {"", "health_interval = \"2s\"\n", "task.health_interval"},
      {"", "health_timeout = \"20s\"\n", "task.health_timeout"},  // >= the interval: moot
      {"", "health_fall = 5\n", "task.health_fall"},
      {"", supervise + "timeout = \"1h\"\n", "task.timeout"},
      {"", supervise + "once_per = \"15m\"\nlimit = 2\n", "task.once_per"},  // limit 2: moot
      {"monitor_try_all = false\n", supervise, "redis.monitor_try_all"},
      {"retries_count = 2\n", supervise, "redis.retries_count"},
      {"unreachable_timeout = \"5m\"\n", supervise, "redis.unreachable_timeout"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.key);
    const bool in_oneshot = c.task.find("supervise") == std::string::npos;
    auto r = load(kBase + c.redis + "[task]\n" + c.task);
    ASSERT_TRUE(r.config) << all_diagnostics(r);
    const Diagnostic* w = warning_for(r, c.key);
    ASSERT_NE(w, nullptr) << all_diagnostics(r);
    EXPECT_EQ(w->line, c.redis.empty() ? (in_oneshot ? 5 : 6) : 4) << w->str();
    EXPECT_NE(w->message.find(in_oneshot ? "applies to mode = \"supervise\" only; ignored in oneshot mode"
                                         : "applies to mode = \"oneshot\" only; ignored in supervise mode"),
              std::string::npos)
        << w->str();
    // Dropped: what is in effect is the file without it (limit aside, which applies in both).
    auto without = load(kBase + "[task]\n" + (in_oneshot ? "" : supervise) +
                        (std::string(c.key) == "task.once_per" ? "limit = 2\n" : ""));
    ASSERT_TRUE(without.config) << all_diagnostics(without);
    EXPECT_EQ(*r.config, *without.config);
    // validate prints what is in effect: read back, it warns of nothing.
    auto again = load(render_effective(*r.config));
    ASSERT_TRUE(again.config) << all_diagnostics(again);
    EXPECT_TRUE(again.warnings.empty()) << all_diagnostics(again);
    // status and handover do not know the mode and do not care.
    auto redis_only = load_string(kBase + c.redis + "[task]\n" + c.task, kFile, fake_env({}), Scope::kRedis);
    EXPECT_TRUE(redis_only.warnings.empty()) << all_diagnostics(redis_only);
  }
  // A bad value is an error in either mode.
  auto bad = load(kBase + "[task]\nrestart = \"sometimes\"\n");
  EXPECT_FALSE(bad.config);
  EXPECT_EQ(warning_for(bad, "task.restart"), nullptr) << all_diagnostics(bad);
}

TEST(ConfigCoordinator, EachKeyIsRefusedWhereItCannotApply) {
  struct Case {
    std::string text;
    const char* key;
    const char* says;
  };
  for (const auto& c : std::vector<Case>{
           {"[task]\nonce_per = \"1m\"\nlimit = 2\n", "task.once_per", "limit = 1"},
           {"[task]\nonce_per = \"1500ms\"\n", "task.once_per", "whole number of seconds"},
           {"[task]\nonce_per = \"500ms\"\n", "task.once_per", "at least"},
           {"[task]\nmode = \"supervise\"\nhealth_interval = \"5s\"\n", "task.health_interval", "health_command"},
           {"[task]\nmode = \"supervise\"\nhealth_command = \"true\"\nhealth_timeout = \"10s\"\n",
            "task.health_timeout", "health_timeout < health_interval"},
           {"[task]\nmode = \"supervise\"\nhealth_command = []\n", "task.health_command", "non-empty"},
           {"[task]\nmode = \"supervise\"\nhealth_command = \"true\"\nhealth_interval = \"50ms\"\nhealth_timeout = \"10ms\"\n",
            "task.health_interval", "at least"},
           {"[task]\nmode = \"supervise\"\nhealth_command = \"true\"\nhealth_fall = 0\n", "task.health_fall", "from 1"},
           {"[task]\nlimit = 0\n", "task.limit", "from 1 to 64"},
           {"[task]\nlimit = 65\n", "task.limit", "from 1 to 64"},
           {"[metrics]\nlisten = \"9464\"\n", "metrics.listen", "host:port"},
           {"[metrics]\nlisten = \"unix:///x.sock\"\n", "metrics.listen", "TCP"},
           {"[metrics]\ntextfile = \"\"\n", "metrics.textfile", "empty"},
           {"[metrics]\nlisen = \"127.0.0.1:1\"\n", "metrics.lisen", "did you mean 'listen'?"},
       }) {
    auto r = load(kBase + c.text);
    EXPECT_FALSE(r.config) << c.text;
    const Diagnostic* e = error_for(r, c.key);
    ASSERT_NE(e, nullptr) << c.text << "\n" << all_diagnostics(r);
    EXPECT_NE(e->message.find(c.says), std::string::npos) << e->str();
    EXPECT_GT(e->line, 3) << e->str();  // the line of the key, not of the file
  }
}

// ---- Production Redis: the four ways to say where the lease lives, TLS ----------------

TEST(ConfigModes, EachWayOfNamingTheServersSetsItsTopology) {
  struct Case {
    std::string lines;
    Topology topology;
  };
  for (const auto& c : std::vector<Case>{
           {"host = \"10.0.0.1:6379\"\n", Topology::kSingle},
           {"nodes = [\"10.0.0.1:6379\", \"10.0.0.2:6379\", \"10.0.0.3:6379\"]\n", Topology::kRedlock},
           {"sentinels = [\"10.0.0.1:26379\", \"10.0.0.2:26379\"]\nsentinel_master = \"mymaster\"\n",
            Topology::kSentinel},
           {"cluster_nodes = [\"10.0.0.1:7000\"]\n", Topology::kCluster}}) {
    auto r = load("[redis]\nkey = \"k\"\n" + c.lines);
    ASSERT_TRUE(r.config) << c.lines << all_diagnostics(r);
    EXPECT_EQ(r.config->redis.topology, c.topology) << c.lines;
  }
  auto r = load("[redis]\nkey = \"k\"\nsentinels = [\"a:1\", \"b:2\"]\nsentinel_master = \"m\"\n"
                "sentinel_wait_replicas = 1\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.sentinels, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(r.config->redis.sentinel_master, "m");
  EXPECT_EQ(r.config->redis.sentinel_wait_replicas, 1);
  EXPECT_TRUE(r.config->redis.nodes.empty());
}

TEST(ConfigModes, TwoWaysAtOnceNameBothAndTheLaterLine) {
  auto r = load("[redis]\nkey = \"k\"\nnodes = [\"a:1\"]\ncluster_nodes = [\"b:2\"]\n");
  EXPECT_FALSE(r.config);
  const Diagnostic* e = error_for(r, "redis.cluster_nodes");
  ASSERT_NE(e, nullptr) << all_diagnostics(r);
  EXPECT_EQ(e->line, 4);
  EXPECT_NE(e->message.find("'nodes' and 'cluster_nodes' are mutually exclusive"), std::string::npos) << e->str();
  auto none = load("[redis]\nkey = \"k\"\n");
  const Diagnostic* m = error_for(none, "redis.host");
  ASSERT_NE(m, nullptr) << all_diagnostics(none);
  EXPECT_NE(m->message.find("'sentinels' (Sentinel) or 'cluster_nodes'"), std::string::npos) << m->str();
}

TEST(ConfigModes, SentinelMistakesAreErrors) {
  struct Case {
    std::string lines;
    std::string key;
    std::string says;
  };
  const std::string s = "sentinels = [\"a:26379\"]\n";
  for (const auto& c : std::vector<Case>{
           {s, "redis.sentinel_master", "missing: expected the name of the master"},
           {"host = \"a:1\"\nsentinel_master = \"m\"\n", "redis.sentinel_master", "applies only with 'sentinels'"},
           {"host = \"a:1\"\nsentinel_wait_replicas = 1\n", "redis.sentinel_wait_replicas", "applies only with"},
           {"sentinels = [\"unix:///x.sock\"]\nsentinel_master = \"m\"\n", "redis.sentinels[0]", "unix socket"},
           {s + "sentinel_master = \"m\"\nsentinel_username = \"u\"\n", "redis.sentinel_username",
            "expected a password with the sentinels' ACL user"},
           {s + "sentinel_master = \"m\"\nsentinel_password_env = \"NOPE_UNSET\"\n", "redis.sentinel_password_env",
            "found it unset"},
           {s + "sentinel_master = \"m\"\nsentinel_password = \"x\"\nsentinel_password_env = \"E\"\n",
            "redis.sentinel_password_env", "given two ways"},
           {s + "sentinel_master = \"m\"\nsentinel_wait_replicas = -1\n", "redis.sentinel_wait_replicas", "expected"},
           {"cluster_nodes = [\"a:7000\"]\ndb = 3\n", "redis.db", "Redis Cluster has only database 0"},
           {"cluster_nodes = []\n", "redis.cluster_nodes", "at least one address"},
           {"cluster_nodes = [\"a:7000\", \"a:7000\"]\n", "redis.cluster_nodes[1]", "listed twice"},
       }) {
    auto r = load("[redis]\nkey = \"k\"\n" + c.lines);
    EXPECT_FALSE(r.config) << c.lines;
    const Diagnostic* e = error_for(r, c.key);
    ASSERT_NE(e, nullptr) << c.lines << "\n" << all_diagnostics(r);
    EXPECT_NE(e->message.find(c.says), std::string::npos) << e->str();
  }
}

TEST(ConfigTls, SettingsWithoutTlsAreErrorsNotSilentlyIgnored) {
  TempDir dir;
  const std::string ca = dir.path() + "/ca.pem";
  { std::ofstream(ca) << "-----BEGIN CERTIFICATE-----\n"; }
  struct Case {
    std::string lines;
    std::string key;
    std::string says;
  };
  for (const auto& c : std::vector<Case>{
           {"tls_ca_file = \"" + ca + "\"\n", "redis.tls_ca_file", "applies only with tls = true"},
           {"tls = false\ntls_server_name = \"r\"\n", "redis.tls_server_name", "found tls = false"},
           {"tls = true\ntls_ca_file = \"" + dir.path() + "/missing.pem\"\n", "redis.tls_ca_file", "missing.pem"},
           {"tls = true\ntls_ca_file = \"" + dir.path() + "\"\n", "redis.tls_ca_file", "not a regular file"},
           {"tls = true\ntls_cert_file = \"" + ca + "\"\n", "redis.tls_cert_file", "both tls_cert_file and tls_key_file"},
           {"tls = \"yes\"\n", "redis.tls", "expected"},
       }) {
    auto r = load(kBase + c.lines);
    EXPECT_FALSE(r.config) << c.lines;
    const Diagnostic* e = error_for(r, c.key);
    ASSERT_NE(e, nullptr) << c.lines << "\n" << all_diagnostics(r);
    EXPECT_NE(e->message.find(c.says), std::string::npos) << e->str();
  }
  auto unix_node = load("[redis]\nkey = \"k\"\nhost = \"unix:///run/redis.sock\"\ntls = true\n");
  const Diagnostic* e = error_for(unix_node, "redis.host");
  ASSERT_NE(e, nullptr) << all_diagnostics(unix_node);
  EXPECT_NE(e->message.find("no TLS on unix sockets"), std::string::npos) << e->str();
}

TEST(ConfigTls, FullSettingsLoadAndSkipVerifyWarns) {
  TempDir dir;
  for (const char* f : {"/ca.pem", "/c.pem", "/k.pem"}) std::ofstream(dir.path() + f) << "x\n";
  ::chmod((dir.path() + "/k.pem").c_str(), 0600);
  auto r = load(kBase + "tls = true\ntls_ca_file = \"" + dir.path() + "/ca.pem\"\ntls_cert_file = \"" + dir.path() +
                "/c.pem\"\ntls_key_file = \"" + dir.path() + "/k.pem\"\ntls_server_name = \"redis.internal\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_TRUE(r.warnings.empty()) << all_diagnostics(r);
  const TlsConfig& t = r.config->redis.tls;
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.ca_file, dir.path() + "/ca.pem");
  EXPECT_EQ(t.cert_file, dir.path() + "/c.pem");
  EXPECT_EQ(t.key_file, dir.path() + "/k.pem");
  EXPECT_EQ(t.server_name, "redis.internal");
  EXPECT_FALSE(t.skip_verify);
  // Rendered and read back: the same settings.
  auto again = load(render_effective(*r.config));
  ASSERT_TRUE(again.config) << all_diagnostics(again);
  EXPECT_EQ(again.config->redis, r.config->redis);

  ::chmod((dir.path() + "/k.pem").c_str(), 0644);
  auto open_key = load(kBase + "tls = true\ntls_cert_file = \"" + dir.path() + "/c.pem\"\ntls_key_file = \"" +
                       dir.path() + "/k.pem\"\n");
  ASSERT_TRUE(open_key.config) << all_diagnostics(open_key);
  ASSERT_FALSE(open_key.warnings.empty());
  EXPECT_NE(open_key.warnings[0].message.find("readable by every user"), std::string::npos);

  auto skip = load(kBase + "tls = true\ntls_skip_verify = true\n");
  ASSERT_TRUE(skip.config) << all_diagnostics(skip);
  ASSERT_EQ(skip.warnings.size(), 1u) << all_diagnostics(skip);
  EXPECT_EQ(skip.warnings[0].key, "redis.tls_skip_verify");
  EXPECT_NE(skip.warnings[0].message.find("NOT verified"), std::string::npos);
  EXPECT_NE(render_effective(*skip.config).find("NOT VERIFIED"), std::string::npos);
}

TEST(ConfigModes, SentinelAndClusterRenderAndReadBackWithSecretsMasked) {
  auto r = load("[redis]\nkey = \"k\"\nsentinels = [\"a:1\", \"b:2\"]\nsentinel_master = \"m\"\n"
                "sentinel_username = \"su\"\nsentinel_password_env = \"SENT_PW\"\npassword_env = \"PW\"\n",
                fake_env({{"SENT_PW", kSecret}, {"PW", kSecret}}));
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.sentinel_password, kSecret);
  const std::string out = render_effective(*r.config);
  EXPECT_EQ(out.find(kSecret), std::string::npos) << out;
  auto again = load(out, fake_env({{"SENT_PW", kSecret}, {"PW", kSecret}}));
  ASSERT_TRUE(again.config) << all_diagnostics(again) << out;
  EXPECT_EQ(again.config->redis, r.config->redis);

  auto c = load("[redis]\nkey = \"k\"\ncluster_nodes = [\"a:7000\", \"b:7001\"]\n");
  ASSERT_TRUE(c.config) << all_diagnostics(c);
  auto c2 = load(render_effective(*c.config));
  ASSERT_TRUE(c2.config) << all_diagnostics(c2);
  EXPECT_EQ(c2.config->redis, c.config->redis);
}

TEST(ConfigErrors, UnknownKeysWithLineAndSuggestion) {
  auto r = load(kBase +
                "hots = \"x:1\"\n"            // 4
                "[backoff]\n"                 // 5
                "totally_unrelated = 1\n"     // 6
                "[rediss]\n"                  // 7
                "a = 1\n"                     // 8
                "[task]\n"                    // 9
                "level = \"info\"\n");        // 10
  EXPECT_FALSE(r.config) << "an unknown key is an error, never a silent default";
  const Diagnostic* w = error_for(r, "redis.hots");
  ASSERT_NE(w, nullptr) << all_diagnostics(r);
  EXPECT_EQ(w->line, 4);
  EXPECT_NE(w->message.find("unknown key 'redis.hots'"), std::string::npos) << w->str();
  EXPECT_NE(w->message.find("did you mean 'host'?"), std::string::npos) << w->str();
  w = error_for(r, "backoff.totally_unrelated");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->line, 6);
  EXPECT_EQ(w->message.find("did you mean"), std::string::npos) << w->str();
  w = error_for(r, "rediss");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->line, 7);
  EXPECT_NE(w->message.find("unknown section"), std::string::npos) << w->str();
  EXPECT_NE(w->message.find("'redis'"), std::string::npos) << w->str();
  w = error_for(r, "task.level");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->line, 10);
  EXPECT_NE(w->message.find("[log]"), std::string::npos) << w->str();
}

TEST(ConfigErrors, TopLevelKeyOutsideItsSection) {
  auto r = load("expire = \"5s\"\n" + kBase);
  EXPECT_FALSE(r.config);
  const Diagnostic* w = error_for(r, "expire");
  ASSERT_NE(w, nullptr) << all_diagnostics(r);
  EXPECT_EQ(w->line, 1);
  EXPECT_NE(w->message.find("redis.expire"), std::string::npos) << w->str();
}

TEST(ConfigWarnings, IgnoredCombinations) {
  auto r = load(kBase + "[backoff]\nintervals = [\"1s\"]\n[task]\nmode = \"supervise\"\ntimeout = \"1m\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  const Diagnostic* w = warning_for(r, "backoff.intervals");
  ASSERT_NE(w, nullptr) << all_diagnostics(r);
  EXPECT_EQ(w->line, 5);
  w = warning_for(r, "task.timeout");
  ASSERT_NE(w, nullptr) << all_diagnostics(r);
  EXPECT_EQ(w->line, 8);
}

// ---- passwords and masking -------------------------------------------------------------

TEST(ConfigPassword, FromEnv) {
  auto r = load(kBase + "password_env = \"REDIS_PASSWORD\"\nusername = \"app\"\n",
                fake_env({{"REDIS_PASSWORD", kSecret}}));
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.password, kSecret);
  EXPECT_EQ(r.config->redis.password_source, PasswordSource::kEnv);
  EXPECT_EQ(r.config->redis.password_origin, "REDIS_PASSWORD");
  EXPECT_TRUE(r.warnings.empty()) << all_diagnostics(r);
}

TEST(ConfigPassword, ProcessEnvReadsTheRealEnvironment) {
  ::setenv("REDISGO_CONFIG_TEST_VAR", "v", 1);
  EXPECT_EQ(process_env()("REDISGO_CONFIG_TEST_VAR"), "v");
  ::unsetenv("REDISGO_CONFIG_TEST_VAR");
  EXPECT_FALSE(process_env()("REDISGO_CONFIG_TEST_VAR"));
}

TEST(ConfigPassword, FromFileStripsOneNewline) {
  TempDir dir;
  std::string path = dir.write("pass", std::string(kSecret) + "\n");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  auto r = load(kBase + "password_file = \"" + path + "\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.password, kSecret);
  EXPECT_EQ(r.config->redis.password_source, PasswordSource::kFile);
  EXPECT_EQ(r.config->redis.password_origin, path);
  EXPECT_TRUE(r.warnings.empty()) << all_diagnostics(r);

  std::string two = dir.write("two", "a\n\n");  // only one newline is stripped
  ASSERT_EQ(::chmod(two.c_str(), 0600), 0);
  auto r2 = load(kBase + "password_file = \"" + two + "\"\n");
  ASSERT_TRUE(r2.config) << all_diagnostics(r2);
  EXPECT_EQ(r2.config->redis.password, "a\n");
}

TEST(ConfigPassword, EmptyOrWorldReadableFile) {
  TempDir dir;
  std::string empty = dir.write("empty", "\n");
  auto r = load(kBase + "password_file = \"" + empty + "\"\n");
  EXPECT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_NE(r.errors[0].message.find("is empty"), std::string::npos) << r.errors[0].str();

  std::string open_file = dir.write("open", kSecret);
  ASSERT_EQ(::chmod(open_file.c_str(), 0644), 0);
  auto w = load(kBase + "password_file = \"" + open_file + "\"\n");
  ASSERT_TRUE(w.config) << all_diagnostics(w);
  const Diagnostic* d = warning_for(w, "redis.password_file");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("readable by every user"), std::string::npos) << d->str();
  EXPECT_EQ(all_diagnostics(w).find(kSecret), std::string::npos);
}

void expect_round_trip(const std::string& text, const EnvLookup& env);  // ConfigRender, below

// Issue 20: systemd's LoadCredential= hands the daemon a copy of the password in
// $CREDENTIALS_DIRECTORY (readable by the unit's user only, absent from `systemctl show`);
// password_credential names it. Before: an unknown key.
TEST(ConfigPassword, FromASystemdCredential) {
  TempDir dir;
  const std::string path = dir.write("redisgo_task.redis-password", std::string(kSecret) + "\n");
  ASSERT_EQ(::chmod(path.c_str(), 0400), 0);
  auto env = fake_env({{"CREDENTIALS_DIRECTORY", dir.path()}});
  auto r = load(kBase + "password_credential = \"redisgo_task.redis-password\"\n", env);
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.password, kSecret);
  EXPECT_EQ(r.config->redis.password_source, PasswordSource::kCredential);
  EXPECT_EQ(r.config->redis.password_origin, path);
  EXPECT_TRUE(r.warnings.empty()) << all_diagnostics(r);
  const std::string shown = render_effective(*r.config);
  EXPECT_NE(shown.find("password_credential = \"redisgo_task.redis-password\"  # password = \"********\", from " + path),
            std::string::npos)
      << shown;
  EXPECT_EQ(shown.find(kSecret), std::string::npos);
  expect_round_trip(kBase + "password_credential = \"redisgo_task.redis-password\"\n", env);

  // The sentinels' own, likewise.
  const std::string sentinel_pw = dir.write("sentinel", "sentinel-secret\n");
  auto s = load("[redis]\nsentinels = [\"127.0.0.1:26379\"]\nsentinel_master = \"m\"\nkey = \"k\"\n"
                "sentinel_password_credential = \"sentinel\"\n",
                env);
  ASSERT_TRUE(s.config) << all_diagnostics(s);
  EXPECT_EQ(s.config->redis.sentinel_password, "sentinel-secret");
  EXPECT_EQ(s.config->redis.sentinel_password_source, PasswordSource::kCredential);

  // An ACL user with a credential is complete.
  auto u = load(kBase + "username = \"app\"\npassword_credential = \"redisgo_task.redis-password\"\n", env);
  EXPECT_TRUE(u.config) << all_diagnostics(u);
}

TEST(ConfigPassword, ACredentialThatIsNotThereSaysWhereItWasLookedFor) {
  TempDir dir;
  auto env = fake_env({{"CREDENTIALS_DIRECTORY", dir.path()}});
  auto r = load(kBase + "password_credential = \"redisgo_task.redis-password\"\n", env);
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u) << all_diagnostics(r);
  EXPECT_EQ(r.errors[0].key, "redis.password_credential");
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_NE(r.errors[0].message.find("in $CREDENTIALS_DIRECTORY (" + dir.path() + ")"), std::string::npos)
      << r.errors[0].str();
  EXPECT_NE(r.errors[0].message.find("LoadCredential=redisgo_task.redis-password"), std::string::npos)
      << r.errors[0].str();

  // A name that is a path (or may be the secret itself) is refused and not echoed.
  auto bad = load(kBase + "password_credential = \"" + std::string(kSecret) + "/x\"\n", env);
  ASSERT_FALSE(bad.config);
  EXPECT_NE(all_diagnostics(bad).find("systemd credential"), std::string::npos) << all_diagnostics(bad);
  EXPECT_EQ(all_diagnostics(bad).find(kSecret), std::string::npos) << all_diagnostics(bad);

  // Two ways at once is one too many.
  const std::string pass = dir.write("p", "x");
  auto two = load(kBase + "password_file = \"" + pass + "\"\npassword_credential = \"p\"\n", env);
  ASSERT_FALSE(two.config);
  EXPECT_NE(all_diagnostics(two).find("two ways"), std::string::npos) << all_diagnostics(two);
}

TEST(ConfigPassword, InlineWorksButWarns) {
  auto r = load(kBase + "password = \"" + kSecret + "\"\n");
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_EQ(r.config->redis.password, kSecret);
  EXPECT_EQ(r.config->redis.password_source, PasswordSource::kInline);
  const Diagnostic* w = warning_for(r, "redis.password");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->line, 4);
  EXPECT_NE(w->message.find("password_env"), std::string::npos);
  EXPECT_NE(w->message.find("password_file"), std::string::npos);
  EXPECT_EQ(all_diagnostics(r).find(kSecret), std::string::npos);
}

TEST(ConfigPassword, SecretNeverInDiagnostics) {
  const std::string s = kSecret;
  const std::vector<std::string> files = {
      kBase + "password = \"" + s + "\"\npassword_env = \"X\"\n",        // two ways
      kBase + "password_env = \"PW\"\npassword = \"" + s + "\"\n",       // two ways, other order
      kBase + "password = \"" + s + "\\q\"\n",                           // bad escape: syntax error
      kBase + "password = " + s + "\n",                                  // unquoted: syntax error
      kBase + "password = \"" + s + "\n",                                // unterminated
      kBase + "password = '''" + s,                                      // unterminated multi-line
      kBase + "password = [\"" + s + "\"]\n",                            // wrong type
      kBase + "password_env = \"" + s + "!\"\n",                         // the secret put where a name goes
      kBase + "pasword = \"" + s + "\"\n",                               // unknown key (typo)
      kBase + "password = \"" + s + "\"\nexpire = \"" + "x\"\n",         // unrelated error
      "password = \"" + s + "\"\n" + kBase,                              // top level
  };
  for (const auto& text : files) {
    auto r = load(text, fake_env({{"PW", s}}));
    std::string out = all_diagnostics(r);
    EXPECT_FALSE(r.errors.empty() && r.warnings.empty()) << text;
    EXPECT_EQ(out.find(s), std::string::npos) << "secret leaked for:\n" << text << "\n" << out;
    // Not even a recognisable part of it.
    EXPECT_EQ(out.find("S3cret"), std::string::npos) << out;
    if (r.config) {
      EXPECT_EQ(render_effective(*r.config).find(s), std::string::npos);
    }
  }
}

TEST(ConfigRender, MasksPasswordAndNamesItsOrigin) {
  {
    auto r = load(kBase + "password_env = \"REDIS_PASSWORD\"\n", fake_env({{"REDIS_PASSWORD", kSecret}}));
    ASSERT_TRUE(r.config) << all_diagnostics(r);
    std::string out = render_effective(*r.config);
    EXPECT_EQ(out.find(kSecret), std::string::npos) << out;
    EXPECT_NE(out.find("********"), std::string::npos) << out;
    EXPECT_NE(out.find("from env REDIS_PASSWORD"), std::string::npos) << out;
  }
  {
    TempDir dir;
    std::string path = dir.write("pass", kSecret);
    ::chmod(path.c_str(), 0600);
    auto r = load(kBase + "password_file = \"" + path + "\"\n");
    ASSERT_TRUE(r.config) << all_diagnostics(r);
    std::string out = render_effective(*r.config);
    EXPECT_EQ(out.find(kSecret), std::string::npos) << out;
    EXPECT_NE(out.find("from file " + path), std::string::npos) << out;
  }
  {
    auto r = load(kBase + "password = \"" + kSecret + "\"\n");
    ASSERT_TRUE(r.config);
    std::string out = render_effective(*r.config);
    EXPECT_EQ(out.find(kSecret), std::string::npos) << out;
    EXPECT_NE(out.find("********"), std::string::npos) << out;
    EXPECT_NE(out.find("inline"), std::string::npos) << out;
  }
}

TEST(ConfigRender, ShowsComputedDefaults) {
  auto r = load(kBase + "expire = \"6s\"\n");
  ASSERT_TRUE(r.config);
  std::string out = render_effective(*r.config);
  EXPECT_NE(out.find("cron = \"1200ms\""), std::string::npos) << out;
  EXPECT_NE(out.find("# value = generated at start"), std::string::npos) << out;
  EXPECT_NE(out.find("kill_signal = \"SIGTERM\""), std::string::npos) << out;
  EXPECT_NE(out.find("retries_count = 4\n"), std::string::npos) << out;
}

void expect_round_trip(const std::string& text, const EnvLookup& env) {
  auto first = load(text, env);
  ASSERT_TRUE(first.config) << all_diagnostics(first);
  std::string rendered = render_effective(*first.config);
  auto second = load(rendered, env);
  ASSERT_TRUE(second.config) << all_diagnostics(second) << rendered;
  EXPECT_TRUE(second.errors.empty());
  EXPECT_EQ(*second.config, *first.config) << rendered;
  EXPECT_EQ(render_effective(*second.config), rendered);
}

TEST(ConfigRender, RoundTripsThroughLoadString) {
  auto env = fake_env({{"REDIS_PASSWORD", kSecret}});
  expect_round_trip(kBase, env);
  expect_round_trip(
      "[redis]\n"
      "nodes = [\"10.0.0.1:6379\", \"[::1]:6379\", \"unix:///run/r.sock\"]\n"
      "key = \"we\\\"ird \\\\ key\\u0001\"\n"
      "monitor_try_all = false\nretries_count = 7.0\nexpire = \"1m\"\ncron = \"1500ms\"\nvalue = \"me:1\"\n"
      "username = \"app\"\npassword_env = \"REDIS_PASSWORD\"\ndb = 3\nconnect_timeout = 1\nio_timeout = \"250ms\"\n"
      "drift_factor = 0.0125\ndrift_fixed = \"0ms\"\n"
      "[backoff]\nstrategy = \"simple\"\nintervals = [\"10ms\", \"1s\"]\ninitial = \"5ms\"\nmax = \"5ms\"\n"
      "factor = 1.5\njitter = \"none\"\n"
      "[task]\ncommand = \"echo 'a b' \\\"c\\\"\\n\"\nmode = \"supervise\"\nrestart = \"never\"\nrestart_delay = 0\n"
      "kill_signal = 1\nkill_grace = \"10s\"\nworkdir = \"/var/tmp\"\nenv = { \"A B\" = \"x=y\", C = \"\" }\n"
      "[log]\nlevel = \"trace\"\nformat = \"json\"\n",
      env);
  expect_round_trip(kBase + "[task]\ncommand = [\"/bin/echo\", \"\", \"tab\\there\"]\ntimeout = \"90m\"\n", env);
  expect_round_trip(kBase + "monitor_try_all = false\nretries_count = 7\nunreachable_timeout = \"5m\"\n"
                            "[task]\nonce_per = \"15m\"\n", env);
}

// ---- the shipped example ---------------------------------------------------------------

TEST(ConfigExample, ShippedFileValidatesWithoutWarnings) {
  std::string path = std::string(REDISGO_SOURCE_DIR) + "/config/redisgo_task.toml";
  auto r = load_file(path, fake_env({}));
  ASSERT_TRUE(r.config) << all_diagnostics(r);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.warnings.empty()) << all_diagnostics(r);
  const Config& c = *r.config;
  EXPECT_EQ(c.redis.nodes, std::vector<std::string>{"127.0.0.1:6379"});
  EXPECT_EQ(c.redis.key, "Redisgo_Task_Lock_key");
  EXPECT_EQ(c.task.mode, Mode::kOneshot);
  EXPECT_FALSE(c.task.command.empty());
  // Every key of every section is present (commented-out alternatives aside).
  std::string rendered = render_effective(c);
  auto again = load(rendered, fake_env({}));
  ASSERT_TRUE(again.config) << all_diagnostics(again);
  again.config->source = c.source;
  EXPECT_EQ(*again.config, c);
}

}  // namespace

TEST(ConfigRestartGuard, OnByDefaultOffWhenSaidAndRenderedBack) {
  auto off = load("[redis]\nkey = \"k\"\nhost = \"127.0.0.1:6379\"\nrestart_guard = false\n");
  ASSERT_TRUE(off.config) << all_diagnostics(off);
  EXPECT_FALSE(off.config->redis.restart_guard);
  const std::string shown = render_effective(*off.config);
  EXPECT_NE(shown.find("restart_guard = false"), std::string::npos) << shown;
  auto again = load(shown);
  ASSERT_TRUE(again.config) << all_diagnostics(again);
  EXPECT_EQ(again.config->redis, off.config->redis);
}

}  // namespace config_load_test
