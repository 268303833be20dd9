// What an operator installs and reads: `cmake --install` of this very build into a temp
// prefix puts every file where README.md's deployment section says (relative to the
// /usr/local prefix the unit's paths assume); the installed binary runs and validates the
// installed example config; every --help shows an example; and the deployment section
// has the operator run `validate` before anything else.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "support/redis_server.h"
#include "support/task_process.h"

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

const std::string kSource = REDISGO_SOURCE_DIR;
const std::string kUsrLocal = "/usr/local/";

/// Installed path (relative to the prefix) -> the source file it is a copy of ("" for the binary).
const std::vector<std::pair<std::string, std::string>> kInstalled = {
    {"bin/redisgo_task", ""},
    {"lib/systemd/system/redisgo_task@.service", "systemd/redisgo_task@.service"},
    {"share/doc/redisgo_task/redisgo_task.toml", "config/redisgo_task.toml"},
    {"share/doc/redisgo_task/README.md", "README.md"},
    {"share/doc/redisgo_task/redisgo_task-writable.conf.example", "systemd/redisgo_task-writable.conf.example"},
};

std::string quote(const std::string& s) { return "'" + s + "'"; }

/// Runs a shell command (bounded by timeout(1)); returns {exit status, stdout+stderr}.
std::pair<int, std::string> sh(const std::string& command) {
  std::string out;
  FILE* p = ::popen(("timeout 120 " + command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::array<char, 4096> buf;
  while (auto n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// README.md's "## Deployment..." section, up to the next level-2 heading.
std::string deployment_section() {
  std::string readme = read_file(kSource + "/README.md");
  auto start = readme.find("\n## Deployment");
  if (start == std::string::npos) return "";
  auto end = readme.find("\n## ", start + 1);
  return readme.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

/// The lines inside the section's ```sh blocks: what the operator types, in order.
std::vector<std::string> shell_lines(const std::string& section) {
  std::vector<std::string> out;
  std::istringstream in(section);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    auto first = line.find_first_not_of(' ');
    std::string t = first == std::string::npos ? "" : line.substr(first);
    if (t.rfind("```", 0) == 0) {
      inside = !inside && t == "```sh";
      continue;
    }
    if (inside) out.push_back(t);
  }
  return out;
}

/// The value of the unit's first `name=` line.
std::string unit_setting(const std::string& unit, const std::string& name) {
  std::istringstream in(unit);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "=", 0) == 0) return line.substr(name.size() + 1);
  }
  return "";
}

class OpsInstall : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    prefix_ = new TempDir;
    auto [code, out] = sh("cmake --install " + quote(REDISGO_BINARY_DIR) + " --prefix " + quote(prefix_->path()));
    install_code_ = code;
    install_out_ = out;
  }
  static void TearDownTestSuite() {
    delete prefix_;
    prefix_ = nullptr;
  }
  static std::string installed(const std::string& rel) { return prefix_->path() + "/" + rel; }

  static TempDir* prefix_;
  static int install_code_;
  static std::string install_out_;
};
TempDir* OpsInstall::prefix_ = nullptr;
int OpsInstall::install_code_ = -1;
std::string OpsInstall::install_out_;

TEST_F(OpsInstall, PutsEveryFileWhereTheReadmeSays) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  const std::string section = deployment_section();
  ASSERT_FALSE(section.empty()) << "README.md has no '## Deployment' section";
  for (const auto& [rel, source] : kInstalled) {
    struct stat st {};
    ASSERT_EQ(::stat(installed(rel).c_str(), &st), 0) << rel << " not installed\n" << install_out_;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << rel;
    if (source.empty()) {
      EXPECT_EQ(::access(installed(rel).c_str(), X_OK), 0) << rel << " is not executable";
    } else {
      EXPECT_EQ(read_file(installed(rel)), read_file(kSource + "/" + source)) << rel << " differs from " << source;
    }
    EXPECT_NE(section.find(kUsrLocal + rel), std::string::npos)
        << "the deployment section does not say where " << kUsrLocal + rel << " goes";
  }
}

TEST_F(OpsInstall, TheUnitPointsAtTheInstalledFiles) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  // The unit hard-codes /usr/local paths: they must be what the default prefix installs.
  const std::string unit = read_file(installed("lib/systemd/system/redisgo_task@.service"));
  std::string exec = unit_setting(unit, "ExecStart");
  EXPECT_EQ(exec.rfind(kUsrLocal + "bin/redisgo_task ", 0), 0u) << exec;
  std::string doc = unit_setting(unit, "Documentation");
  EXPECT_EQ(doc, "file:" + kUsrLocal + "share/doc/redisgo_task/README.md");
}

TEST_F(OpsInstall, InstalledBinaryRunsAndValidatesTheInstalledExample) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  const std::string bin = installed("bin/redisgo_task");
  auto r = run_task_binary({"version"}, 10s);  // the build's, for comparison
  auto [code, out] = sh(quote(bin) + " version");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.rfind("redisgo_task ", 0), 0u) << out;
  EXPECT_EQ(out, r.out);

  std::tie(code, out) = sh(quote(bin) + " validate --config " + quote(installed("share/doc/redisgo_task/redisgo_task.toml")));
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("valid"), std::string::npos) << out;
}

TEST(OpsHelp, EveryHelpShowsAnExample) {
  struct Row {
    std::vector<std::string> args;
    std::string example;  // a command line the help must show
  };
  for (const Row& row : {Row{{"--help"}, "redisgo_task validate --config "},
                         Row{{"task", "--help"}, "redisgo_task task --config "},
                         Row{{"status", "--help"}, "redisgo_task status --config "},
                         Row{{"validate", "--help"}, "redisgo_task validate --config "}}) {
    auto r = run_task_binary(row.args, 10s);
    std::string what = ::testing::PrintToString(row.args);
    EXPECT_EQ(r.code, 0) << what << "\n" << r.err;
    EXPECT_NE(r.out.find("Example"), std::string::npos) << what << "\n" << r.out;
    EXPECT_NE(r.out.find(row.example), std::string::npos) << what << "\n" << r.out;
  }
}

TEST(OpsReadme, DeploymentRunsValidateFirst) {
  auto lines = shell_lines(deployment_section());
  ASSERT_FALSE(lines.empty()) << "no ```sh blocks in the deployment section";
  // The first line that touches the configured job (validate, status, task, or starting
  // the unit) must be `validate`.
  std::string first;
  for (const auto& l : lines) {
    for (const char* verb : {"redisgo_task validate", "redisgo_task status", "redisgo_task task", "systemctl enable",
                             "systemctl start", "systemctl restart"}) {
      if (l.find(verb) != std::string::npos) {
        first = l;
        break;
      }
    }
    if (!first.empty()) break;
  }
  EXPECT_NE(first.find("redisgo_task validate --config /etc/redisgo_task/"), std::string::npos) << first;
  // And the steps the section promises are there, copy-pasteable.
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  for (const char* step : {"cmake --install build", "useradd --system", "systemctl daemon-reload",
                           "systemctl enable --now redisgo_task@", "systemctl status redisgo_task@",
                           "journalctl -u redisgo_task@"}) {
    EXPECT_NE(all.find(step), std::string::npos) << "missing: " << step;
  }
}

}  // namespace
