#include "redis/acl.h"

#include <initializer_list>

namespace redisgo::redis {
namespace {

bool has(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

bool has_any(std::string_view text, std::initializer_list<std::string_view> parts) {
  for (auto p : parts) {
    if (has(text, p)) return true;
  }
  return false;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

Refusal refusal_of(std::string_view error) {
  // A client that has not authenticated may send at most 10 arguments; past that Redis
  // answers "Protocol error: unauthenticated ..." and closes: our credentials again.
  if (has_any(error, {"WRONGPASS", "NOAUTH", "Protocol error: unauthenticated"})) return Refusal::kCredentials;
  if (has_any(error, {"can't run this command", "permissions to run the"})) return Refusal::kCommand;
  if (has_any(error, {"can't access at least one of the keys", "permissions to access one of the keys",
                      "permissions to access a key"})) {
    return Refusal::kKey;
  }
  if (has_any(error, {"can't publish to the channel", "permissions to access one of the channels",
                      "permissions to access a channel"})) {
    return Refusal::kChannel;
  }
  // Any other NOPERM, or a script's ACL failure in words not listed above: still a refusal
  // of this user's rights, whose object we cannot tell.
  if (has_any(error, {"NOPERM", "ACL failure in script", "user executing the script can't"})) return Refusal::kCommand;
  return Refusal::kNone;
}

std::optional<std::string> refused_command(std::string_view error) {
  if (refusal_of(error) != Refusal::kCommand) return std::nullopt;
  constexpr std::string_view kBefore = "to run the '";
  const auto at = error.find(kBefore);
  if (at == std::string_view::npos) return std::nullopt;
  const auto from = at + kBefore.size();
  const auto to = error.find('\'', from);
  if (to == std::string_view::npos || to == from || to - from > 64) return std::nullopt;
  std::string command;
  for (char c : error.substr(from, to - from)) {
    // A command name is letters, digits and '|' (a subcommand), '-' and '_': anything else is
    // not a name Redis wrote.
    const char l = lower(c);
    if (!((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '|' || l == '-' || l == '_')) return std::nullopt;
    command += l;
  }
  return command;
}

std::string right_for(std::string_view command) {
  std::string right = "+";
  for (char c : command) right += lower(c);
  return right;
}

}  // namespace redisgo::redis
