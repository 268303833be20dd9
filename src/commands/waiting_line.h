#pragma once
/// Internal to the commands module: `status`'s view of the waiting line (docs/DESIGN.md
/// "The waiting line"): its length, and each waiter's place and since when.

#include <ostream>

#include "config/config.h"
#include "lock/lease.h"

namespace redisgo::commands {

/// How many waiters `status` lists (the length is always given).
inline constexpr int kLineShown = 100;

/// Writes the line as `status` shows it: text lines, or with `json` a ",\"line\":{...}"
/// member. Nothing in text when nobody waits and the key is not fair.
void write_line(lock::LeaseAdmin& backend, const config::Config& config, bool json, std::ostream& out);

}  // namespace redisgo::commands
