// One source for the documented defaults: `redisgo_task validate --defaults` prints the
// default of every configuration key, and the README, the manual and the example config are
// compared with that output, so a default changed in the code and not in the docs (or the
// other way round) fails here.
//
// What the binary prints (after the header comments, under "[section]" headers):
//   key = value                    the default
//   key = value  # default: RULE   derived from other keys; the value is RULE's at their
//                                  defaults, and the documented default is RULE
//   # key: TEXT                    no default value (nothing to document as one)
// The documented default D of a key is RULE when there is one, else the value as written.
//
// The marks in the docs, one per documented default (nothing else is read, no prose):
// - docs/redisgo_task.1.scd, under "# CONFIGURATION": the key's term line ends with
//   "(default D)", e.g. `*expire* = _duration_ (default "5s")`. scdoc's '*' (bold) are
//   dropped before comparing (`(default *expire* / 5)` is `expire / 5`). Every key that has
//   a default must have one; a key without a default must not.
// - README.md: an HTML comment naming the key, right before a code span holding D:
//   (default <!-- default: redis.cron -->`expire / 5`). Any number of them, anywhere.
// - config/redisgo_task.toml: every line that sets a key that has a default, commented out
//   ("# limit = 1") or not, sets it to the default's value; such a line may end with
//   "# default: RULE", which must be the key's RULE. Keys without a default (host, key,
//   timeout, ...) hold examples and are not compared.
// A new key with a default: print it in render_defaults.cpp, then give it its
// "(default D)" in the manual (this test says where it is missing).

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "config/config.h"
#include "config/loader.h"
#include "support/task_process.h"

namespace ops_defaults_test {

using namespace std::chrono_literals;
using namespace redisgo::testing;
namespace config = redisgo::config;

namespace {

const std::string kSource = REDISGO_SOURCE_DIR;

/// What --defaults says of one key.
struct Default {
  std::string value;  ///< the TOML value; empty: no default value
  std::string rule;   ///< RULE of a derived default; empty otherwise
  /// What the docs must say.
  std::string documented() const { return rule.empty() ? value : rule; }
};
using Defaults = std::map<std::string, Default>;  // "section.key"

/// Parses the output of --defaults (the form above); `bad` collects lines of no known form.
Defaults parse_defaults(const std::string& text, std::vector<std::string>& bad) {
  Defaults out;
  std::string section;
  const std::regex header(R"(^\[([a-z]+)\]$)");
  const std::regex value(R"(^([a-z_]+) = (.+?)(  # default: (.+))?$)");
  const std::regex none(R"(^# ([a-z_]+): (.+)$)");
  std::istringstream in(text);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (std::regex_match(line, m, header)) {
      section = m[1];
    } else if (section.empty() && line.rfind("#", 0) == 0) {
      continue;  // the header comments
    } else if (std::regex_match(line, m, value)) {
      out[section + "." + m[1].str()] = {m[2], m[4]};
    } else if (std::regex_match(line, m, none)) {
      out[section + "." + m[1].str()] = {};
    } else {
      bad.push_back(line);
    }
  }
  return out;
}

/// The binary's defaults, read once.
const Defaults& binary_defaults() {
  static const Defaults parsed = [] {
    const auto r = run_task_binary({"validate", "--defaults"}, 10s);
    EXPECT_EQ(r.code, 0) << r.err;
    std::vector<std::string> bad;
    Defaults d = parse_defaults(r.out, bad);
    EXPECT_TRUE(bad.empty()) << "lines of no known form in --defaults: " << bad.front();
    return d;
  }();
  return parsed;
}

std::string strip_bold(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '*'), s.end());
  return s;
}

config::Config load_ok(const std::string& text) {
  config::LoadResult r = config::load_string(text, "defaults.toml");
  EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors.front().str()) << "\n" << text;
  return r.config.value_or(config::Config{});
}

/// A valid file in `mode` with only what is required, and `redis` / `task` lines added.
/// `needs` "tls_" or "sentinel_": with what the keys of that name need (tls, sentinels).
std::string minimal(const std::string& mode, const std::string& redis = "", const std::string& task = "",
                    const std::string& needs = "") {
  std::string servers = "host = \"127.0.0.1:6379\"\n";
  if (needs == "tls_") servers += "tls = true\n";
  if (needs == "sentinel_") servers = "sentinels = [\"127.0.0.1:26379\"]\nsentinel_master = \"m\"\n";
  const std::string health = mode == "supervise" ? "health_command = \"true\"\n" : "";
  return "[redis]\n" + servers + "key = \"k\"\n" + redis + "[task]\ncommand = [\"true\"]\nmode = \"" + mode + "\"\n" +
         health + task;
}

}  // namespace

TEST(OpsDefaults, PrintsEveryKeyOnceUnderItsSection) {
  const Defaults& d = binary_defaults();
  std::set<std::string> known;
  for (const auto& s : config::detail::known_keys()) {
    for (auto key : s.keys) known.insert(std::string(s.section) + "." + std::string(key));
  }
  std::set<std::string> printed;
  for (const auto& [key, _] : d) printed.insert(key);
  EXPECT_EQ(printed, known);
  const auto r = run_task_binary({"validate", "--defaults"}, 10s);
  for (const auto& key : known) {
    const std::string name = key.substr(key.find('.') + 1);
    const std::regex once("(^|\n)(# )?" + name + "( = |: )");
    EXPECT_EQ(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), once), std::sregex_iterator()), 1)
        << name << " not printed exactly once";
  }
  // Not with a file; and validate needs one of the two.
  const auto example = kSource + "/config/redisgo_task.toml";
  EXPECT_EQ(run_task_binary({"validate", "--defaults", "--config", example}, 10s).code, 78);
  EXPECT_EQ(run_task_binary({"validate"}, 10s).code, 78);
}

// Setting a key to what --defaults prints changes nothing: the printed defaults are the
// loader's. Each key is set in both modes (a key of the other mode is ignored there), and
// a derived default's RULE holds at another expire too.
TEST(OpsDefaults, AreWhatTheLoaderApplies) {
  const Defaults& d = binary_defaults();
  std::size_t compared = 0;
  for (const std::string mode : {"oneshot", "supervise"}) {
    for (const auto& [dotted, def] : d) {
      if (def.value.empty() || dotted == "task.mode") continue;  // the mode is the loop's
      const std::string section = dotted.substr(0, dotted.find('.'));
      const std::string line = dotted.substr(dotted.find('.') + 1) + " = " + def.value + "\n";
      // The file without the key, and with it; a key that needs another has it in both.
      std::string needs = section == "redis" ? line.substr(0, line.find('_') + 1) : "";
      if (needs != "tls_" && needs != "sentinel_") needs.clear();
      const std::string without = minimal(mode, "", "", needs);
      std::string with;
      if (section == "redis") {
        with = minimal(mode, line, "", needs);
      } else if (section == "task") {
        with = minimal(mode, "", line);
      } else {
        with = minimal(mode) + "[" + section + "]\n" + line;
      }
      config::Config c = load_ok(with);
      c.task.step_down_hold = effective_step_down_hold(c);  // given vs derived: the same hold
      config::Config want = load_ok(without);
      want.task.step_down_hold = effective_step_down_hold(want);
      EXPECT_TRUE(c == want) << mode << ": " << line << " is not the default";
      ++compared;
    }
  }
  EXPECT_GT(compared, 60u);
  // The rules, at expire = 7s: cron = expire / 5, step_down_hold = 2 x expire.
  ASSERT_EQ(d.at("redis.cron").rule, "expire / 5");
  ASSERT_EQ(d.at("task.step_down_hold").rule, "2 x expire");
  const config::Config c = load_ok(minimal("supervise", "expire = \"7s\"\ncron = \"1s\"\n"));
  EXPECT_EQ(effective_step_down_hold(c), 14s);
  EXPECT_EQ(load_ok(minimal("oneshot", "expire = \"7s\"\n")).redis.cron, 1400ms);
}

TEST(OpsDocs, TheManualGivesEveryDefaultAsTheBinary) {
  const Defaults& d = binary_defaults();
  const std::string ref = read_file(kSource + "/docs/redisgo_task.1.scd");
  const auto start = ref.find("\n# CONFIGURATION\n");
  ASSERT_NE(start, std::string::npos);
  const auto end = ref.find("\n# ", start + 1);
  std::istringstream in(ref.substr(start, end - start));
  // "*a*, *b* = _type_ (default D)": the keys of a term line, and its D if any.
  const std::regex section(R"(^## \[([a-z]+)\]$)");
  const std::regex term(R"(^(\*[a-z_]+\*(, \*[a-z_]+\*)*)( = .*?)?( \(default (.+)\))?$)");
  const std::regex word(R"(\*([a-z_]+)\*)");
  std::string current;
  std::set<std::string> marked;
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) current = std::regex_match(line, m, section) ? m[1].str() : "";
    if (current.empty() || line.rfind("*", 0) != 0 || !std::regex_match(line, m, term)) continue;
    const std::string keys = m[1], documented = strip_bold(m[5]);
    const bool has_mark = m[4].matched;
    for (std::sregex_iterator w(keys.begin(), keys.end(), word), stop; w != stop; ++w) {
      const std::string dotted = current + "." + (*w)[1].str();
      const auto it = d.find(dotted);
      if (it == d.end()) continue;  // another test checks that every key is there
      if (it->second.value.empty()) {
        EXPECT_FALSE(has_mark) << dotted << ": the manual gives a default, the binary has none: " << line;
        continue;
      }
      marked.insert(dotted);
      EXPECT_EQ(documented, it->second.documented()) << dotted << " in the manual: " << line;
    }
  }
  for (const auto& [dotted, def] : d) {
    if (!def.value.empty()) {
      EXPECT_TRUE(marked.count(dotted)) << dotted << ": no \"(default " << def.documented()
                                        << ")\" on its term line in the manual";
    }
  }
}

TEST(OpsDocs, TheReadmesDefaultsAreTheBinarys) {
  const Defaults& d = binary_defaults();
  const std::string readme = read_file(kSource + "/README.md");
  const std::regex mark(R"(<!-- default: ([a-z]+\.[a-z_]+) -->`([^`]*)`)");
  std::size_t n = 0;
  for (std::sregex_iterator it(readme.begin(), readme.end(), mark), stop; it != stop; ++it, ++n) {
    const std::string dotted = (*it)[1];
    ASSERT_TRUE(d.count(dotted)) << "README marks the default of " << dotted << ", which the binary does not know";
    EXPECT_EQ((*it)[2].str(), d.at(dotted).documented()) << dotted << " in README.md";
  }
  EXPECT_GE(n, 8u) << "the README's marks of defaults are gone";
  // A mark without its code span is a mark that checks nothing.
  const std::regex loose(R"(<!-- default: [^>]*-->(?!`))");
  EXPECT_FALSE(std::regex_search(readme, loose)) << "a '<!-- default: ... -->' not followed by a `code span`";
}

TEST(OpsDocs, TheExampleConfigShowsTheDefaults) {
  const Defaults& d = binary_defaults();
  std::istringstream in(read_file(kSource + "/config/redisgo_task.toml"));
  const std::regex section(R"(^\[([a-z]+)\]$)");
  const std::regex setting(R"(^(# )?([a-z_]+) = (.+?)(\s+# default: (.+))?$)");
  std::string current;
  std::size_t n = 0;
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_match(line, m, section)) current = m[1];
    if (!std::regex_match(line, m, setting)) continue;
    const auto it = d.find(current + "." + m[2].str());
    if (it == d.end() || it->second.value.empty()) continue;
    ++n;
    std::string value = m[3];
    if (auto c = value.find("  #"); c != std::string::npos) value.erase(c);  // a remark after the value
    EXPECT_EQ(value, it->second.value) << "config/redisgo_task.toml: " << line;
    if (m[4].matched) {
      EXPECT_EQ(m[5].str(), it->second.rule) << "config/redisgo_task.toml: " << line;
    }
  }
  EXPECT_GT(n, 25u);
}

}  // namespace ops_defaults_test
