#pragma once
/// The once_per scripts (redisgo_task(1), once_per; docs/DESIGN.md "Restart guard", once_per
/// claims): the claim of a slot, its end, and what `status`, `check`, `adopt` and the daemon
/// read of it. Their texts are in src/lock/lua/ (lock/scripts.h says how they are built);
/// src/lock/lua/lib/once.lua describes the claims and the witness, and lock/once.h holds the
/// rule they apply, in C++, for the messages.

#include "redis/connection.h"

namespace redisgo::lock {

using redis::Script;

extern const Script kClaim;        ///< lua/claim.lua
extern const Script kFinishClaim;  ///< lua/finish_claim.lua
extern const Script kReadClaims;   ///< lua/read_claims.lua
extern const Script kReadOnce;     ///< lua/read_once.lua
extern const Script kAdopt;        ///< lua/adopt.lua
extern const Script kDropAdopt;    ///< lua/drop_adopt.lua

}  // namespace redisgo::lock
