#pragma once
/// This host's holder ids (docs/DESIGN.md, invariant 9): what `task` stores in the lock key,
/// and what `status` and `pause` recognise as this host's.

#include <string>

namespace redisgo::wiring {

/// The head of this host's holder ids: `prefix` ([redis] value), or the hostname when it is empty.
std::string holder_head(const std::string& prefix);

/// "<prefix>:<pid>:<32 hex digits from getrandom>", prefix = `value` or else the
/// hostname: unique per process even when every host shares one config
/// (docs/DESIGN.md, invariant 9), so two daemons never renew or release each other's lease.
std::string default_holder_id(const std::string& prefix = "");

}  // namespace redisgo::wiring
