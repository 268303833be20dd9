#include "util/text.h"

#include <algorithm>

namespace redisgo {

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return k < s.size() && byte(k) >= lo && byte(k) <= hi;
  };
  unsigned b = byte(i);
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b == 0xE0) return cont(i + 1, 0xA0) && cont(i + 2) ? 3 : 0;
  if (b == 0xED) return cont(i + 1, 0x80, 0x9F) && cont(i + 2) ? 3 : 0;
  if (b >= 0xE1 && b <= 0xEF) return cont(i + 1) && cont(i + 2) ? 3 : 0;
  if (b == 0xF0) return cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (b == 0xF4) return cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (b >= 0xF1 && b <= 0xF3) return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  return 0;
}

std::string escaped_text(std::string_view text) {
  std::string out;
  append_escaped_text(text, out);
  return out;
}

std::string shown_text(std::string_view text, std::size_t max) {
  std::string out;
  out.reserve(std::min(text.size(), max) + 32);
  // One character (or escaped byte) at a time, so that a cut never splits one.
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t n = c < 0x80 ? 1 : utf8_sequence_length(text, i);
    if (n == 0) n = 1;
    const std::size_t before = out.size();
    append_escaped_text(text.substr(i, n), out);
    if (out.size() > max) {
      out.resize(before);
      break;
    }
    i += n;
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size() - i) + " bytes cut)";
  return out;
}

}  // namespace redisgo
