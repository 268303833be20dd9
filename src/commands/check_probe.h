#pragma once
/// Module-internal (commands): what `check` asks each server, and what it answered
/// (check.cpp turns the answers into findings). Nothing outside commands includes it.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands/check_findings.h"
#include "config/config.h"
#include "lock/lease.h"
#include "redis/connection.h"

namespace redisgo::commands::check {

/// One server under examination: its connection and what it answered.
struct Probe {
  Probe(std::string n, redis::ConnectionOptions options) : name(std::move(n)), conn(std::move(options)) {}
  std::string name;
  redis::AsyncConnection conn;
  redis::CallPtr info, role, policy, maxmemory, save, appendfsync, inspect, line, beyond, rights, pause, subscribe;
  redis::CallPtr subscribe_control;  ///< SUBSCRIBE to the control channel, as a supervise leader does
  /// once_per: the witness and the claims of the slot nearest to now and the next (kReadOnce),
  /// and whether this user may run what makes a claim durable (WAITAOF, WAIT).
  redis::CallPtr once, waitaof, wait;
  /// The pause read again: by EVALSHA, as the daemon runs every script after its first use.
  redis::CallPtr by_sha;
  redis::SteadyClock::time_point sent{};
  std::optional<redis::SteadyClock::duration> first_reply;  ///< from sending to the first answer (connect included)
  std::string peer;                                  ///< TLS certificate line, while it was open
  std::vector<ClockSample> samples;
  bool usable = false;                               ///< answered, credentials accepted
};

/// A call's error without the "redis <node>: " prefix (the finding names the node).
std::string why(const Probe& p, const redis::CallPtr& c);

/// CONFIG GET <name> -> its value; nullopt when refused (ACL, renamed CONFIG) or unknown.
std::optional<std::string> config_value(const redis::CallPtr& c);

/// The channels that tell whether this user may PUBLISH and SUBSCRIBE where the daemon does,
/// without waking anyone: with the line, a wake channel nobody listens on (the wake channels
/// are per holder, so the ACL must grant them by pattern anyway); without it, the control
/// channel (a leader acts only on a message naming itself) and the release channel (a
/// subscription disturbs nobody).
std::string publish_channel(bool fair, const lock::LeaseKeys& keys);
std::string subscribe_channel(bool fair, const lock::LeaseKeys& keys);

/// Sends every question to every probe and drives them all in one poll loop (each call
/// bounded by its connection's connect_timeout + io_timeout): the server's facts and the
/// lease scripts, then the pause again by EVALSHA, then a few TIME round trips, and last the
/// SUBSCRIBEs (a subscribed connection takes no other command).
void ask(std::vector<std::unique_ptr<Probe>>& probes, const lock::LeaseKeys& keys, const config::RedisConfig& r,
         int limit, std::optional<std::chrono::milliseconds> once_per);

}  // namespace redisgo::commands::check
