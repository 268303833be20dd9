// The shipped unit file and drop-in example, checked by systemd's own parser
// (systemd-analyze verify) and against the settings the daemon's behaviour relies on.
// The unit's source is the template systemd/redisgo_task@.service.in; what is checked is
// the unit this build generated from it (for the configured prefix), which is what
// `cmake --install` writes for that prefix (ops_install_test checks other prefixes).

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/redis_server.h"
#include "util/duration.h"

namespace systemd_unit_test {

using redisgo::testing::TempDir;
using namespace std::chrono_literals;

namespace {

const std::string kTemplate = std::string(REDISGO_SOURCE_DIR) + "/systemd/redisgo_task@.service.in";
const std::string kUnit = std::string(REDISGO_BINARY_DIR) + "/systemd/redisgo_task@.service";
const std::string kDropIn = std::string(REDISGO_SOURCE_DIR) + "/systemd/redisgo_task-writable.conf.example";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

// Runs a shell command (bounded by timeout(1)), returns stdout+stderr.
std::string run(const std::string& command) {
  std::string out;
  FILE* p = ::popen(("timeout 60 " + command + " 2>&1").c_str(), "r");
  if (!p) return "popen failed";
  std::array<char, 4096> buf;
  while (auto n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

bool have_systemd_analyze() { return run("sh -c 'command -v systemd-analyze'").find('/') != std::string::npos; }

// The unit with its ExecStart= binary (under whatever prefix) replaced by /bin/true.
std::string with_true(const std::string& unit_text) {
  static const std::regex exec(R"(\nExecStart=/\S*/redisgo_task )");
  return std::regex_replace(unit_text, exec, "\nExecStart=/bin/true ");
}

// Installs the unit (ExecStart pointed at an existing binary, as verify checks it) and
// the drop-in under `dir`, verifies, and returns the output lines about our files: the
// environment may print warnings about unrelated units.
std::vector<std::string> verify(const TempDir& dir, const std::string& unit_text, const std::string& dropin_text) {
  std::string unit = dir.write("redisgo_task@test.service", with_true(unit_text));
  std::filesystem::create_directories(dir.path() + "/redisgo_task@test.service.d");
  dir.write("redisgo_task@test.service.d/writable.conf", dropin_text);
  // verify runs man(1) on the unit's Documentation=man:redisgo_task(1): give it this
  // build's page (missing when scdoc was, which ops_install_test reports).
  std::filesystem::create_directories(dir.path() + "/man/man1");
  std::error_code ignored;
  std::filesystem::copy_file(std::string(REDISGO_BINARY_DIR) + "/redisgo_task.1", dir.path() + "/man/man1/redisgo_task.1",
                             std::filesystem::copy_options::overwrite_existing, ignored);
  // SYSTEMD_UNIT_PATH (trailing ':' keeps the defaults) makes verify load the drop-in.
  std::string out = run("env SYSTEMD_UNIT_PATH='" + dir.path() + ":' MANPATH='" + dir.path() +
                        "/man' systemd-analyze verify '" + unit + "'");
  std::vector<std::string> ours;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.find("redisgo_task") != std::string::npos) ours.push_back(line);
  }
  return ours;
}

// key -> values of the non-comment lines of one section.
std::multimap<std::string, std::string> section(const std::string& text, const std::string& name) {
  std::multimap<std::string, std::string> out;
  std::istringstream in(text);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      inside = line == "[" + name + "]";
      continue;
    }
    auto eq = line.find('=');
    if (inside && eq != std::string::npos) out.emplace(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

std::string one(const std::multimap<std::string, std::string>& s, const std::string& key) {
  auto [lo, hi] = s.equal_range(key);
  if (lo == hi) return "<unset>";
  if (std::next(lo) != hi) return "<set twice>";
  return lo->second;
}

}  // namespace

TEST(SystemdUnit, VerifiesWithoutWarnings) {
  if (!have_systemd_analyze()) GTEST_SKIP() << "systemd-analyze not installed: cannot verify the unit file";
  std::string unit = read(kUnit), dropin = read(kDropIn);
  ASSERT_FALSE(unit.empty()) << kUnit;
  ASSERT_NE(with_true(unit), unit) << "no ExecStart=<dir>/redisgo_task in " << kUnit;
  ASSERT_FALSE(dropin.empty()) << kDropIn;

  TempDir dir;
  auto lines = verify(dir, unit, dropin);
  EXPECT_TRUE(lines.empty()) << "systemd-analyze verify:\n" << testing::PrintToString(lines);

  // Control: this environment's verify does report a bad setting in either file, so an
  // empty result above means something.
  TempDir bad;
  auto flagged = verify(bad, replace_all(unit, "KillMode=mixed", "KillMode=mixd"), dropin + "\nBogusKey=1\n");
  EXPECT_EQ(flagged.size(), 2u) << testing::PrintToString(flagged);
}

TEST(SystemdUnit, SettingsTheDaemonReliesOn) {
  // The template names the binary and the README through the install directories...
  auto t = section(read(kTemplate), "Service");
  EXPECT_EQ(one(t, "ExecStart"), "@CMAKE_INSTALL_FULL_BINDIR@/redisgo_task task --config /etc/redisgo_task/%i.toml");
  EXPECT_EQ(one(section(read(kTemplate), "Unit"), "Documentation"),
            "man:redisgo_task(1) file:@CMAKE_INSTALL_FULL_DOCDIR@/README.md");
  // ...which the build filled in with absolute paths.
  auto s = section(read(kUnit), "Service");
  EXPECT_TRUE(std::regex_match(one(s, "ExecStart"), std::regex(R"(/\S*/redisgo_task task --config /etc/redisgo_task/%i\.toml)")))
      << one(s, "ExecStart");
  EXPECT_EQ(one(s, "Type"), "notify");
  EXPECT_EQ(one(s, "NotifyAccess"), "main");
  EXPECT_EQ(one(s, "Restart"), "on-failure");
  EXPECT_EQ(one(s, "KillMode"), "mixed");
  // Above the default kill_grace (2s) with room for the release.
  auto stop = redisgo::parse_duration(one(s, "TimeoutStopSec"));
  ASSERT_TRUE(stop);
  EXPECT_GE(*stop, 10s);
  // Well above the default cron (expire/5) and io_timeout.
  auto watchdog = redisgo::parse_duration(one(s, "WatchdogSec"));
  ASSERT_TRUE(watchdog);
  EXPECT_GE(*watchdog, 10s);
  EXPECT_EQ(one(s, "NoNewPrivileges"), "yes");
  EXPECT_EQ(one(s, "ProtectSystem"), "strict");
  EXPECT_EQ(one(s, "ProtectHome"), "yes");
  EXPECT_EQ(one(s, "PrivateTmp"), "yes");
  EXPECT_EQ(one(s, "User"), "redisgo-task");
  EXPECT_EQ(s.count("DynamicUser"), 0u);
  // Issue 20: the password comes as a credential (password_credential), never through the
  // environment, which `systemctl show` shows to anyone. By name only (no path): systemd
  // finds it in /etc/credstore and skips one that is not there, so a unit without AUTH
  // still starts.
  auto [lo, hi] = s.equal_range("LoadCredential");
  std::vector<std::string> credentials;
  for (auto it = lo; it != hi; ++it) credentials.push_back(it->second);
  EXPECT_EQ(credentials, (std::vector<std::string>{"redisgo_task.redis-password", "redisgo_task.sentinel-password"}));
  EXPECT_EQ(s.count("Environment"), 0u);
  EXPECT_EQ(s.count("EnvironmentFile"), 0u);

  auto d = section(read(kDropIn), "Service");
  EXPECT_EQ(one(d, "ReadWritePaths"), "/var/lib/backup");
}

}  // namespace systemd_unit_test
