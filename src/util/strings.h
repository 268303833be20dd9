#pragma once
/// Small string helpers shared by modules' log and error messages.

#include <string>
#include <vector>

namespace redisgo {

/// The parts with `sep` between them ("" for none).
inline std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

/// "a hash", "an other type": a Redis type name with its article, for messages.
inline std::string with_article(const std::string& noun) {
  const bool vowel = !noun.empty() && std::string("aeiou").find(noun[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + noun;
}

}  // namespace redisgo
