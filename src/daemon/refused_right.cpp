#include "daemon/refused_right.h"

#include <optional>

#include "redis/acl.h"

namespace redisgo::daemon {

std::vector<std::string> renewal_commands(bool once_per) {
  std::vector<std::string> commands{"GET", "PEXPIRE", "SET"};
  if (once_per) commands.insert(commands.end(), {"HGET", "EXISTS"});
  return commands;
}

RefusedRight refused_right(const lock::NodeError& refusal, const std::string& probed_command,
                           const std::string& acl_user, const std::string& key, const std::string& base) {
  using Kind = RefusedRight::Kind;
  if (refusal.fault == redis::Fault::kTls) return {Kind::kTls, "tls", "TLS verification of the Redis nodes failed"};
  const std::string user = "the ACL user '" + acl_user + "'";
  switch (redis::refusal_of(refusal.message)) {
    case redis::Refusal::kCommand: {
      std::optional<std::string> command = redis::refused_command(refusal.message);
      if (!command && !probed_command.empty()) command = probed_command;
      if (command) {
        const std::string right = redis::right_for(*command);
        return {Kind::kCommand, right, user + " lacks " + right};
      }
      return {Kind::kUnnamed, "unknown", user + " lacks a right the renewals need (`redisgo_task check` names it)"};
    }
    case redis::Refusal::kKey:
      return {Kind::kKeys, "keys", user + " may not use " + key + " or " + base + ":* (the README's ACL recipe)"};
    case redis::Refusal::kChannel:
    case redis::Refusal::kCredentials:
    case redis::Refusal::kNone: break;
  }
  return {Kind::kCredentials, "credentials", "Redis refused this host's credentials"};
}

bool refusal_needs_probe(const lock::NodeError& refusal) {
  return redis::refusal_of(refusal.message) == redis::Refusal::kCommand && !redis::refused_command(refusal.message);
}

bool rights_granted(const lock::RightsProbe& probe, int quorum) { return probe.allowed >= quorum; }

}  // namespace redisgo::daemon
