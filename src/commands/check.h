#pragma once
/// `redisgo_task check`: the preflight an operator runs before trusting a setup. Each
/// finding is one line (`ok`, `warn` or `fail`) that says what to do about it.

#include <ostream>

#include "config/config.h"

namespace redisgo::commands {

/// Prints the findings (text, or one JSON object with `json`) to `out`. Returns 0 when
/// every finding is ok, 1 when any is warn or fail, kExitUnavailable (69) when no quorum
/// of nodes could be reached.
int run_check(const config::Config& config, bool json, std::ostream& out);

}  // namespace redisgo::commands
