#pragma once
/// Shared by the files of the config module only (not part of its interface): the
/// enum and signal name tables, TOML quoting, name suggestions, address and secret checks,
/// and the TOML pre-scanner. config.h is the module's interface.

#include <csignal>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace redisgo::config::detail {

/// A position in the TOML text (1-based).
struct Loc {
  int line = 0;
  int column = 0;
};

template <class E>
struct EnumName {
  const char* name;
  E value;
};

constexpr EnumName<Strategy> kStrategies[] = {
    {"exponential", Strategy::kExponential}, {"constant", Strategy::kConstant},
    {"simple", Strategy::kSimple},           {"zero", Strategy::kZero},
    {"stop", Strategy::kStop},               {"adaptive", Strategy::kAdaptive}};
constexpr EnumName<Jitter> kJitters[] = {{"none", Jitter::kNone},
                                         {"full", Jitter::kFull},
                                         {"equal", Jitter::kEqual},
                                         {"decorrelated", Jitter::kDecorrelated}};
constexpr EnumName<Mode> kModes[] = {{"oneshot", Mode::kOneshot}, {"supervise", Mode::kSupervise}};
constexpr EnumName<Restart> kRestarts[] = {
    {"always", Restart::kAlways}, {"on-failure", Restart::kOnFailure}, {"never", Restart::kNever}};
constexpr EnumName<LogLevel> kLevels[] = {{"trace", LogLevel::kTrace},
                                          {"debug", LogLevel::kDebug},
                                          {"info", LogLevel::kInfo},
                                          {"warn", LogLevel::kWarn},
                                          {"error", LogLevel::kError}};
constexpr EnumName<LogFormat> kFormats[] = {{"text", LogFormat::kText}, {"json", LogFormat::kJson}};

template <class E, std::size_t N>
const char* enum_name(const EnumName<E> (&names)[N], E value) {
  for (const auto& n : names) {
    if (n.value == value) return n.name;
  }
  return "?";
}

/// A TOML basic string, escaped so that render_effective() re-parses to the same text.
std::string quote(std::string_view s);
/// A duration as the rendered config writes it: quoted, in format_duration's units.
std::string dur(Millis d);
/// Shortest text that reads back as the same double, always with a '.' or exponent so
/// TOML sees a float.
std::string format_double(double v);
/// The known name closest to `name`, if it is close enough to be a likely typo.
std::optional<std::string> closest(std::string_view name, const std::vector<std::string_view>& known);

/// Checks one node address ("host:port", "[v6]:port", "unix:///path"); returns why it is
/// not valid, or nullopt.
std::optional<std::string> check_node_address(const std::string& addr);
/// The metrics listen address: a TCP "host:port" (no unix socket: Prometheus scrapes TCP).
std::optional<std::string> check_listen_address(const std::string& addr);
/// A name a shell could export: letters, digits and '_', not starting with a digit.
bool looks_like_env_name(std::string_view s);

/// Reads a password file. Returns the contents or sets `why` (the message never
/// contains the contents); `world_readable` tells whether others may read it.
/// `explain_denial`: a file this user may not open gets what to do about it (run as the
/// daemon's user, or join the file's group).
std::optional<std::string> read_secret_file(const std::string& path, std::string& why, bool& world_readable,
                                            bool explain_denial = true);

/// A systemd credential name: a file name (no '/', not "." or "..", 1 to 255 bytes).
bool credential_name_valid(std::string_view name);
/// Where the systemd credential `name` is read from: $CREDENTIALS_DIRECTORY/name in a unit
/// that has it (LoadCredential=); without the variable (an admin's shell, cron), the first
/// of /etc/credstore, /run/credstore, /usr/lib/credstore that holds it, where systemd itself
/// finds `LoadCredential=name`. nullopt and `why` when there is none.
std::optional<std::string> credential_path(const std::string& name, const EnvLookup& env, std::string& why);

/// Whether line `line` (1-based) of `text` mentions a password: its parse errors are not
/// quoted, so that a secret never reaches a message.
bool line_mentions_password(std::string_view text, int line);
/// Replaces every 'quoted' fragment of a message by '...'.
std::string unquote_fragments(const std::string& s);
/// A character toml++ cannot read safely, and why.
struct Unsafe {
  Loc at;
  const char* why;
};
/// The first such character in `text` (see toml_guard.cpp), or nullopt.
std::optional<Unsafe> toml_unsafe_character(std::string_view text);

/// The masked stand-in for a secret in rendered output.
inline constexpr const char* kMask = "********";

}  // namespace redisgo::config::detail
