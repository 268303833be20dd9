#pragma once
/// Refused renewals (redisgo_task(1) "Renewals refused"), as pure functions: which commands
/// the renewals run, what a refusal says the ACL user lacks, and when a probe finds the rights
/// back. The hold that carries them out (hold.h) asks these and does what they say.

#include <string>
#include <vector>

#include "lock/lease.h"

namespace redisgo::daemon {

/// What the refused renewals lacked, for the log, STATUS= and the metric's label.
struct RefusedRight {
  enum class Kind { kCommand, kUnnamed, kKeys, kTls, kCredentials };
  Kind kind = Kind::kCredentials;
  std::string right;  ///< "+pexpire"; "unknown", "keys", "tls", "credentials" for the other kinds
  std::string text;   ///< "the ACL user 'redisgo' lacks +pexpire"
  /// Whether it is put right by Redis accepting the credentials (else by granting a right or
  /// fixing TLS): what STATUS= waits for.
  bool credentials() const { return kind == Kind::kCredentials; }
};

/// The commands the renew script runs (src/lock/lua/renew.lua), which a rights probe tries: GET
/// and PEXPIRE, SET to set a vanished key again, and with once_per the claim's HGET and EXISTS
/// (its HSET changes what it touches, so it is left to `check`).
std::vector<std::string> renewal_commands(bool once_per);

/// What `refusal` (a renewal's node error) says `acl_user` lacks. Redis 7.2 and later name the
/// refused command inside a script; 7.0 does not, and then `probed_command` (what a rights probe
/// found refused, "" for none) names it. `key` and `base` are the lease's key and its prefix.
RefusedRight refused_right(const lock::NodeError& refusal, const std::string& probed_command,
                           const std::string& acl_user, const std::string& key, const std::string& base);

/// Whether a refusal leaves the refused command unnamed, so that only a probe can name it.
bool refusal_needs_probe(const lock::NodeError& refusal);

/// The probe found every right the renewals use granted on enough nodes to renew.
bool rights_granted(const lock::RightsProbe& probe, int quorum);

}  // namespace redisgo::daemon
