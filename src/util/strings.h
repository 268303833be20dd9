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

}  // namespace redisgo
