// docs/DESIGN.md "Layers": a file under src/ stays at most kMaxFileLines lines and a function
// at most kMaxFunctionLines. Checked on the source: a file or a function past that fails here,
// with its name and lines. A function is found by matching braces in the code (comments,
// literals and preprocessor lines blanked): a brace block at namespace or class scope whose
// header has a parameter list (a lambda assigned there counts as one); its length runs from
// the first line of its signature to its closing brace.
#include <gtest/gtest.h>

#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "support/source_tree.h"

namespace source_size_test {

using redisgo::testing::code_only;
using redisgo::testing::read_source;
using redisgo::testing::source_files;

namespace {

constexpr int kMaxFileLines = 600;
constexpr int kMaxFunctionLines = 80;


struct Function {
  std::string name;
  int first = 0;  ///< the first line of its signature
  int last = 0;   ///< its closing brace
  int lines() const { return last - first + 1; }
};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The header without a leading `template <...>` (whose `class` is no class).
std::string without_template(const std::string& header) {
  static const std::regex tmpl(R"(^\s*template\s*<)");
  if (!std::regex_search(header, tmpl)) return header;
  int depth = 0;
  for (std::size_t i = header.find('<'); i < header.size(); ++i) {
    if (header[i] == '<') ++depth;
    if (header[i] == '>' && --depth == 0) return header.substr(i + 1);
  }
  return header;
}

/// What the brace after `header` opens, at namespace or class scope.
enum class Opens { kScope, kFunction, kData, kInHeader };

Opens classify(const std::string& raw) {
  const std::string header = without_template(raw);
  const auto paren = header.find('(');
  static const std::regex scope(R"(\b(namespace|class|struct|union|enum|extern)\b)");
  std::smatch m;
  if (std::regex_search(header, m, scope) && (paren == std::string::npos || m.position(0) < static_cast<long>(paren))) {
    return Opens::kScope;
  }
  if (paren == std::string::npos) return Opens::kData;  // an initializer: `= {`, `x{0}`
  // A constructor's member initialized with braces (`: a_(a), b_{b} {`): part of the header.
  const auto close = header.find(')', paren);
  std::size_t colon = std::string::npos;
  for (std::size_t i = close; close != std::string::npos && i < header.size(); ++i) {
    if (header[i] == ':' && (i + 1 >= header.size() || header[i + 1] != ':') && header[i - 1] != ':') {
      colon = i;
      break;
    }
  }
  std::size_t end = header.find_last_not_of(" \t\n");
  if (colon != std::string::npos && end != std::string::npos && end > colon &&
      (word_char(header[end]) || header[end] == '>')) {
    return Opens::kInHeader;
  }
  return Opens::kFunction;
}

/// "Runner::run" from a function's header: the last word before its parameter list.
std::string name_of(const std::string& raw) {
  const std::string header = without_template(raw);
  std::string before = header.substr(0, header.find('('));
  const auto end = before.find_last_not_of(" \t\n");
  if (end == std::string::npos) return "(lambda)";
  before.resize(end + 1);
  const auto start = before.find_last_of(" \t\n*&");
  std::string name = before.substr(start == std::string::npos ? 0 : start + 1);
  return name.empty() || name.back() == '=' || name.back() == ']' ? "(lambda)" : name;
}

/// Every function of `text` (a whole source file), with its lines.
std::vector<Function> functions(const std::string& text) {
  enum class Block { kScope, kFunction, kData, kNested, kInHeader };
  const std::string code = code_only(text);
  std::vector<Function> out;
  std::vector<Block> stack;
  std::vector<Function> open;
  std::string header;
  int header_line = 0, line = 1, parens = 0;
  auto at_scope = [&] { return stack.empty() || stack.back() == Block::kScope; };
  auto reset = [&] {
    header.clear();
    header_line = 0;
    parens = 0;
  };
  for (char c : code) {
    if (c == '\n') ++line;
    const bool in_header = at_scope() || stack.back() == Block::kInHeader;
    if (c == '{') {
      if (!in_header) {
        stack.push_back(Block::kNested);
      } else if (!at_scope() || parens > 0) {
        stack.push_back(Block::kInHeader);
        header += c;
      } else {
        switch (classify(header)) {
          case Opens::kScope: stack.push_back(Block::kScope); reset(); break;
          case Opens::kData: stack.push_back(Block::kData); break;
          case Opens::kInHeader: stack.push_back(Block::kInHeader); header += c; break;
          case Opens::kFunction:
            stack.push_back(Block::kFunction);
            open.push_back({name_of(header), header_line ? header_line : line, 0});
            break;
        }
      }
      continue;
    }
    if (c == '}') {
      if (stack.empty()) continue;  // unbalanced: the scan says nothing of it
      const Block closed = stack.back();
      stack.pop_back();
      if (closed == Block::kFunction) {
        open.back().last = line;
        out.push_back(open.back());
        open.pop_back();
      }
      if (closed == Block::kInHeader) {
        header += c;
      } else if (closed != Block::kNested && at_scope()) {
        reset();
      }
      continue;
    }
    if (!in_header) continue;
    if (c == ';' && parens == 0 && at_scope()) {
      reset();
      continue;
    }
    if (c == '(') ++parens;
    if (c == ')' && parens > 0) --parens;
    if (!header_line && !std::isspace(static_cast<unsigned char>(c))) header_line = line;
    header += c;
  }
  return out;
}

int line_count(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n + (!text.empty() && text.back() != '\n');
}

/// What is over the limits in `file` (its text `text`).
std::vector<std::string> findings(const std::string& file, const std::string& text) {
  std::vector<std::string> out;
  if (const int n = line_count(text); n > kMaxFileLines) {
    out.push_back(file + ": " + std::to_string(n) + " lines (at most " + std::to_string(kMaxFileLines) + ")");
  }
  for (const auto& f : functions(text)) {
    if (f.lines() > kMaxFunctionLines) {
      out.push_back(file + ":" + std::to_string(f.first) + "-" + std::to_string(f.last) + ": " + f.name + " is " +
                    std::to_string(f.lines()) + " lines (at most " + std::to_string(kMaxFunctionLines) + ")");
    }
  }
  return out;
}

}  // namespace

TEST(SourceSize, FilesAndFunctionsUnderSrcStayWithinTheLimits) {
  for (const auto& file : source_files("src")) {
    bool found = false;
    const std::string text = read_source(file, found);
    ASSERT_TRUE(found) << file;
    for (const auto& f : findings(file, text)) ADD_FAILURE() << f;
  }
}

// The scan itself, on code made up for it.
TEST(SourceSize, TheScanFindsEachFunctionAndItsLines) {
  const std::string code =
      "#include <x>\n"                                       // 1
      "namespace a {\n"                                      // 2
      "namespace {\n"                                        // 3
      "const int kX[] = {1, 2};  // f() {\n"                 // 4
      "struct S {\n"                                         // 5
      "  int x{0};\n"                                        // 6
      "  int get() const { return x; }\n"                    // 7
      "};\n"                                                 // 8
      "}  // namespace\n"                                    // 9
      "template <class T>\n"                                 // 10
      "int Runner::run(T t,\n"                               // 11
      "                Opts o = {}) {\n"                     // 12
      "  if (t) { return \"}\"[0]; }\n"                      // 13
      "  auto f = [&] { return '}'; };\n"                    // 14
      "  return 30'000;\n"                                   // 15
      "}\n"                                                  // 16
      "Runner::Runner(int a) : a_(a), b_{a, R\"(})\"} {\n"   // 17
      "  /* } */\n"                                          // 18
      "}\n"                                                  // 19
      "TEST(Suite, Name) {}\n"                               // 20
      "}  // namespace a\n";                                 // 21
  const auto found = functions(code);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[0].name, "get");
  EXPECT_EQ(found[0].first, 7);
  EXPECT_EQ(found[0].last, 7);
  EXPECT_EQ(found[1].name, "Runner::run");
  EXPECT_EQ(found[1].first, 10);
  EXPECT_EQ(found[1].last, 16);
  EXPECT_EQ(found[2].name, "Runner::Runner");
  EXPECT_EQ(found[2].first, 17);
  EXPECT_EQ(found[2].last, 19);
  EXPECT_EQ(found[3].name, "TEST");
  EXPECT_EQ(found[3].lines(), 1);

  std::string long_one = "void f() {\n";
  for (int i = 0; i < kMaxFunctionLines - 2; ++i) long_one += "  x();\n";
  EXPECT_TRUE(findings("a.cpp", long_one + "}\n").empty());
  EXPECT_EQ(findings("a.cpp", long_one + "  x();\n}\n").size(), 1u);
  EXPECT_EQ(findings("a.cpp", std::string(kMaxFileLines + 1, '\n')).size(), 1u);
  EXPECT_TRUE(findings("a.cpp", std::string(kMaxFileLines, '\n')).empty());
}

}  // namespace source_size_test
