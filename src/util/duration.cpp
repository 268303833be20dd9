#include "util/duration.h"

#include <time.h>

#include <cctype>
#include <ctime>
#include <cstdint>
#include <limits>

namespace redisgo {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<std::chrono::milliseconds> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (text.empty()) return fail("empty duration");
  // A bare "0" is zero in any unit: it needs none.
  if (text.find_first_not_of('0') == std::string_view::npos) return std::chrono::milliseconds(0);
  constexpr std::int64_t kMaxMs = std::numeric_limits<std::int64_t>::max() / 4;
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      return fail(text[i] == '-' ? "negative duration" : "expected a number at '" + std::string(text.substr(i)) + "'");
    }
    std::int64_t number = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      // Checked before multiplying: number * 10 itself could overflow int64.
      if (number > (kMaxMs - (text[i] - '0')) / 10) return fail("duration too large");
      number = number * 10 + (text[i] - '0');
      ++i;
    }
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    std::int64_t scale;
    if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1000;
    else if (unit == "m") scale = 60'000;
    else if (unit == "h") scale = 3'600'000;
    else if (unit.empty()) return fail("missing unit (use ms, s, m or h)");
    else return fail("unknown unit '" + std::string(unit) + "' (use ms, s, m or h)");
    if (number > kMaxMs / scale) return fail("duration too large");
    total += number * scale;
    if (total > kMaxMs) return fail("duration too large");
  }
  return std::chrono::milliseconds(total);
}

std::string format_duration(std::chrono::milliseconds d) {
  auto ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::string utc_text(std::int64_t seconds) {
  const time_t t = static_cast<time_t>(seconds);
  struct tm tm {};
  char buf[32] = "?";
  if (::gmtime_r(&t, &tm)) std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace redisgo
