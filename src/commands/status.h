#pragma once
/// `redisgo_task status`: each node's view of the key and whether a quorum agrees.

#include <chrono>
#include <optional>
#include <ostream>

#include "config/config.h"

namespace redisgo::commands {

/// Prints the state (text, or one JSON object with `json`) to `out`: "held" (a holder has
/// a quorum), "free" (no holder could have one) or "unknown". Returns 0 when a quorum of
/// nodes could be read, kExitUnavailable (69) when not.
int run_status(const config::Config& config, bool json, std::ostream& out);

/// `redisgo_task handover`: asks the current holder to step down (a control message
/// naming its holder id, on the key's control channel, repeated every second) and waits
/// until another holder has the lease. 0 once one has (within `timeout`, default
/// expire + 5 s), 75 if nobody else took it or nothing was held, 69 (77) when no quorum
/// of nodes could be read (credentials refused). A semaphore's `slot` (0..limit-1) names
/// whose holder is asked. With no standby waiting (nobody in the key's line or listening
/// for its release on a quorum of nodes) nothing is asked and it exits 75 at once, unless
/// `force`.
int run_handover(const config::Config& config, std::optional<std::chrono::milliseconds> timeout, int slot, bool force,
                 std::ostream& out, std::ostream& err);

}  // namespace redisgo::commands
