#pragma once
/// `redisgo_task status`: each node's view of the key and whether a quorum agrees.

#include <ostream>

#include "config/config.h"

namespace redisgo::daemon {

/// Prints the state (text, or one JSON object with `json`) to `out`: "held" (a holder has
/// a quorum), "free" (no holder could have one) or "unknown". Returns 0 when a quorum of
/// nodes could be read, kExitUnavailable (69) when not.
int run_status(const config::Config& config, bool json, std::ostream& out);

}  // namespace redisgo::daemon
