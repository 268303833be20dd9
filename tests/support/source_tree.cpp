#include "support/source_tree.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace redisgo::testing {
namespace {

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Blanks text[from, to) but its line breaks.
void blank(std::string& text, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to && i < text.size(); ++i) {
    if (text[i] != '\n') text[i] = ' ';
  }
}

/// Where the literal that opens at `i` (a quote) ends, one past its closing quote.
std::size_t literal_end(const std::string& t, std::size_t i) {
  const char quote = t[i];
  std::size_t j = i + 1;
  while (j < t.size() && t[j] != quote && t[j] != '\n') j += t[j] == '\\' ? 2 : 1;
  return std::min(j + 1, t.size());
}

/// A raw string R"delim( ... )delim" opening at `i` (its R): one past its end, or npos.
std::size_t raw_end(const std::string& t, std::size_t i) {
  if (t.compare(i, 2, "R\"") != 0) return std::string::npos;
  const std::size_t open = t.find('(', i + 2);
  if (open == std::string::npos) return std::string::npos;
  const std::string close = ")" + t.substr(i + 2, open - i - 2) + "\"";
  const std::size_t end = t.find(close, open);
  return end == std::string::npos ? t.size() : end + close.size();
}

}  // namespace

std::string read_source(const std::string& relative, bool& found) {
  std::ifstream in(std::string(REDISGO_SOURCE_DIR) + "/" + relative);
  found = static_cast<bool>(in);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> source_files(const std::string& relative) {
  namespace fs = std::filesystem;
  const fs::path root(REDISGO_SOURCE_DIR);
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(root / relative)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".h" || ext == ".cpp")) {
      out.push_back(entry.path().lexically_relative(root).generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string code_only(const std::string& text) {
  std::string t = text;
  bool line_start = true;
  for (std::size_t i = 0; i < t.size();) {
    const char c = t[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (line_start && c == '#') {  // a preprocessor line, with its continuations
      std::size_t j = i;
      while (j < t.size() && !(t[j] == '\n' && t[j - 1] != '\\')) ++j;
      blank(t, i, j);
      i = j;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) line_start = false;
    if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
      const std::size_t j = t.find('\n', i);
      blank(t, i, j == std::string::npos ? t.size() : j);
      i = j == std::string::npos ? t.size() : j;
    } else if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      const std::size_t j = t.find("*/", i + 2);
      const std::size_t end = j == std::string::npos ? t.size() : j + 2;
      blank(t, i, end);
      i = end;
    } else if (c == 'R' && (i == 0 || !ident(t[i - 1]) || t[i - 1] == '8' || t[i - 1] == 'L' || t[i - 1] == 'u' ||
                            t[i - 1] == 'U') &&
               raw_end(t, i) != std::string::npos) {
      const std::size_t end = raw_end(t, i);
      blank(t, i + 2, end - 1);
      i = end;
    } else if (c == '"' || (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(t[i - 1])) &&
                                           i + 1 < t.size() && std::isxdigit(static_cast<unsigned char>(t[i + 1]))))) {
      // (a quote between two digits is C++14's digit separator: 30'000)
      const std::size_t end = literal_end(t, i);
      blank(t, i + 1, end - 1);
      i = end;
    } else {
      ++i;
    }
  }
  return t;
}

}  // namespace redisgo::testing
