// The layout of src/lock/lua/ (lock/scripts.h), read from the files themselves: each script
// opens with a --[[ ]] block that documents its reply, then its KEYS and ARGV as named locals,
// each with a comment; below that header no KEYS or ARGV is read, and the shared functions of
// lib/ read none at all (they take what they need as parameters). Every script is embedded.
// Each header names its reply's C++ type, one of its own, declared in the lock layer's reply
// headers (src/lock/replies*.h), and names the reply's elements by that type's fields.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lock/scripts.h"

namespace redisgo::luatable {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<fs::path> lua_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".lua") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The line without a comment ("--" outside a quoted string).
std::string code_of(const std::string& line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '-' && i + 1 < line.size() && line[i + 1] == '-') {
      return line.substr(0, i);
    }
  }
  return line;
}

bool reads_arguments(const std::string& line) {
  static const std::regex kArgs(R"(\b(KEYS|ARGV)\b)");
  return std::regex_search(code_of(line), kArgs);
}

/// Where the --[[ ]] block that opens `lines` ends (the index after "]]"); 0 when there is none.
std::size_t block_end(const std::vector<std::string>& lines) {
  if (lines.empty() || lines[0].rfind("--[[", 0) != 0) return 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("]]") != std::string::npos) return i + 1;
  }
  return 0;
}

/// The longest `local function` at the file's top level, in lines from its first to its `end`.
std::size_t longest_function(const std::vector<std::string>& lines, std::string* name) {
  std::size_t longest = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("local function ", 0) != 0) continue;
    std::size_t j = i + 1;
    while (j < lines.size() && lines[j].rfind("end", 0) != 0) ++j;
    if (j - i + 1 > longest) {
      longest = j - i + 1;
      *name = lines[i];
    }
  }
  return longest;
}

const fs::path kLuaDir = REDISGO_LUA_DIR;

/// The header block of a script: its first --[[ ]] block ("" when there is none).
std::string header_of(const std::vector<std::string>& lines) {
  std::string out;
  for (std::size_t i = 0; i < block_end(lines); ++i) out += lines[i] + "\n";
  return out;
}

/// A reply type of the lock layer: the header that declares it, and its fields' names (those
/// of the structs declared inside it too).
struct ReplyType {
  std::string header;
  std::set<std::string> fields;
};

/// `text` without its // comments.
std::string without_comments(const std::string& text) {
  return std::regex_replace(text, std::regex(R"(//[^\n]*)"), "");
}

/// The names of the members a struct's body declares: enums, nested struct heads, default
/// values and template arguments dropped, each declaration's names are the last word of each
/// of its comma-separated parts.
std::set<std::string> fields_of(std::string body) {
  body = std::regex_replace(body, std::regex(R"(enum class \w+ \{[^}]*\};?)"), "");
  body = std::regex_replace(body, std::regex(R"(struct \w+ \{)"), ";");
  body = std::regex_replace(body, std::regex(R"([{}])"), ";");
  body = std::regex_replace(body, std::regex(R"(=[^;,]*)"), "");
  static const std::regex kTemplate(R"(<[^<>]*>)");
  while (std::regex_search(body, kTemplate)) body = std::regex_replace(body, kTemplate, "");
  std::set<std::string> out;
  static const std::regex kLastWord(R"(([A-Za-z_]\w*)\s*$)");
  std::stringstream statements(body);
  for (std::string statement; std::getline(statements, statement, ';');) {
    std::stringstream parts(statement);
    for (std::string part; std::getline(parts, part, ',');) {
      std::smatch m;
      if (std::regex_search(part, m, kLastWord)) out.insert(m[1]);
    }
  }
  return out;
}

/// Every struct and alias the reply headers (src/lock/replies*.h) declare at namespace level.
std::map<std::string, ReplyType> reply_types() {
  std::map<std::string, ReplyType> out;
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> aliases;  // alias -> {header, type}
  for (const auto& e : fs::directory_iterator(kLuaDir.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("replies", 0) != 0 || e.path().extension() != ".h") continue;
    std::ifstream in(e.path());
    const std::string text = without_comments(std::string(std::istreambuf_iterator<char>(in), {}));
    const std::string header = "lock/" + name;
    static const std::regex kStruct(R"(\nstruct ([A-Z]\w*) \{)");
    for (std::sregex_iterator m(text.begin(), text.end(), kStruct), end; m != end; ++m) {
      std::size_t at = static_cast<std::size_t>(m->position(0) + m->length(0)), depth = 1, from = at;
      for (; at < text.size() && depth > 0; ++at) depth += text[at] == '{' ? 1 : text[at] == '}' ? -1 : 0;
      out[(*m)[1]] = {header, fields_of(text.substr(from, at - from - 1))};
    }
    static const std::regex kAlias(R"(\nusing ([A-Z]\w*) = ([A-Z]\w*);)");
    for (std::sregex_iterator m(text.begin(), text.end(), kAlias), end; m != end; ++m) {
      aliases.push_back({(*m)[1], {header, (*m)[2]}});
    }
  }
  for (const auto& [alias, of] : aliases) {
    if (auto it = out.find(of.second); it != out.end()) out[alias] = {of.first, it->second.fields};
  }
  return out;
}

/// The names a reply's documentation gives its elements: "[2] holder", "an integer `ours`".
std::set<std::string> documented_names(const std::string& reply) {
  std::set<std::string> out;
  static const std::regex kElement(R"(\[[0-9a-z]+\] ([a-z_][a-z0-9_]*))");
  static const std::regex kScalar(R"(an? (integer|string|array),? (its )?`([a-z_][a-z0-9_]*)`)");
  for (std::sregex_iterator m(reply.begin(), reply.end(), kElement), end; m != end; ++m) out.insert((*m)[1]);
  for (std::sregex_iterator m(reply.begin(), reply.end(), kScalar), end; m != end; ++m) out.insert((*m)[3]);
  return out;
}

TEST(LuaHeader, EveryScriptDocumentsItsReplyAndNamesItsArguments) {
  const auto files = lua_files(kLuaDir);
  ASSERT_FALSE(files.empty()) << kLuaDir;
  static const std::regex kLocal(R"(^local ([a-z_][a-z0-9_]*) = .*\b(KEYS|ARGV)\b.*  -- \S.*$)");
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    const auto lines = lines_of(path);
    const std::size_t opened = block_end(lines);
    ASSERT_GT(opened, 0u) << "the script does not open with a --[[ ]] block";
    const std::string header = header_of(lines);
    const auto reply = header.find("\n  Reply");
    ASSERT_NE(reply, std::string::npos) << "the header does not document the reply";
    EXPECT_TRUE(std::regex_search(header.substr(reply), std::regex(R"(\b(integer|string|array)\b)")))
        << "the reply's elements have no types";
    // The named locals: every line after the block up to the first blank line.
    std::size_t i = opened;
    std::size_t named = 0;
    for (; i < lines.size() && !lines[i].empty(); ++i, ++named) {
      EXPECT_TRUE(std::regex_match(lines[i], kLocal))
          << "line " << i + 1 << " is not `local <name> = KEYS/ARGV...  -- what it is`: " << lines[i];
    }
    EXPECT_GT(named, 0u) << "no KEYS or ARGV named in the header";
    for (; i < lines.size(); ++i) {
      EXPECT_FALSE(reads_arguments(lines[i])) << "line " << i + 1 << " reads KEYS or ARGV below the header: " << lines[i];
    }
  }
}

TEST(LuaHeader, EveryScriptNamesItsOwnReplyTypeByItsFields) {
  const auto types = reply_types();
  ASSERT_TRUE(types.count("AcquireReply")) << "the reply headers were not read";
  std::map<std::string, std::string> named;  // type -> the script that names it
  static const std::regex kNamed(R"(\n  Reply \((lock/replies[a-z_]*\.h) ([A-Z]\w*)\))");
  for (const auto& path : lua_files(kLuaDir)) {
    SCOPED_TRACE(path.filename().string());
    const std::string header = header_of(lines_of(path));
    std::smatch m;
    if (!std::regex_search(header, m, kNamed)) {
      ADD_FAILURE() << "the header's reply does not open with \"Reply (lock/replies*.h <Type>)\"";
      continue;
    }
    const std::string type = m[2];
    const auto it = types.find(type);
    if (it == types.end()) {
      ADD_FAILURE() << type << " is not declared in src/lock/replies*.h";
      continue;
    }
    EXPECT_EQ(it->second.header, m[1].str()) << type << " is declared in another header";
    const auto [other, fresh] = named.emplace(type, path.filename().string());
    EXPECT_TRUE(fresh) << type << " is " << other->second << "'s already: every script has a type of its own name";
    const std::string reply = header.substr(static_cast<std::size_t>(m.position(0)));
    for (const auto& name : documented_names(reply)) {
      EXPECT_TRUE(it->second.fields.count(name)) << "the reply names `" << name << "`, which is no field of " << type;
    }
  }
}

// The readers of the test above, on what they must tell apart.
TEST(LuaHeader, TheReplyTypesAreReadWithTheirFields) {
  const auto fields = fields_of(R"(
  enum class Kind { kGranted, kBusy };
  Kind kind = Kind::kGranted;
  std::string holder, token;
  std::vector<std::pair<std::string, std::string>> slots;
  struct Slot {
    int slot = 0;
  } inner;
  std::optional<int> maybe{};)");
  EXPECT_EQ(fields, (std::set<std::string>{"kind", "holder", "token", "slots", "slot", "inner", "maybe"}));
  EXPECT_EQ(documented_names("Reply (x), an integer `ours`:\n    [1] 1\n    [2] holder, [3] pttl_ms  integer\n"),
            (std::set<std::string>{"ours", "holder", "pttl_ms"}));
  const auto types = reply_types();
  ASSERT_TRUE(types.count("UndoReply"));
  EXPECT_EQ(types.at("UndoReply").fields, std::set<std::string>{"ours"});
  EXPECT_EQ(types.at("FinishClaimReply").header, "lock/replies_once.h");
  EXPECT_TRUE(types.at("ListKeyReply").fields.count("until_ms"));
}

TEST(LuaHeader, SharedFunctionsReadNoArguments) {
  const auto files = lua_files(kLuaDir / "lib");
  ASSERT_FALSE(files.empty());
  static const std::regex kInclude(R"(^-- @include (\S+)$)");
  for (const auto& dir : {kLuaDir, kLuaDir / "lib"}) {
    for (const auto& path : lua_files(dir)) {
      const auto lines = lines_of(path);
      for (std::size_t i = 0; i < lines.size(); ++i) {
        std::smatch m;
        if (std::regex_match(lines[i], m, kInclude)) {
          EXPECT_TRUE(fs::exists(kLuaDir / m[1].str())) << path.filename() << " line " << i + 1 << ": " << lines[i];
        }
        if (dir != kLuaDir) {
          EXPECT_FALSE(reads_arguments(lines[i])) << path.filename() << " line " << i + 1 << " reads KEYS or ARGV";
        }
      }
    }
  }
}

TEST(LuaHeader, FunctionsStayShort) {
  for (const auto& dir : {kLuaDir, kLuaDir / "lib"}) {
    for (const auto& path : lua_files(dir)) {
      std::string name;
      const std::size_t longest = longest_function(lines_of(path), &name);
      EXPECT_LE(longest, 80u) << path.filename() << ": " << name;
    }
  }
}

TEST(LuaHeader, EveryScriptIsEmbeddedWithoutItsComments) {
  EXPECT_EQ(lua_files(kLuaDir).size(), lock::kLeaseScripts.size());
  for (const redis::Script* s : lock::kLeaseScripts) {
    EXPECT_EQ(s->source.find("--[["), std::string::npos);
    EXPECT_EQ(s->source.find("@include"), std::string::npos);
    EXPECT_EQ(s->source.rfind("local ", 0), 0u) << s->source.substr(0, 80);
  }
}

}  // namespace
}  // namespace redisgo::luatable
