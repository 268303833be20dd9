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

namespace {

constexpr std::string_view kBasicDelim = "\"\"\"";
constexpr std::string_view kLiteralDelim = "'''";

bool non_ascii(char c) { return static_cast<unsigned char>(c) >= 0x80; }

/// A walk over the text, a character (or a delimiter) a step, that knows the line and
/// column it is at and whether it is in code, a comment or a string.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  bool done() const { return i_ >= text_.size(); }

  /// Moves past what is at the current position; the unsafe character there, if any.
  std::optional<Unsafe> step() {
    const char c = text_[i_];
    switch (in_) {
      case In::kCode: return code(c);
      case In::kComment: comment(c); return std::nullopt;
      case In::kBasic:
      case In::kLiteral: one_line_string(c); return std::nullopt;
      case In::kMultiBasic:
        if (c == '\\') return line_ending_backslash();
        [[fallthrough]];
      case In::kMultiLiteral: multi_line_string(); return std::nullopt;
    }
    return std::nullopt;
  }

 private:
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };

  void advance(std::size_t n) {
    for (std::size_t k = 0; k < n && i_ < text_.size(); ++k, ++i_) {
      if (text_[i_] == '\n') {
        ++line_;
        col_ = 1;
      } else if ((static_cast<unsigned char>(text_[i_]) & 0xC0) != 0x80) {
        ++col_;  // characters, not UTF-8 continuation bytes
      }
    }
  }
  bool at(std::string_view s) const { return text_.substr(i_, s.size()) == s; }

  std::optional<Unsafe> code(char c) {
    if (non_ascii(c)) {
      return Unsafe{{line_, col_}, "a non-ASCII character outside a string or a comment (keys with such characters "
                                   "must be quoted)"};
    }
    if (c == '#') {
      in_ = In::kComment;
    } else if ((c == '"' || c == '\'') && std::string_view("=[{,.\n").find(prev_) != std::string_view::npos) {
      if (at(kBasicDelim) || at(kLiteralDelim)) {
        in_ = c == '"' ? In::kMultiBasic : In::kMultiLiteral;
        advance(3);
        return std::nullopt;
      }
      in_ = c == '"' ? In::kBasic : In::kLiteral;
    } else if (c == '\n') {
      prev_ = '\n';
    } else if (c != ' ' && c != '\t' && c != '\r') {
      prev_ = c;
    }
    advance(1);
    return std::nullopt;
  }

  void comment(char c) {
    if (c == '\n') {
      in_ = In::kCode;
      prev_ = '\n';
    }
    advance(1);
  }

  void one_line_string(char c) {
    if (in_ == In::kBasic && c == '\\' && i_ + 1 < text_.size() && text_[i_ + 1] != '\n') {
      advance(2);
      return;
    }
    if (c == (in_ == In::kBasic ? '"' : '\'') || c == '\n') {
      prev_ = c == '\n' ? '\n' : c;
      in_ = In::kCode;
    }
    advance(1);
  }

  /// A line-ending backslash: toml++ skips the whitespace after it asking of each
  /// character whether it is whitespace, the first non-ASCII one included.
  std::optional<Unsafe> line_ending_backslash() {
    std::size_t j = i_ + 1;
    while (j < text_.size() && (text_[j] == ' ' || text_[j] == '\t' || text_[j] == '\r' || text_[j] == '\n')) ++j;
    if (j < text_.size() && non_ascii(text_[j])) {
      advance(j - i_);
      return Unsafe{{line_, col_}, "a non-ASCII character right after a backslash in a multi-line string "
                                   "(start the line with an ASCII character, or escape it as \\uXXXX)"};
    }
    advance(j > i_ + 1 ? j - i_ : 2);
    return std::nullopt;
  }

  void multi_line_string() {
    if (at(in_ == In::kMultiBasic ? kBasicDelim : kLiteralDelim)) {
      prev_ = in_ == In::kMultiBasic ? '"' : '\'';
      in_ = In::kCode;
      advance(3);
      return;
    }
    advance(1);
  }

  std::string_view text_;
  std::size_t i_ = 0;
  int line_ = 1;
  int col_ = 1;
  In in_ = In::kCode;
  char prev_ = '\n';  ///< the last significant character outside strings and comments
};

}  // namespace

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
  Scanner scan(text);
  while (!scan.done()) {
    if (auto bad = scan.step()) return bad;
  }
  return std::nullopt;
}

}  // namespace redisgo::config::detail
