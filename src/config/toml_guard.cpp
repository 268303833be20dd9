// Guards in front of the TOML parser: characters toml++ cannot read safely, and parse
// errors that must not quote a secret.
#include <algorithm>
#include <cctype>
#include <string>

#include "config/detail.h"

namespace redisgo::config::detail {

bool line_mentions_password(std::string_view text, int line) {
  std::size_t start = 0;
  for (int i = 1; i < line && start != std::string_view::npos; ++i) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start == std::string_view::npos || start > text.size()) return false;
  std::string row(text.substr(start, text.find('\n', start) - start));
  std::transform(row.begin(), row.end(), row.begin(), [](unsigned char c) { return std::tolower(c); });
  return row.find("password") != std::string::npos;
}

std::string unquote_fragments(const std::string& s) {
  std::string out;
  bool inside = false;
  for (char c : s) {
    if (c == '\'') {
      if (inside) out += "...'";
      else out += '\'';
      inside = !inside;
    } else if (!inside) {
      out += c;
    }
  }
  return out;
}

/// toml++ 3.3.0 (Debian 12) reaches __builtin_unreachable() when it asks whether a
/// non-ASCII character is whitespace (is_non_ascii_horizontal_whitespace, e.g. U+00E9 or
/// U+FE00): undefined behaviour that fuzzing found. It asks wherever whitespace may
/// appear: between tokens, inside unquoted values, and after a line-ending backslash in a
/// multi-line string. TOML 1.0 allows non-ASCII characters only inside strings and
/// comments anyway, so they are refused everywhere else, with their line and column,
/// before the text reaches the parser. A quote starts a string only where a string can
/// start (a key at the start of a line, or after '=', '[', '{', ',' or '.'); elsewhere it
/// is part of an unquoted value, as toml++ reads it.
std::optional<Unsafe> toml_unsafe_character(std::string_view text) {
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral } in = In::kCode;
  constexpr std::string_view kBasicDelim = "\"\"\"";
  constexpr std::string_view kLiteralDelim = "'''";
  int line = 1, col = 1;
  char prev = '\n';  // the last significant character outside strings and comments
  const auto non_ascii = [](char c) { return static_cast<unsigned char>(c) >= 0x80; };
  std::size_t i = 0;
  auto advance = [&](std::size_t n) {
    for (std::size_t k = 0; k < n && i < text.size(); ++k, ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
        ++col;  // characters, not UTF-8 continuation bytes
      }
    }
  };
  const auto at = [&](std::string_view s) { return text.substr(i, s.size()) == s; };
  while (i < text.size()) {
    const char c = text[i];
    const Loc here{line, col};
    switch (in) {
      case In::kCode:
        if (non_ascii(c)) {
          return Unsafe{here, "a non-ASCII character outside a string or a comment (keys with such characters "
                              "must be quoted)"};
        }
        if (c == '#') {
          in = In::kComment;
        } else if ((c == '"' || c == '\'') && std::string_view("=[{,.\n").find(prev) != std::string_view::npos) {
          if (at(kBasicDelim) || at(kLiteralDelim)) {
            in = c == '"' ? In::kMultiBasic : In::kMultiLiteral;
            advance(3);
            continue;
          }
          in = c == '"' ? In::kBasic : In::kLiteral;
        } else if (c == '\n') {
          prev = '\n';
        } else if (c != ' ' && c != '\t' && c != '\r') {
          prev = c;
        }
        advance(1);
        break;
      case In::kComment:
        if (c == '\n') {
          in = In::kCode;
          prev = '\n';
        }
        advance(1);
        break;
      case In::kBasic:
      case In::kLiteral:
        if (in == In::kBasic && c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
          advance(2);
          continue;
        }
        if (c == (in == In::kBasic ? '"' : '\'') || c == '\n') {
          prev = c == '\n' ? '\n' : c;
          in = In::kCode;
        }
        advance(1);
        break;
      case In::kMultiBasic:
        if (c == '\\') {
          // A line-ending backslash: toml++ skips the whitespace after it asking of each
          // character whether it is whitespace, the first non-ASCII one included.
          std::size_t j = i + 1;
          while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n')) ++j;
          if (j < text.size() && non_ascii(text[j])) {
            advance(j - i);
            return Unsafe{{line, col}, "a non-ASCII character right after a backslash in a multi-line string "
                                       "(start the line with an ASCII character, or escape it as \\uXXXX)"};
          }
          advance(j > i + 1 ? j - i : 2);
          continue;
        }
        [[fallthrough]];
      case In::kMultiLiteral:
        if (at(in == In::kMultiBasic ? kBasicDelim : kLiteralDelim)) {
          prev = in == In::kMultiBasic ? '"' : '\'';
          in = In::kCode;
          advance(3);
          continue;
        }
        advance(1);
        break;
    }
  }
  return std::nullopt;
}

}  // namespace redisgo::config::detail
