// The Debian package's files and the shell completion, checked without building the
// package (scripts/package builds it, runs lintian and installs it into a throwaway root;
// the suite keeps its time budget):
//  - debian/redisgo-task.install names exactly what `cmake --install --prefix /usr` of this
//    build installs (with the four paths debian/rules moves: unit, doc dir, zsh, data dir), so
//    neither a new install rule nor a renamed file goes missing from the package, and
//    README.md's table of installed files lists every file of the package;
//  - debian/changelog's version is the project's; Build-Depends has what scripts/setup
//    installs for the build;
//  - the unit's User=/Group= is the user the package creates (debian/redisgo-task.sysusers),
//    and the postinst gives that group /etc/redisgo_task, where the unit reads its configs
//    and the package puts its conffile;
//  - every kept lintian warning has its reason next to it;
//  - the bash completion, run by bash, offers every command `redisgo_task --help` lists and
//    every option of each command's --help, and configuration files for --config; the zsh
//    completion names them all;
//  - every --help names the manual page and the installed example configuration, and no
//    path of the source repository.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/installed.h"
#include "support/redis_server.h"
#include "support/task_process.h"

namespace ops_package_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;

namespace {

const std::string kSource = REDISGO_SOURCE_DIR;
const std::string kBuild = REDISGO_BINARY_DIR;
const std::string kDebian = kSource + "/debian";
const std::string kPackage = "redisgo-task";
const std::string kBash = kSource + "/completions/redisgo_task.bash";
const std::string kZsh = kSource + "/completions/_redisgo_task";

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs a shell command (bounded by timeout(1)); returns {exit status, stdout+stderr}.
std::pair<int, std::string> sh(const std::string& command) {
  std::string out;
  FILE* p = ::popen(("timeout 120 sh -c " + quote(command) + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::array<char, 4096> buf;
  while (auto n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

/// A cache entry of this build ("NAME:TYPE=value"); "" when absent.
std::string cache_value(const std::string& name) {
  for (const auto& line : lines_of(read_file(kBuild + "/CMakeCache.txt"))) {
    if (line.rfind(name + ":", 0) == 0) return line.substr(line.find('=') + 1);
  }
  return "";
}

/// This build's doc directory, relative to the prefix. GNUInstallDirs leaves the cache
/// entry empty unless it is set, and then uses DATAROOTDIR/doc/PROJECT_NAME.
std::string doc_dir() {
  const std::string set = cache_value("CMAKE_INSTALL_DOCDIR");
  return set.empty() ? "share/doc/redisgo_task" : set;
}

/// The value of the first `name=` line of a unit.
std::string unit_setting(const std::string& unit, const std::string& name) {
  for (const auto& line : lines_of(unit)) {
    if (line.rfind(name + "=", 0) == 0) return line.substr(name.size() + 1);
  }
  return "";
}

/// `-DNAME=value` as debian/rules passes it to CMake; "" when it does not.
std::string rules_define(const std::string& name) {
  std::smatch m;
  const std::string rules = read_file(kDebian + "/rules");
  if (!std::regex_search(rules, m, std::regex("-D" + name + "=(\\S+)"))) return "";
  return m[1];
}

// ---- the package's files ----------------------------------------------------------------

class OpsPackageInstall : public ::testing::Test {
 protected:
  // What `cmake --install` of this build puts under the prefix /usr, staged (DESTDIR):
  // what dh_auto_install does, but for this build's configuration.
  static void SetUpTestSuite() {
    stage_ = new TempDir;
    std::tie(install_code_, install_out_) = sh(staged_install_command(kBuild, stage_->path(), "/usr"));
  }
  static void TearDownTestSuite() {
    delete stage_;
    stage_ = nullptr;
  }
  /// Every regular file of the stage, relative to it ("usr/bin/redisgo_task").
  static std::set<std::string> staged_files() {
    std::set<std::string> out;
    const std::filesystem::path root = stage_->path();
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      if (e.is_regular_file()) out.insert(std::filesystem::relative(e.path(), root).string());
    }
    return out;
  }

  static TempDir* stage_;
  static int install_code_;
  static std::string install_out_;
};
TempDir* OpsPackageInstall::stage_ = nullptr;
int OpsPackageInstall::install_code_ = -1;
std::string OpsPackageInstall::install_out_;

TEST_F(OpsPackageInstall, TheInstallListIsWhatCMakeInstalls) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  // debian/rules configures four places differently from this build: map the package's
  // paths to this build's (and check that rules still says so).
  const std::string unit_dir = rules_define("REDISGO_SYSTEMD_UNIT_DIR");
  const std::string package_doc_dir = rules_define("CMAKE_INSTALL_DOCDIR");
  const std::string zsh_dir = rules_define("REDISGO_ZSH_COMPLETION_DIR");
  const std::string data_dir = rules_define("REDISGO_DATA_DIR");
  // The release's own: /lib/systemd/system on Debian 12, /usr/lib/systemd/system on 13.
  ASSERT_EQ(unit_dir, "$(SYSTEMD_UNIT_DIR)") << "the unit goes where the release's systemd.pc says";
  EXPECT_NE(read_file(kDebian + "/rules").find("pkg-config --variable=systemdsystemunitdir systemd"), std::string::npos);
  ASSERT_EQ(package_doc_dir, "share/doc/" + kPackage) << "a package's documentation is in /usr/share/doc/<package>";
  ASSERT_EQ(zsh_dir, "share/zsh/vendor-completions") << "where Debian's zsh looks for a package's completions";
  ASSERT_EQ(data_dir, "share/" + kPackage) << "a package's data in /usr/share/<package>";
  ASSERT_EQ(rules_define("REDISGO_BUILD_TESTS"), "OFF");
  const std::vector<std::pair<std::string, std::string>> to_build = {
      // Either release's unit directory (debian/rules); cmake/systemd_unit_dir.cmake for /usr.
      {"{,usr/}lib/systemd/system/", "usr/lib/systemd/system/"},
      {"usr/" + package_doc_dir + "/", "usr/" + doc_dir() + "/"},
      {"usr/" + zsh_dir + "/", "usr/" + cache_value("REDISGO_ZSH_COMPLETION_DIR") + "/"},
      {"usr/" + data_dir + "/", "usr/" + cache_value("REDISGO_DATA_DIR") + "/"},
  };

  std::set<std::string> listed;
  for (std::string line : lines_of(read_file(kDebian + "/" + kPackage + ".install"))) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(line.find(' '), std::string::npos) << "one path a line, installed where CMake put it: " << line;
    for (const auto& [from, to] : to_build) {
      if (line.rfind(from, 0) == 0) {
        line = to + line.substr(from.size());
        break;
      }
    }
    listed.insert(line);
  }
  ASSERT_GE(listed.size(), 8u);
  const auto staged = staged_files();
  for (const auto& f : listed) EXPECT_TRUE(staged.count(f)) << "listed in the .install but not installed by CMake: " << f;
  // dh_missing --fail-missing stops the package build at a file CMake installs and the
  // list forgets; say it here first.
  for (const auto& f : staged) EXPECT_TRUE(listed.count(f)) << "installed by CMake but not in the package: " << f;
}

// README.md's table of installed files, second column: every file of the package, which is
// the .install list (where the package puts each: the unit in either release's directory,
// the man pages compressed by dh_compress) and what debhelper and debian/rules add from
// debian/ and the top of the tree. scripts/package compares the same column with the
// contents of the .deb it builds.
TEST(OpsPackage, TheReadmeTableListsEveryFileOfThePackage) {
  std::set<std::string> expected;
  for (const auto& line : lines_of(read_file(kDebian + "/" + kPackage + ".install"))) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("{,usr/}", 0) == 0) {
      expected.insert("/" + line.substr(7));       // Debian 12
      expected.insert("/usr/" + line.substr(7));   // Debian 13
    } else if (line.rfind("usr/share/man/", 0) == 0) {
      expected.insert("/" + line + ".gz");
    } else {
      expected.insert("/" + line);
    }
  }
  // Each with the file it comes from.
  const std::vector<std::pair<std::string, std::string>> debhelper = {
      {"/usr/lib/sysusers.d/" + kPackage + ".conf", kDebian + "/" + kPackage + ".sysusers"},  // dh_installsysusers
      {"/etc/redisgo_task/example.toml", kSource + "/config/redisgo_task.toml"},             // debian/rules
      {"/usr/share/doc/" + kPackage + "/copyright", kDebian + "/copyright"},                  // dh_installdocs
      {"/usr/share/doc/" + kPackage + "/changelog.Debian.gz", kDebian + "/changelog"},        // dh_installchangelogs
      {"/usr/share/doc/" + kPackage + "/changelog.gz", kSource + "/CHANGELOG.md"},            // ... the upstream one
      {"/usr/share/lintian/overrides/" + kPackage, kDebian + "/" + kPackage + ".lintian-overrides"},  // dh_lintian
  };
  for (const auto& [path, from] : debhelper) {
    if (std::filesystem::exists(from)) expected.insert(path);
  }
  std::set<std::string> listed;
  const auto rows = markdown_table(read_file(kSource + "/README.md"), "| `cmake --install build`");
  ASSERT_GE(rows.size(), 10u) << "no table of installed files in README.md";
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 3u) << ::testing::PrintToString(row);
    for (const auto& p : quoted_paths(row[1])) EXPECT_TRUE(listed.insert(p).second) << p << " listed twice";
  }
  for (const auto& f : expected) EXPECT_TRUE(listed.count(f)) << f << " is in the package but not in README.md's table";
  for (const auto& f : listed) EXPECT_TRUE(expected.count(f)) << f << " is in README.md's table but not in the package";
}

TEST_F(OpsPackageInstall, TheCompletionsAreInstalledWhereTheShellsLook) {
  ASSERT_EQ(install_code_, 0) << install_out_;
  const std::string bash = stage_->path() + "/usr/share/bash-completion/completions/redisgo_task";
  EXPECT_EQ(read_file(bash), read_file(kBash)) << bash;
  const std::string zsh = stage_->path() + "/usr/" + cache_value("REDISGO_ZSH_COMPLETION_DIR") + "/_redisgo_task";
  EXPECT_EQ(read_file(zsh), read_file(kZsh)) << zsh;
}

TEST(OpsPackage, TheVersionIsTheProjectVersion) {
  const std::string changelog = read_file(kDebian + "/changelog");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(changelog, m, std::regex(R"(^([a-z0-9.+-]+) \(([0-9][0-9.]*)-([0-9]+)\) )")))
      << changelog.substr(0, 200);
  EXPECT_EQ(m[1], kPackage);
  const std::string upstream = m[2];
  const std::string cmake = read_file(kSource + "/CMakeLists.txt");
  std::smatch v;
  ASSERT_TRUE(std::regex_search(cmake, v, std::regex(R"(project\(redisgo_task VERSION ([0-9.]+))")));
  EXPECT_EQ(upstream, std::string(v[1])) << "debian/changelog is not at CMakeLists.txt's version: add an entry";
  auto r = run_task_binary({"version"}, 10s);
  EXPECT_TRUE(std::regex_match(r.out, std::regex("redisgo_task " + std::regex_replace(upstream, std::regex(R"(\.)"), "\\.") +
                                                 R"( \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)\n)")))
      << r.out;
  // The source package's and the binary package's name.
  const std::string control = read_file(kDebian + "/control");
  EXPECT_NE(control.find("Source: " + kPackage + "\n"), std::string::npos);
  EXPECT_NE(control.find("Package: " + kPackage + "\n"), std::string::npos);
}

// `version` names the commit it was built from: git's in a clone (this build's), and in a
// tree without .git, as the Debian package is built, the file COMMIT that scripts/package
// writes there (cmake/commit.cmake).
TEST(OpsPackage, TheVersionNamesTheCommitOfTheTree) {
  auto [gcode, head] = sh("git -C " + quote(kSource) + " rev-parse --short=12 HEAD");
  if (gcode != 0) GTEST_SKIP() << "not a git clone: " << head;
  // The build looks the commit up when it builds: a commit or an edit since shows as soon
  // as the binary is built again, so compare with what the tree was when it was built.
  auto r = run_task_binary({"version"}, 10s);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(\(commit ([0-9a-f]{12})(-dirty)?\))"))) << r.out;
  auto [known, out] = sh("git -C " + quote(kSource) + " cat-file -e " + std::string(m[1]) + "^{commit}");
  EXPECT_EQ(known, 0) << m[1] << " is no commit of this clone: " << out;
  EXPECT_EQ(run_task_binary({"--version"}, 10s).out, r.out);

  const std::string script = kSource + "/cmake/commit.cmake";
  TempDir tree;  // no .git: the COMMIT file, as scripts/package writes it
  tree.write("COMMIT", "3998ae5c1a2b\n");
  const std::string generated = tree.path() + "/commit.cpp";
  auto [ccode, cout] = sh("cmake -DSOURCE=" + quote(tree.path()) + " -DOUT=" + quote(generated) + " -P " + quote(script));
  ASSERT_EQ(ccode, 0) << cout;
  EXPECT_NE(read_file(generated).find("kCommit[] = \"3998ae5c1a2b\";"), std::string::npos) << read_file(generated);
  // -DREDISGO_COMMIT (COMMIT here) wins over the file, and only a commit name's characters
  // reach the C++ literal; with nothing to name, "unknown".
  std::tie(ccode, cout) = sh("cmake -DSOURCE=" + quote(tree.path()) + " -DOUT=" + quote(generated) +
                             " -DCOMMIT='v1\"; evil' -P " + quote(script));
  ASSERT_EQ(ccode, 0) << cout;
  EXPECT_NE(read_file(generated).find("kCommit[] = \"v1evil\";"), std::string::npos) << read_file(generated);
  std::filesystem::remove(tree.path() + "/COMMIT");
  std::tie(ccode, cout) = sh("cmake -DSOURCE=" + quote(tree.path()) + " -DOUT=" + quote(generated) + " -P " + quote(script));
  ASSERT_EQ(ccode, 0) << cout;
  EXPECT_NE(read_file(generated).find("kCommit[] = \"unknown\";"), std::string::npos) << read_file(generated);
}

TEST(OpsPackage, BuildDependsHasWhatSetupInstallsForTheBuild) {
  const std::string control = read_file(kDebian + "/control");
  const auto start = control.find("Build-Depends:");
  ASSERT_NE(start, std::string::npos);
  const std::string build_depends = control.substr(start, control.find("\n\n", start) - start);
  // scripts/setup's list, less what only the suite, the demo or the benchmarks need.
  const std::string setup = read_file(kSource + "/scripts/setup");
  std::regex dev(R"(\b(lib[a-z0-9+.-]+-dev|cmake|pkg-config|scdoc)\b)");
  int n = 0;
  for (std::sregex_iterator it(setup.begin(), setup.end(), dev), stop; it != stop; ++it) {
    const std::string p = (*it)[1];
    // The suite's (GoogleTest; Lua 5.1 for the simulated Redis of tests/sim), which the
    // package build does not build.
    if (p == "libgtest-dev" || p == "liblua5.1-0-dev") continue;
    // What a static libcrypto links in turn (Debian 13): the package links OpenSSL shared.
    if (p == "libzstd-dev") continue;
    ++n;
    EXPECT_TRUE(std::regex_search(build_depends, std::regex("(^|[\\s,])" + std::regex_replace(p, std::regex(R"([+.])"), "\\$&") +
                                                            "([\\s,(]|$)")))
        << p << " (scripts/setup) is not in debian/control's Build-Depends";
  }
  EXPECT_GE(n, 8) << "could not read scripts/setup's packages";
  EXPECT_NE(build_depends.find("debhelper-compat (= 13)"), std::string::npos);
}

TEST(OpsPackage, TheUnitsUserIsTheOneThePackageCreates) {
  const std::string unit = read_file(kSource + "/systemd/redisgo_task@.service.in");
  const std::string user = unit_setting(unit, "User");
  ASSERT_FALSE(user.empty());
  EXPECT_EQ(unit_setting(unit, "Group"), user);
  // sysusers.d: "u NAME ID GECOS HOME SHELL"; the group of the same name comes with it.
  std::string created;
  for (const auto& line : lines_of(read_file(kDebian + "/" + kPackage + ".sysusers"))) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex(R"(^u\s+(\S+)\s+-\s+"[^"]*"\s+(\S+)\s+(\S+)$)"))) {
      EXPECT_TRUE(created.empty()) << "a second user: " << line;
      created = m[1];
      EXPECT_EQ(m[2], "/nonexistent") << "a system user with no home";
      EXPECT_EQ(m[3], "/usr/sbin/nologin");
    }
  }
  EXPECT_EQ(created, user) << "debian/" << kPackage << ".sysusers does not create the unit's User=" << user;
  // The configs the unit reads are in the directory the postinst gives to that group.
  EXPECT_EQ(unit_setting(unit, "ExecStart").find("--config /etc/redisgo_task/%i.toml") != std::string::npos, true);
  const std::string postinst = read_file(kDebian + "/" + kPackage + ".postinst");
  EXPECT_NE(postinst.find("#DEBHELPER#"), std::string::npos);
  EXPECT_NE(postinst.find("dir=/etc/redisgo_task"), std::string::npos);
  EXPECT_NE(postinst.find("$1 == \"" + user + "\""), std::string::npos) << "postinst looks up another group";
  EXPECT_NE(postinst.find("chmod 0750"), std::string::npos);
  EXPECT_LT(postinst.find("#DEBHELPER#"), postinst.find("chown")) << "the group exists only after debhelper's snippet";
  auto [code, out] = sh("sh -n " + quote(kDebian + "/" + kPackage + ".postinst"));
  EXPECT_EQ(code, 0) << out;
}

TEST(OpsPackage, TheConffileIsTheExampleInTheUnitsDirectory) {
  // debian/rules installs config/redisgo_task.toml as /etc/redisgo_task/example.toml.
  const std::string rules = read_file(kDebian + "/rules");
  EXPECT_NE(rules.find("install -D -m 0644 config/redisgo_task.toml debian/" + kPackage +
                       "/etc/redisgo_task/example.toml"),
            std::string::npos);
  auto r = run_task_binary({"validate", "--config", kSource + "/config/redisgo_task.toml"}, 10s);
  EXPECT_EQ(r.code, 0) << r.err;
  // Nothing else goes to /etc: dpkg treats every file there as a conffile.
  for (const auto& line : lines_of(read_file(kDebian + "/" + kPackage + ".install"))) {
    EXPECT_NE(line.rfind("etc/", 0), 0u) << line;
  }
}

TEST(OpsPackage, EveryKeptLintianWarningSaysWhy) {
  const std::string path = kDebian + "/" + kPackage + ".lintian-overrides";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // none kept
  bool comment_before = false;
  int n = 0;
  for (const auto& line : lines_of(read_file(path))) {
    if (line.rfind("#", 0) == 0) {
      comment_before = true;
      continue;
    }
    if (line.empty()) {
      comment_before = false;
      continue;
    }
    ++n;
    EXPECT_TRUE(comment_before) << "an override with no comment above it saying why: " << line;
  }
  EXPECT_GT(n, 0) << path << " overrides nothing: delete it";
}

// ---- completion -------------------------------------------------------------------------

/// The names listed under `heading` ("Subcommands:", "Options:") of a CLI11 help text: the
/// first word of each indented line, split at commas ("-c,--config" is two).
std::vector<std::string> help_entries(const std::string& help, const std::string& heading) {
  std::vector<std::string> out;
  bool inside = false;
  for (const auto& line : lines_of(help)) {
    if (line == heading) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.empty() || line[0] != ' ') {
      inside = false;
      continue;
    }
    if (line.size() < 3 || line[1] != ' ' || line[2] == ' ') continue;  // a description's second line
    std::istringstream words(line);
    std::string first;
    words >> first;
    std::istringstream names(first);
    for (std::string name; std::getline(names, name, ',');) {
      if (!name.empty()) out.push_back(name);
    }
  }
  return out;
}

std::vector<std::string> subcommands() {
  auto r = run_task_binary({"--help"}, 10s);
  return help_entries(r.out, "Subcommands:");
}

/// What the bash completion offers for the words `words` (the last is being completed),
/// run in `dir`.
std::set<std::string> bash_offers(const std::vector<std::string>& words, const std::string& dir = ".") {
  std::string array;
  for (const auto& w : words) array += " " + quote(w);
  const std::string script = "cd " + quote(dir) + " && source " + quote(kBash) + " && COMP_WORDS=(" + array +
                             ") && COMP_CWORD=" + std::to_string(words.size() - 1) +
                             " && _redisgo_task && printf '%s\\n' \"${COMPREPLY[@]}\"";
  auto [code, out] = sh("bash -c " + quote(script));
  std::set<std::string> offers;
  if (code != 0) {
    offers.insert("<bash failed: " + out + ">");
    return offers;
  }
  for (const auto& l : lines_of(out)) {
    if (!l.empty()) offers.insert(l);
  }
  return offers;
}

TEST(OpsCompletion, BashOffersEveryCommandAndEveryOption) {
  const auto subs = subcommands();
  ASSERT_GE(subs.size(), 9u) << "could not read the subcommands of redisgo_task --help";
  const auto commands = bash_offers({"redisgo_task", ""});
  for (const auto& s : subs) EXPECT_TRUE(commands.count(s)) << "bash completion does not offer the command " << s;
  EXPECT_EQ(commands.size(), subs.size()) << "offers a command the binary does not have";
  const auto top = bash_offers({"redisgo_task", "-"});
  for (const auto& o : help_entries(run_task_binary({"--help"}, 10s).out, "Options:")) {
    if (o.rfind("--", 0) != 0) continue;
    EXPECT_TRUE(top.count(o)) << "bash completion does not offer " << o;
  }

  int options = 0;
  for (const auto& s : subs) {
    auto r = run_task_binary({s, "--help"}, 10s);
    ASSERT_EQ(r.code, 0) << s << " --help\n" << r.err;
    const auto offered = bash_offers({"redisgo_task", s, "-"});
    for (const auto& o : help_entries(r.out, "Options:")) {
      if (o.rfind("--", 0) != 0) continue;  // a short form: completing "-" offers the long one
      ++options;
      EXPECT_TRUE(offered.count(o)) << "bash completion of '" << s << "' does not offer " << o;
    }
  }
  EXPECT_GE(options, 25) << "could not read the options of the subcommands' --help";
}

TEST(OpsCompletion, BashOffersConfigurationFilesAndCommandsAfterDashDash) {
  TempDir dir;
  dir.write("job.toml", "");
  dir.write("notes.txt", "");
  ASSERT_EQ(::mkdir((dir.path() + "/jobs").c_str(), 0755), 0);
  for (const std::string option : {"--config", "-c"}) {
    const auto offered = bash_offers({"redisgo_task", "status", option, ""}, dir.path());
    EXPECT_TRUE(offered.count("job.toml")) << option << ": " << ::testing::PrintToString(offered);
    EXPECT_TRUE(offered.count("jobs")) << "a directory to descend into";
    EXPECT_FALSE(offered.count("notes.txt")) << "not a configuration file";
  }
  EXPECT_EQ(bash_offers({"redisgo_task", "validate", "--config", "jo"}, dir.path()),
            (std::set<std::string>{"job.toml", "jobs"}));
  // --config=FILE: bash has split the word at '='.
  EXPECT_TRUE(bash_offers({"redisgo_task", "check", "--config", "=", "j"}, dir.path()).count("job.toml"));
  // After `task ... --`: a command, then files.
  EXPECT_TRUE(bash_offers({"redisgo_task", "task", "-c", "job.toml", "--", "tru"}).count("true"));
  EXPECT_TRUE(bash_offers({"redisgo_task", "task", "-c", "job.toml", "--", "/bin/true", "no"}, dir.path())
                  .count("notes.txt"));
  // An option's value is not an option.
  EXPECT_TRUE(bash_offers({"redisgo_task", "status", "--key", ""}).empty());
}

TEST(OpsCompletion, ZshNamesEveryCommandAndEveryOption) {
  const std::string zsh = read_file(kZsh);
  ASSERT_FALSE(zsh.empty()) << kZsh;
  EXPECT_EQ(zsh.rfind("#compdef redisgo_task\n", 0), 0u);
  for (const auto& s : subcommands()) {
    EXPECT_NE(zsh.find("'" + s + ":"), std::string::npos) << "zsh completion does not describe the command " << s;
    EXPECT_NE(zsh.find("\n        " + s + ")"), std::string::npos) << "zsh completion has no case for " << s;
    auto r = run_task_binary({s, "--help"}, 10s);
    for (const auto& o : help_entries(r.out, "Options:")) {
      // Named as in _arguments: '--json[' or in a brace pair {-c,--config}.
      const bool named = zsh.find("'" + o + "[") != std::string::npos || zsh.find("{" + o + ",") != std::string::npos ||
                         zsh.find("," + o + "}") != std::string::npos || zsh.find(")" + o + "[") != std::string::npos;
      EXPECT_TRUE(named) << "zsh completion does not name " << s << " " << o;
    }
  }
}

// ---- help on an installed system --------------------------------------------------------

/// Where this build's --help says the example is: the configured prefix's.
std::string configured_example() {
  return cache_value("CMAKE_INSTALL_PREFIX") + "/" + doc_dir() + "/examples/redisgo_task.toml";
}

TEST(OpsHelp, EveryHelpNamesTheManualAndTheInstalledExample) {
  const std::string example = configured_example();
  std::vector<std::vector<std::string>> helps = {{"--help"}};
  for (const auto& s : subcommands()) helps.push_back({s, "--help"});
  ASSERT_GE(helps.size(), 10u);
  for (const auto& args : helps) {
    auto r = run_task_binary(args, 10s);
    const std::string what = ::testing::PrintToString(args);
    ASSERT_EQ(r.code, 0) << what << r.err;
    EXPECT_NE(r.out.find("redisgo_task(1)"), std::string::npos) << what << " does not name the manual page\n" << r.out;
    EXPECT_NE(r.out.find(example + "\n"), std::string::npos) << what << " does not name " << example << "\n" << r.out;
    EXPECT_NE(r.out.find("Example"), std::string::npos) << what << " shows no example\n" << r.out;
    // Paths of the source repository, which an installed system does not have.
    for (const char* repo : {" config/", "docs/", "README", "scripts/", "DESIGN"}) {
      EXPECT_EQ(r.out.find(repo), std::string::npos) << what << " names '" << repo << "'\n" << r.out;
    }
  }
}

TEST(OpsHelp, TheExampleIsFoundUnderThePrefixTheBinaryRunsFrom) {
  const std::string configured = configured_example();
  const std::string docdir = doc_dir();
  TempDir dir;
  const std::string prefix = dir.path() + "/opt/x";
  const std::string exe = prefix + "/bin/redisgo_task";
  // No example there: the configured path.
  EXPECT_EQ(redisgo::cli::example_config_for(exe), configured);
  EXPECT_EQ(redisgo::cli::example_config_for(""), configured);
  const std::string example = prefix + "/" + docdir + "/examples/redisgo_task.toml";
  ASSERT_EQ(sh("mkdir -p " + quote(prefix + "/" + docdir + "/examples") + " && touch " + quote(example)).first, 0);
  EXPECT_EQ(redisgo::cli::example_config_for(exe), example);
  // Only from the prefix's bin directory, not from anywhere that happens to be near one.
  EXPECT_EQ(redisgo::cli::example_config_for(prefix + "/sbin/redisgo_task"), configured);
  EXPECT_EQ(redisgo::cli::example_config_for(prefix + "/bin/x/redisgo_task"), configured);
}

}  // namespace

}  // namespace ops_package_test
