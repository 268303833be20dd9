#pragma once
/// What a Redis error reply refuses, read from its text, and the ACL rule that would grant it
/// (redisgo_task(1) "Renewals refused"; `check`'s "rights" finding names rights the same way).
///
/// Redis words a refusal differently by version and by where it happens:
///   outside a script, 7.0   NOPERM this user has no permissions to run the 'pexpire' command
///   outside a script, 7.2+  NOPERM User u has no permissions to run the 'pexpire' command
///   inside a script, 7.0    ERR The user executing the script can't run this command or subcommand
///   inside a script, 7.2+   ERR ACL failure in script: User u has no permissions to run the 'pexpire' command
/// and alike for keys ("can't access at least one of the keys", "No permissions to access a
/// key") and channels. Only 7.0 inside a script leaves the command unnamed: a caller that must
/// name it there asks the server (lock::LeaseBackend::probe_rights).

#include <optional>
#include <string>
#include <string_view>

namespace redisgo::redis {

enum class Refusal {
  kNone,         ///< not a refusal
  kCredentials,  ///< WRONGPASS, NOAUTH, a command sent unauthenticated: the password or user
  kCommand,      ///< the ACL user may not run a command
  kKey,          ///< the ACL user may not access a key
  kChannel,      ///< the ACL user may not use a channel
};
/// What `error` (a reply, or a message that quotes one) refuses.
Refusal refusal_of(std::string_view error);

/// The command a refusal names, in lower case ("pexpire", "config|get"); nullopt when the
/// text names none (Redis 7.0 inside a script, or not a command refusal).
std::optional<std::string> refused_command(std::string_view error);

/// The ACL rule that grants `command`: "PEXPIRE" -> "+pexpire", "config|get" -> "+config|get".
std::string right_for(std::string_view command);

}  // namespace redisgo::redis
