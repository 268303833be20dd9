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

std::uint64_t next_lead_us(std::uint64_t lead_us, std::uint64_t sent_wall_us,
                           const std::vector<std::uint64_t>& node_tokens) {
  const auto token = quorum_token(node_tokens);
  const auto raise = nodes_to_raise(node_tokens, token);
  const bool disagreed = std::find(raise.begin(), raise.end(), true) != raise.end();
  if (!disagreed || token <= sent_wall_us + lead_us) return lead_us;
  const auto ahead = token - sent_wall_us;
  const auto wanted = ahead + ahead / 2;
  return wanted <= kMaxLeadUs ? std::max(lead_us, wanted) : lead_us;
}

}  // namespace redisgo::lock
