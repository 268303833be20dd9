// The layout of src/lock/lua/ (lock/scripts.h), read from the files themselves: each script
// opens with a --[[ ]] block that documents its reply, then its KEYS and ARGV as named locals,
// each with a comment; below that header no KEYS or ARGV is read, and the shared functions of
// lib/ read none at all (they take what they need as parameters). Every script is embedded.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
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

TEST(LuaHeader, EveryScriptDocumentsItsReplyAndNamesItsArguments) {
  const auto files = lua_files(kLuaDir);
  ASSERT_FALSE(files.empty()) << kLuaDir;
  static const std::regex kLocal(R"(^local ([a-z_][a-z0-9_]*) = .*\b(KEYS|ARGV)\b.*  -- \S.*$)");
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    const auto lines = lines_of(path);
    const std::size_t opened = block_end(lines);
    ASSERT_GT(opened, 0u) << "the script does not open with a --[[ ]] block";
    const std::string header = [&] {
      std::string out;
      for (std::size_t i = 0; i < opened; ++i) out += lines[i] + "\n";
      return out;
    }();
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
