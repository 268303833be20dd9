#include "lock/wake.h"

#include <cstdint>
#include <optional>
#include <string_view>

#include "lock/lease.h"

namespace redisgo::lock {
namespace {

/// "next <window ms>": at most nine digits, a window above 0.
std::optional<std::chrono::milliseconds> next_window(const std::string& payload) {
  constexpr std::string_view kNext = "next ";
  if (payload.size() <= kNext.size() || payload.size() > kNext.size() + 9 ||
      payload.compare(0, kNext.size(), kNext) != 0) {
    return std::nullopt;
  }
  std::int64_t ms = 0;
  for (std::size_t i = kNext.size(); i < payload.size(); ++i) {
    if (payload[i] < '0' || payload[i] > '9') return std::nullopt;
    ms = ms * 10 + (payload[i] - '0');
  }
  if (ms <= 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

}  // namespace

Wake read_wake(const std::string& payload, bool fair, const std::string& holder) {
  if (!fair) {
    // Our own release (or any message naming us) says nothing about another holder.
    return payload != holder ? Wake{Wake::Kind::kReleased, {}} : Wake{};
  }
  if (payload == "turn") return {Wake::Kind::kTurn, {}};
  if (auto window = next_window(payload)) return {Wake::Kind::kNext, *window};
  return {};
}

Control read_control(const std::string& payload, const std::string& holder) {
  // An older version's `handover` and `pause --stop` name the leader by what its lease key
  // holds, the lease id (during a rolling upgrade).
  if (holder_of(payload) == holder || payload == "any") return Control::kHandover;
  const std::string_view prefix = kPauseStopPrefix;
  if (payload.compare(0, prefix.size(), prefix) == 0 && holder_of(payload.substr(prefix.size())) == holder) {
    return Control::kPauseStop;
  }
  return Control::kNone;
}

}  // namespace redisgo::lock
