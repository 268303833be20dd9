#pragma once
/// Text that came from outside (a server's reply, a value stored in Redis) made fit for one
/// line of a log or a terminal: escaped, and bounded where it is a message.

#include <cstddef>
#include <string>
#include <string_view>

namespace redisgo {

/// How much of a server's text a message shows, in bytes of the shown (escaped) text. Redis
/// says what it means in its first line; a 100 KB error reply (a proxy, a module, a key's
/// value quoted back) made log lines of 100 KB, four of them per attempt.
inline constexpr std::size_t kShownBytes = 512;

/// Length of the valid UTF-8 sequence that starts at s[i], or 0 when it is not one
/// (overlong forms, surrogates and code points above U+10FFFF are invalid).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

/// Appends `s` to `out` safe for a terminal line: \n and \r as such, other control
/// characters and bytes that are not valid UTF-8 as \xNN, C1 controls (valid UTF-8, but
/// controls all the same: 0x9b is CSI to some terminals) as \u00NN. A backslash is left
/// alone, so escaping twice changes nothing.
template <class Out>
void append_escaped_text(std::string_view s, Out& out) {
  constexpr char kHex[] = "0123456789abcdef";
  auto escaped = [&out, &kHex](std::string_view prefix, unsigned char c) {
    out.append(prefix.data(), prefix.data() + prefix.size());
    const char digits[] = {kHex[c >> 4], kHex[c & 0xF]};
    out.append(digits, digits + 2);
  };
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? 1 : utf8_sequence_length(s, i);
    if (c == '\n') {
      out.append("\\n", "\\n" + 2);
    } else if (c == '\r') {
      out.append("\\r", "\\r" + 2);
    } else if ((c < 0x20 && c != '\t') || c == 0x7F || n == 0) {
      escaped("\\x", c);
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      escaped("\\u00", static_cast<unsigned char>(s[i + 1]));
    } else {
      out.append(s.data() + i, s.data() + i + n);
    }
    i += n == 0 ? 1 : n;
  }
}

/// `text` escaped as append_escaped_text() does, whole.
std::string escaped_text(std::string_view text);

/// Text a server sent, as a message shows it: escaped, and cut so that the shown text is at
/// most `max` bytes, never inside an escape or a UTF-8 sequence, followed by
/// "... (N bytes cut)", N counting the bytes of `text` left out.
std::string shown_text(std::string_view text, std::size_t max = kShownBytes);

}  // namespace redisgo
