#pragma once
/// `redisgo_task status`: each node's view of the key and whether a quorum agrees.

#include <ostream>

#include "config/config.h"

namespace redisgo::daemon {

/// Prints the state (text, or one JSON object with `json`) to `out`. Returns 0 when at
/// least one node could be read, kExitUnavailable (69) when none.
int run_status(const config::Config& config, bool json, std::ostream& out);

}  // namespace redisgo::daemon
