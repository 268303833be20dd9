#pragma once
/// `redisgo_task adopt` (redisgo_task(1), once_per): the operator declares the current
/// once_per slot unclaimed. Servers that never saw the key look exactly like servers that
/// restarted empty, so a first deployment is an act, not a guess: the record (the slot, the
/// server's TIME, who) lets a node that has been up since it count as unclaimed for that
/// slot, and raises the witness (lock/once.h).

#include <ostream>

#include "config/config.h"

namespace redisgo::commands {

/// Adopts the slot nearest to now. 0 once a quorum of nodes holds the record; 75 when a node
/// has a claim of the slot (it was run: who ran it is said); 69 when fewer than a quorum
/// took it (dropped again where it was written), 77 when that is a refusal; 78 when the
/// config has no once_per.
int run_adopt(const config::Config& config, std::ostream& out, std::ostream& err);

}  // namespace redisgo::commands
