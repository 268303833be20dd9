#include "lock/fencing.h"

#include <algorithm>
#include <charconv>

namespace redisgo::lock {

std::optional<std::uint64_t> parse_token(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  // from_chars rejects a sign and stops at '.'/'e'; demand that it consumed everything.
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> parse_fence(std::string_view text) {
  if (text.size() > 16) return std::nullopt;
  auto value = parse_token(text);
  if (!value || *value >= kFenceLimit) return std::nullopt;
  return value;
}

std::int64_t parse_count(std::string_view text) {
  const auto value = parse_token(text);
  return value && *value < kFenceLimit ? static_cast<std::int64_t>(*value) : 0;
}

std::uint64_t quorum_token(const std::vector<std::uint64_t>& node_tokens) {
  std::uint64_t best = 0;
  for (auto t : node_tokens) best = std::max(best, t);
  return best;
}

std::vector<bool> nodes_to_raise(const std::vector<std::uint64_t>& node_tokens, std::uint64_t token) {
  std::vector<bool> raise(node_tokens.size(), false);
  for (std::size_t i = 0; i < node_tokens.size(); ++i) {
    raise[i] = node_tokens[i] != 0 && node_tokens[i] < token;
  }
  return raise;
}

}  // namespace redisgo::lock
