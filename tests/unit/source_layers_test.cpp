// docs/DESIGN.md "Layers": each folder under src/ is a module that uses only the modules its
// row of the table names, and what those use in turn. Checked on the source, against the table
// itself: an include that runs back up a layer fails here, and so does a module the table does
// not have, or a row for a folder that is gone. The build would catch most of these only once
// a link failed; an include of a header-only part of a module above links fine.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/source_tree.h"

namespace source_layers_test {

using redisgo::testing::code_only;
using redisgo::testing::read_source;
using redisgo::testing::source_files;

namespace {

/// Module -> the modules its row says it may use.
using Table = std::map<std::string, std::set<std::string>>;

/// The rows of the table under "## Layers" in `design`: "| `a`, `b` | what | c, d |" (or
/// "nothing of ours").
Table parse_table(const std::string& design) {
  Table table;
  const auto at = design.find("\n## Layers");
  if (at == std::string::npos) return table;
  std::istringstream in(design.substr(at + 1));
  std::string line;
  std::getline(in, line);  // the heading
  const std::regex row(R"(^\|([^|]*)\|[^|]*\|([^|]*)\|\s*$)");
  const std::regex name(R"(`?([a-z_]+)`?)");
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) break;
    std::smatch m;
    if (!std::regex_match(line, m, row)) {
      if (in_table) break;  // the table ended
      continue;
    }
    in_table = true;
    const std::string modules = m[1], uses = m[2];
    if (modules.find('`') == std::string::npos) continue;  // the header and the --- row
    std::set<std::string> used;
    if (uses.find("nothing") == std::string::npos) {
      for (std::sregex_iterator u(uses.begin(), uses.end(), name), end; u != end; ++u) used.insert((*u)[1]);
    }
    for (std::sregex_iterator mod(modules.begin(), modules.end(), name), end; mod != end; ++mod) {
      table[(*mod)[1]] = used;
    }
  }
  return table;
}

/// What `module` may include: itself and, through the table, everything below it.
std::set<std::string> below(const Table& table, const std::string& module) {
  std::set<std::string> seen{module};
  std::vector<std::string> todo{module};
  while (!todo.empty()) {
    const std::string m = todo.back();
    todo.pop_back();
    auto row = table.find(m);
    if (row == table.end()) continue;
    for (const auto& u : row->second) {
      if (seen.insert(u).second) todo.push_back(u);
    }
  }
  return seen;
}

/// The includes of `text` (a file of `module`) that name a module outside what it may use:
/// "line N: includes \"x/y.h\" (x is not below m)". `modules` are the folders of src/: an
/// include of anything else (a system header, a generated file) is not ours to judge.
std::vector<std::string> breaches(const Table& table, const std::string& module, const std::set<std::string>& modules,
                                  const std::string& text) {
  std::vector<std::string> found;
  const std::set<std::string> allowed = below(table, module);
  const std::regex include(R"(^\s*#\s*include\s*"([a-z_]+)/[^"]+")");
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::smatch m;
    if (!std::regex_search(line, m, include)) continue;
    const std::string used = m[1];
    if (modules.count(used) && !allowed.count(used)) {
      found.push_back("line " + std::to_string(n) + ": " + line + " (" + used + " is not below " + module + ")");
    }
  }
  return found;
}

const char* const kDesign = "docs/DESIGN.md";

Table read_table() {
  bool found = false;
  const std::string design = read_source(kDesign, found);
  EXPECT_TRUE(found) << kDesign << " cannot be read";
  return parse_table(design);
}

/// The folders of src/: its modules.
std::set<std::string> module_folders() {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(REDISGO_SOURCE_DIR) + "/src")) {
    if (e.is_directory()) out.insert(e.path().filename().string());
  }
  return out;
}

/// The module of "src/<module>/...", or "" for a file directly under src/ (main.cpp: the top,
/// which may include anything).
std::string module_of(const std::string& file) {
  const auto slash = file.find('/', 4);
  return slash == std::string::npos ? "" : file.substr(4, slash - 4);
}

}  // namespace

TEST(Layers, NoIncludeRunsBackUpATableLayer) {
  const Table table = read_table();
  ASSERT_FALSE(table.empty()) << "no table under \"## Layers\" in " << kDesign;
  const auto modules = module_folders();
  for (const auto& m : modules) {
    EXPECT_TRUE(table.count(m)) << "src/" << m << " is a module with no row in " << kDesign << "'s table";
  }
  for (const auto& [m, uses] : table) {
    EXPECT_TRUE(modules.count(m)) << kDesign << "'s table has a row for " << m << ", which src/ does not have";
    for (const auto& u : uses) EXPECT_TRUE(table.count(u)) << m << " may use " << u << ", which has no row";
  }
  for (const auto& file : source_files("src")) {
    const std::string module = module_of(file);
    if (module.empty()) continue;
    bool found = false;
    const std::string text = read_source(file, found);
    for (const auto& b : breaches(table, module, modules, text)) ADD_FAILURE() << file << " " << b;
  }
}

// An exit status is util's (util/exit_status.h); a file that names one includes that header
// itself, so that no daemon header (the phases', the rules') becomes where statuses come from.
TEST(Layers, AFileThatNamesAnExitStatusIncludesUtilExitStatus) {
  const std::regex status(R"(\bkExit[A-Z]\w*)");
  const std::regex include(R"(#\s*include\s*"util/exit_status\.h")");
  for (const auto& file : source_files("src")) {
    if (file == "src/util/exit_status.h") continue;  // the table itself
    bool found = false;
    const std::string text = read_source(file, found);
    if (std::regex_search(code_only(text), status) && !std::regex_search(text, include)) {
      ADD_FAILURE() << file << " names an exit status (kExit...) without including util/exit_status.h";
    }
  }
}

// The check itself, on a table and files made up for it.
TEST(Layers, TheCheckCatchesAnIncludeThatRunsUp) {
  const Table table = parse_table(
      "# x\n\n## Layers\n\nintro\n\n| layer | what | may use |\n| --- | --- | --- |\n"
      "| `util` | a | nothing of ours |\n| `lock`, `process` | b | util |\n| `wiring` | c | lock |\n"
      "| `daemon` | d | wiring, process |\n| `commands` | e | wiring |\n\nafter\n\n## Next\n");
  ASSERT_EQ(table.size(), 6u);
  EXPECT_TRUE(table.at("util").empty());
  EXPECT_EQ(table.at("daemon"), (std::set<std::string>{"wiring", "process"}));
  const std::set<std::string> modules{"util", "lock", "process", "wiring", "daemon", "commands"};
  // Below, through the table: commands -> wiring -> lock -> util.
  EXPECT_TRUE(breaches(table, "commands", modules, "#include \"util/clock.h\"\n#include \"lock/lease.h\"\n").empty());
  EXPECT_TRUE(breaches(table, "commands", modules, "#include \"commands/status.h\"\n").empty());
  // Up, and sideways onto a floor that is not below.
  EXPECT_EQ(breaches(table, "commands", modules, "#include \"daemon/rules.h\"\n").size(), 1u);
  EXPECT_EQ(breaches(table, "commands", modules, "#include \"process/child.h\"\n").size(), 1u);
  EXPECT_EQ(breaches(table, "lock", modules, "# include \"wiring/servers.h\"\n").size(), 1u);
  // Not a module of ours, or no include at all.
  EXPECT_TRUE(breaches(table, "util", modules, "#include <daemon/x.h>\n#include \"generated/x.h\"\n").empty());
  EXPECT_TRUE(breaches(table, "util", modules, "// #include \"daemon/rules.h\" is what not to do\n").empty());
}

}  // namespace source_layers_test
