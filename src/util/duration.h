#pragma once
/// Duration strings of the config file: "250ms", "5s", "1m", "1h", compounds such as
/// "1m30s", or an integer meaning seconds.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redisgo {

/// Parses a duration string. On failure returns nullopt and, when `why` is given, puts
/// a short reason there ("missing unit", "unknown unit 'sec'", ...).
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text, std::string* why = nullptr);

/// Formats as the shortest exact form: "1h", "90s", "1500ms", "0ms".
std::string format_duration(std::chrono::milliseconds d);

/// A wall-clock instant, seconds since the epoch, as "2026-11-25T10:15:00Z" ("?" if it
/// cannot be represented).
std::string utc_text(std::int64_t seconds);

}  // namespace redisgo
