// What an operator installs and reads: `cmake --install` of this very build (staged with
// DESTDIR, for the prefix /opt/redisgo_task) puts every file where README.md's deployment
// section says (relative to the /usr/local prefix it uses), and its table of installed files
// lists every file the install puts there, no more (the Prometheus rules and the Grafana
// dashboard among them); the unit is written for the
// prefix installed to (and a DESTDIR staging root never leaks into it) and goes where
// systemd looks for units whatever the prefix (cmake/systemd_unit_dir.cmake: a unit under
// /opt is one that `systemctl enable` cannot find); the installed binary is stripped, runs and
// validates the installed example config; the man page is there and renders; the cron
// wrapper is there and executable; every --help shows an example and names the example
// configuration of the installation it runs from; and the deployment section has the operator run `validate` before anything else.
//
// The reference itself (docs/redisgo_task.1.scd, the man page's source) is checked
// against the code: every configuration key that src/config/config.cpp knows, every
// exit status of src/util/exit_status.h, every handled signal of
// src/process/signals.cpp and every subcommand of src/cli/cli.cpp must be documented, so
// adding one without documenting it fails here; and the coordinator features (once_per,
// limit, health_command, handover, [metrics]) each have a section of their own, with no
// leftover claim that a feature is "not in this version".

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/redis_server.h"
#include "support/task_process.h"

namespace ops_install_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

const std::string kSource = REDISGO_SOURCE_DIR;
const std::string kBuild = REDISGO_BINARY_DIR;
const std::string kUsrLocal = "/usr/local/";
const std::string kReference = kSource + "/docs/redisgo_task.1.scd";
const std::string kUnitTemplate = kSource + "/systemd/redisgo_task@.service.in";
const std::string kUnitName = "redisgo_task@.service";
const std::string kUnitRel = "lib/systemd/system/" + kUnitName;  // under /usr and /usr/local
const std::string kUnitRule = kSource + "/cmake/systemd_unit_dir.cmake";
/// The fixture's prefix: anything but /usr and /usr/local, whose units systemd reads.
const std::string kOptPrefix = "/opt/redisgo_task";
const std::string kManRel = "share/man/man1/redisgo_task.1";

/// An installed file (relative to the prefix) and what it must be.
struct Installed {
  std::string rel;
  std::string copy_of;  ///< absolute path of the file it is an exact copy of; "" = checked elsewhere
  bool executable = false;
};
const std::vector<Installed> kInstalled = {
    {"bin/redisgo_task", "", true},  // stripped: not a copy of the build's
    {"bin/redisgo_task-cron", kSource + "/scripts/cron-example", true},
    {kManRel, kBuild + "/redisgo_task.1", false},
    {"share/man/man1/redisgo_task-cron.1", kBuild + "/redisgo_task-cron.1", false},
    {"share/doc/redisgo_task/examples/redisgo_task.toml", kSource + "/config/redisgo_task.toml", false},
    {"share/doc/redisgo_task/README.md", kSource + "/README.md", false},
    {"share/doc/redisgo_task/examples/redisgo_task-writable.conf.example",
     kSource + "/systemd/redisgo_task-writable.conf.example", false},
    {"share/bash-completion/completions/redisgo_task", kSource + "/completions/redisgo_task.bash", false},
    {"share/zsh/site-functions/_redisgo_task", kSource + "/completions/_redisgo_task", false},
    {"share/redisgo_task/prometheus/redisgo_task.rules.yml", kSource + "/contrib/prometheus/redisgo_task.rules.yml", false},
    {"share/redisgo_task/grafana/redisgo_task.json", kSource + "/contrib/grafana/redisgo_task.json", false},
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

bool have(const std::string& program) { return sh("sh -c " + quote("command -v " + program)).first == 0; }

/// A level-1 section ("# NAME") of a markdown or scdoc text, up to the next one of the
/// same level; "" when absent.
std::string section_of(const std::string& text, const std::string& heading) {
  const std::string hashes = heading.substr(0, heading.find(' ') + 1);
  auto start = text.find("\n" + heading + "\n");
  if (start == std::string::npos) return "";
  auto end = text.find("\n" + hashes, start + 1);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
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

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

/// The unit as `cmake --install --prefix <prefix>` must write it from the template.
std::string unit_for_prefix(const std::string& prefix) {
  std::string unit = read_file(kUnitTemplate);
  unit = replace_all(unit, "@CMAKE_INSTALL_FULL_BINDIR@", prefix + "/bin");
  return replace_all(unit, "@CMAKE_INSTALL_FULL_DOCDIR@", prefix + "/share/doc/redisgo_task");
}

/// A cache entry of this build ("NAME:TYPE=value"); "" when absent.
std::string cache_value(const std::string& name) {
  std::istringstream in(read_file(kBuild + "/CMakeCache.txt"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + ":", 0) == 0) return line.substr(line.find('=') + 1);
  }
  return "";
}

/// The ELF section names of `file` (readelf, from binutils: build-essential).
std::set<std::string> elf_sections(const std::string& file) {
  auto [code, out] = sh("readelf -S -W " + quote(file));
  std::set<std::string> names;
  if (code != 0) return names;
  std::regex row(R"(\]\s+(\.\S+))");
  for (std::sregex_iterator it(out.begin(), out.end(), row), end; it != end; ++it) names.insert((*it)[1]);
  return names;
}

/// The directory cmake/systemd_unit_dir.cmake picks for `prefix` and a
/// REDISGO_SYSTEMD_UNIT_DIR of `setting`; "" when the script fails.
std::string unit_dir_for(const std::string& prefix, const std::string& setting) {
  auto [code, out] = sh("cmake -DPREFIX=" + quote(prefix) + " -DSETTING=" + quote(setting) + " -P " + quote(kUnitRule));
  if (code != 0) return "";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class OpsInstall : public ::testing::Test {
 protected:
  // Staged, never installed for real: with a prefix outside /usr the unit goes to
  // /etc/systemd/system, which a test must not write on the machine that runs it.
  static void SetUpTestSuite() {
    stage_ = new TempDir;
    auto [code, out] = sh(staged_install_command(kBuild, stage_->path(), kOptPrefix));
    install_code_ = code;
    install_out_ = out;
  }
  static void TearDownTestSuite() {
    delete stage_;
    stage_ = nullptr;
  }
  /// Where a file of the prefix is on disk (in the stage).
  static std::string installed(const std::string& rel) { return stage_->path() + kOptPrefix + "/" + rel; }

  static TempDir* stage_;
  static int install_code_;
  static std::string install_out_;
};
TempDir* OpsInstall::stage_ = nullptr;
int OpsInstall::install_code_ = -1;
std::string OpsInstall::install_out_;

TEST_F(OpsInstall, PutsEveryFileWhereTheReadmeSays) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  const std::string section = deployment_section();
  ASSERT_FALSE(section.empty()) << "README.md has no '## Deployment' section";
  for (const auto& f : kInstalled) {
    struct stat st {};
    ASSERT_EQ(::stat(installed(f.rel).c_str(), &st), 0) << f.rel << " not installed\n" << install_out_;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << f.rel;
    EXPECT_EQ(::access(installed(f.rel).c_str(), X_OK) == 0, f.executable)
        << f.rel << (f.executable ? " is not executable" : " is executable");
    if (!f.copy_of.empty()) {
      EXPECT_EQ(read_file(installed(f.rel)), read_file(f.copy_of)) << f.rel << " differs from " << f.copy_of;
    }
    EXPECT_NE(section.find(kUsrLocal + f.rel), std::string::npos)
        << "the deployment section does not say where " << kUsrLocal + f.rel << " goes";
  }
}

// README.md's table of installed files, first column: exactly what `cmake --install`
// puts on the host, read from the stage (not from kInstalled, which a new install rule
// would not reach), with the /usr/local prefix the README uses.
TEST_F(OpsInstall, TheReadmeTableListsEveryFileCMakeInstalls) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  const auto rows = markdown_table(deployment_section(), "| `cmake --install build`");
  ASSERT_GE(rows.size(), kInstalled.size()) << "no table of installed files in the deployment section";
  std::set<std::string> listed;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 3u) << ::testing::PrintToString(row);
    for (const auto& p : quoted_paths(row[0])) EXPECT_TRUE(listed.insert(p).second) << p << " listed twice";
    if (row[0] != "-") {
      EXPECT_EQ(quoted_paths(row[0]).size(), 1u) << row[0];
    }
  }
  // The stage holds the prefix's files and, for a prefix systemd does not read, the unit
  // in /etc/systemd/system; with the default prefix that unit is under it.
  std::set<std::string> staged;
  const std::filesystem::path root = stage_->path();
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::string path = "/" + std::filesystem::relative(e.path(), root).string();
    if (path.rfind(kOptPrefix + "/", 0) == 0) {
      path = "/usr/local" + path.substr(kOptPrefix.size());
    } else if (path == "/etc/systemd/system/" + kUnitName) {
      path = kUsrLocal + kUnitRel;
    }
    staged.insert(path);
  }
  ASSERT_GE(staged.size(), kInstalled.size()) << install_out_;
  for (const auto& f : staged) EXPECT_TRUE(listed.count(f)) << f << " is installed but not in README.md's table";
  for (const auto& f : listed) EXPECT_TRUE(staged.count(f)) << f << " is in README.md's table but not installed";
}

TEST_F(OpsInstall, TheUnitPointsAtTheInstalledFiles) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  // Installed with --prefix /opt/redisgo_task: the unit is where systemd reads units of
  // the administrator's, not under the prefix, and names the files under the prefix.
  const std::string unit_file = stage_->path() + "/etc/systemd/system/" + kUnitName;
  ASSERT_EQ(::access(unit_file.c_str(), R_OK), 0) << unit_file << " not installed\n" << install_out_;
  EXPECT_NE(::access(installed(kUnitRel).c_str(), F_OK), 0) << "a second copy of the unit under the prefix";
  const std::string unit = read_file(unit_file);
  EXPECT_EQ(unit, unit_for_prefix(kOptPrefix));
  const std::string exec = unit_setting(unit, "ExecStart");
  EXPECT_EQ(exec, kOptPrefix + "/bin/redisgo_task task --config /etc/redisgo_task/%i.toml");
  const std::string bin = installed("bin/redisgo_task");
  EXPECT_EQ(::access(bin.c_str(), X_OK), 0) << bin;
  const std::string doc = unit_setting(unit, "Documentation");
  EXPECT_EQ(doc, "man:redisgo_task(1) file:" + kOptPrefix + "/share/doc/redisgo_task/README.md");
  EXPECT_EQ(::access(installed("share/doc/redisgo_task/README.md").c_str(), R_OK), 0);
  EXPECT_EQ(unit.find('@' + std::string("CMAKE")), std::string::npos) << "unsubstituted template variable\n" << unit;

  // The build tree's unit is for the configured prefix; with the default one, it is what
  // README.md's deployment section describes.
  const std::string configured = cache_value("CMAKE_INSTALL_PREFIX");
  ASSERT_FALSE(configured.empty());
  const std::string build_unit = read_file(kBuild + "/systemd/redisgo_task@.service");
  EXPECT_EQ(build_unit, unit_for_prefix(configured));
  if (configured == "/usr/local") {
    EXPECT_EQ(unit_setting(build_unit, "ExecStart").rfind(kUsrLocal + "bin/redisgo_task ", 0), 0u);
  }
}

TEST(OpsInstallRule, TheUnitGoesWhereSystemdLooks) {
  // The rule, as a table: {prefix, REDISGO_SYSTEMD_UNIT_DIR} -> directory.
  struct Row {
    std::string prefix, setting, dir;
  };
  const std::vector<Row> rows = {
      {"/usr", "", "/usr/lib/systemd/system"},  // a distribution package
      {"/usr/", "", "/usr/lib/systemd/system"},
      {"/usr/local", "", "/usr/local/lib/systemd/system"},  // the default prefix
      {"/usr/local/", "", "/usr/local/lib/systemd/system"},
      {"/opt/redisgo_task", "", "/etc/systemd/system"},  // anywhere else: the administrator's units
      {"/usr/local/redisgo", "", "/etc/systemd/system"},
      {"/opt/redisgo_task", "/run/systemd/system", "/run/systemd/system"},  // set: used as given
      {"/opt/redisgo_task", "lib/systemd/system", "/opt/redisgo_task/lib/systemd/system"},  // relative: under the prefix
  };
  for (const auto& row : rows) {
    EXPECT_EQ(unit_dir_for(row.prefix, row.setting), row.dir) << "prefix " << row.prefix << ", setting '" << row.setting << "'";
  }
  // And systemd reads every directory the rule picks by itself.
  if (have("systemd-analyze")) {
    auto [code, paths] = sh("systemd-analyze --system unit-paths");
    ASSERT_EQ(code, 0) << paths;
    for (const auto& row : rows) {
      if (!row.setting.empty()) continue;
      EXPECT_NE(paths.find("\n" + row.dir + "\n"), std::string::npos) << row.dir << " is not a unit path:\n" << paths;
    }
  }
}

TEST(OpsInstallRule, AUsrPrefixInstallsTheUnitUnderIt) {
  // A package build (--prefix /usr), staged: the unit goes to /usr/lib/systemd/system.
  TempDir stage;
  auto [code, out] = sh(staged_install_command(kBuild, stage.path(), "/usr"));
  ASSERT_EQ(code, 0) << out;
  const std::string unit = read_file(stage.path() + "/usr/" + kUnitRel);
  EXPECT_EQ(unit, unit_for_prefix("/usr"));
  EXPECT_NE(::access((stage.path() + "/etc/systemd/system/" + kUnitName).c_str(), F_OK), 0) << "a copy in /etc too";
}

TEST_F(OpsInstall, DestdirStagesWithoutChangingThePathsInside) {
  // A package build: DESTDIR is where the files land, not where they will run from.
  // The build's one install_manifest.txt is copied under the same lock as the install
  // that wrote it: every test that installs this build (each ctest process sets up its
  // own stage for /opt/redisgo_task or /usr) rewrites it, and read outside the lock it
  // could be another test's (seen in CI: a manifest of /opt/redisgo_task paths).
  TempDir stage, scratch;
  const std::string manifest_copy = scratch.path() + "/install_manifest.txt";
  auto [code, out] = sh(staged_install_command(kBuild, stage.path(), "/usr/local", manifest_copy));
  ASSERT_EQ(code, 0) << out;
  const std::string unit = read_file(stage.path() + "/usr/local/" + kUnitRel);
  EXPECT_EQ(unit, unit_for_prefix("/usr/local"));
  EXPECT_EQ(unit.find(stage.path()), std::string::npos) << "DESTDIR leaked into the unit";
  for (const auto& f : kInstalled) {
    EXPECT_EQ(::access((stage.path() + "/usr/local/" + f.rel).c_str(), F_OK), 0) << f.rel << " not staged\n" << out;
  }
  auto manifest = read_file(manifest_copy);
  EXPECT_NE(manifest.find("/usr/local/" + kUnitRel), std::string::npos) << manifest;
  EXPECT_EQ(manifest.find(stage.path()), std::string::npos) << manifest;
  // The deployment section says where the unit goes, with the default prefix and another.
  const std::string section = deployment_section();
  EXPECT_NE(section.find(kUsrLocal + kUnitRel), std::string::npos) << "the deployment section does not say where "
                                                                    << kUsrLocal + kUnitRel << " goes";
  EXPECT_NE(section.find("/etc/systemd/system/" + kUnitName), std::string::npos)
      << "the deployment section does not say where the unit goes with another prefix";
}

TEST_F(OpsInstall, TheInstalledBinaryIsStripped) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  ASSERT_TRUE(have("readelf")) << "readelf (binutils) is missing: run scripts/setup";
  const std::string built = task_binary();
  const std::string bin = installed("bin/redisgo_task");
  const auto built_sections = elf_sections(built);
  const auto sections = elf_sections(bin);
  ASSERT_FALSE(sections.empty()) << "readelf could not read " << bin;
  // Control: the build's binary has what stripping removes, so its absence means something.
  ASSERT_TRUE(built_sections.count(".symtab")) << built;
  if (cache_value("REDISGO_INSTALL_STRIP") == "OFF") {
    EXPECT_EQ(read_file(bin), read_file(built)) << "REDISGO_INSTALL_STRIP=OFF installs the binary as built";
    return;
  }
  EXPECT_EQ(sections.count(".symtab"), 0u) << bin << " still has its symbol table";
  for (const auto& s : sections) EXPECT_NE(s.rfind(".debug", 0), 0u) << bin << " still has " << s;
  struct stat st {}, built_st {};
  ASSERT_EQ(::stat(bin.c_str(), &st), 0);
  ASSERT_EQ(::stat(built.c_str(), &built_st), 0);
  EXPECT_LT(st.st_size, built_st.st_size) << "stripped " << st.st_size << " bytes, built " << built_st.st_size;
}

TEST_F(OpsInstall, InstalledBinaryRunsAndValidatesTheInstalledExample) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  const std::string bin = installed("bin/redisgo_task");
  auto r = run_task_binary({"version"}, 10s);  // the build's, for comparison
  auto [code, out] = sh(quote(bin) + " version");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.rfind("redisgo_task ", 0), 0u) << out;
  EXPECT_EQ(out, r.out);

  std::tie(code, out) = sh(quote(bin) + " validate --config " + quote(installed("share/doc/redisgo_task/examples/redisgo_task.toml")));
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("valid"), std::string::npos) << out;
}

TEST_F(OpsInstall, HelpNamesTheExampleOfThisInstallation) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  // Configured for /usr/local, installed with --prefix /opt/redisgo_task (staged): --help
  // names the example that this installation has, not the configured prefix's.
  const std::string example = installed("share/doc/redisgo_task/examples/redisgo_task.toml");
  ASSERT_EQ(::access(example.c_str(), R_OK), 0) << example;
  for (const char* sub : {"task", "validate"}) {
    auto [code, out] = sh(quote(installed("bin/redisgo_task")) + " " + sub + " --help");
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find(example + "\n"), std::string::npos) << sub << " --help does not name " << example << "\n" << out;
    EXPECT_NE(out.find("redisgo_task(1)"), std::string::npos) << out;
  }
}

TEST_F(OpsInstall, TheManPageIsInstalledAndRenders) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  const std::string page = installed(kManRel);
  ASSERT_EQ(::access(page.c_str(), R_OK), 0)
      << kManRel << " not installed: the build made no man page. Is scdoc installed (scripts/setup)? "
      << "Configure again after installing it.\n" << install_out_;
  const std::string roff = read_file(page);
  EXPECT_NE(roff.find(".TH \"redisgo_task\" \"1\""), std::string::npos) << roff.substr(0, 400);
  // Its tables need tbl(1): the first line tells man(1) so ('\" t). Without it Debian 13's
  // groff warns that the tables are not rendered, and lintian refuses the package.
  EXPECT_NE(roff.find("\n.TS"), std::string::npos) << "no table: is this test still needed?";
  EXPECT_EQ(roff.rfind("'\\\" t\n", 0), 0u) << roff.substr(0, 200);
  if (have("groff")) {
    // -ww: every warning; a page that groff complains about renders badly somewhere. -t:
    // tbl, as man runs it for a page whose first line asks for it.
    auto [code, out] = sh("groff -t -man -Tutf8 -ww -z " + quote(page));
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "") << "groff warnings";
  }
  if (have("man")) {
    auto [code, rendered] = sh("env MANWIDTH=80 man -l " + quote(page) + " | cat");
    EXPECT_EQ(code, 0) << rendered;
    // Words as man shows them, one space apart: its justification stretches the spaces of a
    // line (Debian 13's groff does so on the NAME line too) and breaks lines where it likes.
    std::string out;
    for (char c : rendered) {
      const bool space = c == ' ' || c == '\n';
      if (!space) out += c;
      else if (!out.empty() && out.back() != ' ') out += ' ';
    }
    for (const char* text : {"NAME", "redisgo_task - run a command on exactly one host", "SYNOPSIS", "EXIT STATUS",
                             "SIGNALS", "REDISGO_TASK_TOKEN"}) {
      EXPECT_NE(out.find(text), std::string::npos) << "man shows no '" << text << "'\n" << out.substr(0, 2000);
    }
  }
}

TEST_F(OpsInstall, TheCronWrapperRunsTheBinaryNextToIt) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  // As cron runs it: PATH without the prefix's bin, no REDISGO_TASK. A usage error is
  // enough to show it found the binary: it is redisgo_task's config error (78), not the
  // wrapper's "cannot run" (127).
  TempDir dir;
  const std::string bad = dir.write("bad.toml", "[redis]\nkey = \"k\"\n");
  auto [code, out] = sh("env -i PATH=/usr/bin:/bin " + quote(installed("bin/redisgo_task-cron")) + " " + quote(bad) +
                        " -- /bin/true");
  EXPECT_EQ(code, 78) << out;
  EXPECT_NE(out.find("redisgo_task: error:"), std::string::npos) << out;
  EXPECT_EQ(out.find("cannot run"), std::string::npos) << out;
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

TEST(OpsReadme, PointsAtTheReferenceInTheRepository) {
  // A clone from a forge has no ../shared: the reference must be in the repository.
  const std::string readme = read_file(kSource + "/README.md");
  EXPECT_EQ(readme.find("../shared"), std::string::npos);
  EXPECT_NE(readme.find("docs/redisgo_task.1.scd"), std::string::npos);
  EXPECT_NE(readme.find("man redisgo_task"), std::string::npos);
  EXPECT_FALSE(section_of(readme, "## Signals").empty()) << "README.md has no '## Signals' section";
}

// ---- the reference against the code ------------------------------------------------

/// The `{"section", {"key", ...}}` entries of config.cpp's known_keys().
std::vector<std::pair<std::string, std::vector<std::string>>> known_keys() {
  const std::string code = read_file(kSource + "/src/config/config.cpp");
  auto start = code.find("known_keys() {");
  auto end = code.find("return kKnown;", start);
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  if (start == std::string::npos || end == std::string::npos) return out;
  const std::string table = code.substr(start, end - start);
  std::regex entry(R"re(\{"(\w+)",\s*\{([^}]*)\}\})re");
  std::regex word(R"re("(\w+)")re");
  for (std::sregex_iterator it(table.begin(), table.end(), entry), stop; it != stop; ++it) {
    std::vector<std::string> keys;
    const std::string list = (*it)[2];
    for (std::sregex_iterator w(list.begin(), list.end(), word); w != stop; ++w) keys.push_back((*w)[1]);
    out.emplace_back((*it)[1], keys);
  }
  return out;
}

/// The strings of the array initialised after `marker` in `file` (up to the closing '}').
std::vector<std::string> strings_after(const std::string& file, const std::string& marker, const std::string& pattern) {
  const std::string code = read_file(kSource + "/" + file);
  auto start = code.find(marker);
  if (start == std::string::npos) return {};
  auto end = code.find('}', start);
  const std::string list = code.substr(start, end - start);
  std::regex re(pattern);
  std::vector<std::string> out;
  for (std::sregex_iterator it(list.begin(), list.end(), re), stop; it != stop; ++it) out.push_back((*it)[1]);
  return out;
}

TEST(OpsReference, DocumentsEveryConfigurationKey) {
  const std::string ref = read_file(kReference);
  ASSERT_FALSE(ref.empty()) << kReference;
  const std::string configuration = section_of(ref, "# CONFIGURATION");
  ASSERT_FALSE(configuration.empty()) << "no '# CONFIGURATION' in " << kReference;
  const auto sections = known_keys();
  ASSERT_EQ(sections.size(), 5u) << "could not read known_keys() from src/config/config.cpp";
  std::size_t count = 0;
  for (const auto& [name, keys] : sections) {
    const std::string sec = section_of(configuration, "## [" + name + "]");
    ASSERT_FALSE(sec.empty()) << "no '## [" << name << "]' section in " << kReference;
    // The term lines of the section: unindented, starting with a bold word ("*key* = ...",
    // or several keys defined together: "*a*, *b*"). A key merely mentioned in another
    // key's text is not documented.
    std::string terms;
    std::istringstream in(sec);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("*", 0) == 0) terms += line + "\n";
    }
    for (const auto& key : keys) {
      EXPECT_NE(terms.find("*" + key + "*"), std::string::npos)
          << "[" << name << "] " << key << " has no definition in " << kReference;
      ++count;
    }
  }
  EXPECT_GT(count, 40u);
}

/// The text under the first heading line ("# ..." or "## ...") that contains `name` as a
/// whole word (not "restart_limit" for "limit"), up to the next heading of the same or a
/// higher level; "" when there is none.
std::string section_about(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string out;
  std::size_t level = 0;  // of the heading found; 0 = not found yet
  const auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::string line; std::getline(in, line);) {
    const std::size_t hashes = line.find_first_not_of('#');
    const bool heading = hashes != 0 && hashes != std::string::npos && line[hashes] == ' ';
    if (level > 0) {
      if (heading && hashes <= level) break;
      out += line + "\n";
      continue;
    }
    if (!heading) continue;
    for (auto pos = line.find(name); pos != std::string::npos; pos = line.find(name, pos + 1)) {
      const std::size_t end = pos + name.size();
      if ((pos == 0 || !is_word(line[pos - 1])) && (end == line.size() || !is_word(line[end]))) {
        level = hashes;
        break;
      }
    }
  }
  return out;
}

TEST(OpsReference, DocumentsEveryCoordinatorFeature) {
  const std::string ref = read_file(kReference);
  ASSERT_FALSE(ref.empty()) << kReference;
  // Nothing is left over from the version that refused these features.
  std::string lower = ref;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* stale : {"not in this version", "not supported by this version", "not implemented yet",
                            "does not exist yet"}) {
    const auto at = lower.find(stale);
    EXPECT_EQ(at, std::string::npos) << kReference << " still says a feature is '" << stale << "':\n"
                                     << ref.substr(at == std::string::npos ? 0 : ref.rfind('\n', at) + 1, 200);
  }
  // Each feature has a section of its own (a heading naming it) that says something.
  for (const char* feature : {"once_per", "limit", "health_command", "handover", "[metrics]"}) {
    const std::string sec = section_about(ref, feature);
    EXPECT_GE(sec.size(), 300u) << kReference << " has no section (a '#' heading naming it, with some text under it) for "
                                << feature << "\n" << sec;
  }
  // The metrics section names the series the daemon exports.
  const std::string metrics = section_of(ref, "# METRICS");
  ASSERT_FALSE(metrics.empty()) << "no '# METRICS' in " << kReference;
  // The families are written where the text is rendered (MetricsContrib checks the rendered
  // text itself against the manual both ways).
  const std::string code =
      read_file(kSource + "/src/metrics/render.cpp") + read_file(kSource + "/src/metrics/metrics_impl.h");
  std::regex header(R"re(append_header\(out, "(redisgo_task_\w+)")re");
  int n = 0;
  for (std::sregex_iterator it(code.begin(), code.end(), header), stop; it != stop; ++it, ++n) {
    EXPECT_NE(metrics.find("*" + std::string((*it)[1]) + "*"), std::string::npos)
        << (*it)[1] << " is exported but not described in the METRICS section";
  }
  EXPECT_GE(n, 10) << "could not read the series of src/metrics/render.cpp and metrics_impl.h";
  // The child's slot and the Redis names the features use.
  EXPECT_NE(section_of(ref, "# ENVIRONMENT").find("*REDISGO_TASK_SLOT*"), std::string::npos);
  const std::string keys = section_of(ref, "# REDIS KEYS");
  for (const char* name : {"{K}:slot:", "{K}:once:", "{K}:control"}) {
    EXPECT_NE(keys.find(name), std::string::npos) << name << " is not in the REDIS KEYS section";
  }
}

TEST(OpsReference, DocumentsEveryExitStatus) {
  const std::string table = section_of(read_file(kReference), "# EXIT STATUS");
  ASSERT_FALSE(table.empty()) << "no '# EXIT STATUS' in " << kReference;
  const std::string code = read_file(kSource + "/src/util/exit_status.h");
  std::regex constant(R"(constexpr int kExit\w+ = (\d+);)");
  std::set<std::string> codes{"0", "1"};  // success; check's "warn or fail"
  for (std::sregex_iterator it(code.begin(), code.end(), constant), stop; it != stop; ++it) codes.insert((*it)[1]);
  ASSERT_GE(codes.size(), 8u) << "could not read the kExit constants of src/util/exit_status.h";
  for (const auto& c : codes) {
    if (c == "126" || c == "127") {
      // The shell's codes are the child's own status: said in that row.
      EXPECT_NE(table.find(c + " when"), std::string::npos) << "exit status " << c << " is not explained";
      continue;
    }
    // A row of the scdoc table: "|  75" (or the header row).
    EXPECT_NE(table.find("\n|  " + c + "\n"), std::string::npos) << "exit status " << c << " has no row";
  }
  EXPECT_NE(table.find("the child's own"), std::string::npos);
}

TEST(OpsReference, DocumentsEverySignal) {
  const std::string sigs = section_of(read_file(kReference), "# SIGNALS");
  ASSERT_FALSE(sigs.empty()) << "no '# SIGNALS' in " << kReference;
  const auto handled = strings_after("src/process/signals.cpp", "for (int sig : {", R"((SIG[A-Z0-9]+))");
  ASSERT_GE(handled.size(), 10u) << "could not read handled_signals() from src/process/signals.cpp";
  for (const auto& s : handled) {
    EXPECT_NE(sigs.find("*" + s + "*"), std::string::npos) << s << " is handled but not in the SIGNALS section";
  }
  for (const char* s : {"SIGKILL", "SIGSTOP", "SIGPIPE"}) EXPECT_NE(sigs.find(s), std::string::npos) << s;
}

TEST(OpsReference, DocumentsEverySubcommand) {
  const std::string ref = read_file(kReference);
  const std::string synopsis = section_of(ref, "# SYNOPSIS");
  const std::string commands = section_of(ref, "# COMMANDS");
  const std::string cli = read_file(kSource + "/src/cli/cli.cpp");
  std::regex sub(R"re(add_subcommand\("(\w+)")re");
  int n = 0;
  for (std::sregex_iterator it(cli.begin(), cli.end(), sub), stop; it != stop; ++it, ++n) {
    const std::string name = (*it)[1];
    EXPECT_NE(synopsis.find("*redisgo_task " + name + "*"), std::string::npos) << name << " not in SYNOPSIS";
    EXPECT_NE(commands.find("\n## " + name + "\n"), std::string::npos) << name << " not in COMMANDS";
  }
  EXPECT_GE(n, 4);
}

}  // namespace

// Issue 21's start-up and footprint, as built: the binary loads libc alone (no libm), keeps
// its relative relocations as DT_RELR, and the code of its daemon's modules in one section
// at the start of its code (the build's hot_text.ld). A change that brings back a libm call,
// or a build that loses the linker script, shows here rather than as 0.3-0.6 MiB more in
// docs/BENCHMARKS.md.
TEST(OpsBinary, StartsWithoutLibmWithPackedRelocationsAndItsHotCodeTogether) {
  ASSERT_TRUE(have("readelf")) << "readelf (binutils) is missing: run scripts/setup";
  if (!cache_value("REDISGO_SANITIZE").empty()) GTEST_SKIP() << "sanitized builds link differently";
  const std::string bin = task_binary();
  auto [code, dynamic] = sh("readelf -d -W " + quote(bin));
  ASSERT_EQ(code, 0) << dynamic;
  EXPECT_EQ(dynamic.find("libm.so"), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("libc.so"), std::string::npos) << dynamic;
  if (cache_value("REDISGO_PIE") != "OFF" && cache_value("REDISGO_HAVE_RELR") == "1") {
    EXPECT_NE(dynamic.find("(RELR)"), std::string::npos) << dynamic;
  }
  if (cache_value("REDISGO_HOT_TEXT") == "OFF") return;
  const auto sections = elf_sections(bin);
  ASSERT_TRUE(sections.count(".text.hot_path")) << bin << " has no .text.hot_path: the linker script was not used";
  // The leader's path is in it: LeaderDriver::lead and the keeper's main (not their .cold parts,
  // which the compiler keeps apart on purpose).
  auto [scode, symbols] = sh("nm --defined-only " + quote(bin) + " | grep -E ' (_ZN7redisgo6daemon12LeaderDriver4lead|" +
                             "_ZN7redisgo7process6detail10run_keeper)[A-Za-z0-9_]*$'");
  ASSERT_EQ(scode, 0) << symbols;
  auto [hcode, header] = sh("readelf -S -W " + quote(bin) + " | grep ' .text.hot_path '");
  ASSERT_EQ(hcode, 0) << header;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(header, m, std::regex(R"(\.text\.hot_path\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+))")))
      << header;
  const unsigned long start = std::stoul(m[1], nullptr, 16), size = std::stoul(m[2], nullptr, 16);
  int inside = 0;
  std::istringstream lines(symbols);
  for (std::string line; std::getline(lines, line);) {
    const unsigned long at = std::stoul(line.substr(0, line.find(' ')), nullptr, 16);
    EXPECT_TRUE(at >= start && at < start + size) << line << " is outside .text.hot_path";
    ++inside;
  }
  EXPECT_GE(inside, 2) << symbols;
}

// The hot section's linker script is written by the build from our own modules' names
// (CMakeLists.txt, REDISGO_HOT_TEXT); no file of the source tree lists a compiler's or a
// library's mangled symbols, which differ between Debian releases (GCC 12's libstdc++ on
// Debian 12, GCC 14's on 13) and between versions of fmt or spdlog.
TEST(OpsBinary, NoFileOfTheTreeListsMangledSymbols) {
  auto [code, files] = sh("git -C " + quote(kSource) + " ls-files");
  if (code != 0) GTEST_SKIP() << "not a git clone: " << files;
  // libstdc++'s (std::, its ABI namespace), fmt's, spdlog's, toml++'s and CLI11's names as
  // the Itanium ABI mangles them: _ZNSt..., _ZNKSt..., _ZSt..., _ZN3fmt..., and so on.
  const std::string pattern = std::string("_Z(N|NK)?(St|Sa|Ss|Si|So|3fmt|6spdlog|4toml|3CLI)[0-9A-Za-z_]");
  auto [gcode, hits] = sh("cd " + quote(kSource) + " && git grep -l -E -I '" + pattern + "' -- . ':!tests/integration/ops_install_test.cpp'");
  EXPECT_NE(gcode, 0) << "files listing mangled symbols: " << hits;
  if (cache_value("REDISGO_HOT_TEXT") == "OFF" || !cache_value("REDISGO_SANITIZE").empty()) return;
  const std::string script = read_file(kBuild + "/hot_text.ld");
  for (const char* module : {"cli", "daemon", "lock", "redis", "process", "util"}) {
    EXPECT_NE(script.find("libredisgo_" + std::string(module) + ".a:*(.text .text.*)"), std::string::npos) << module;
  }
  EXPECT_EQ(script.find("libredisgo_commands.a"), std::string::npos) << "status, check, list: not a daemon's code";
  EXPECT_EQ(script.find("_Z"), std::string::npos) << script;
}

}  // namespace ops_install_test
