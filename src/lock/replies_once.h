#pragma once
/// What once_per's scripts answer (lock/once_scripts.h; lock/replies.h says how these parsers
/// read a reply): the claim of a slot and its end, the reads of the claims and of the node's
/// side of the rule, and `adopt`.

#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lock/once.h"
#include "lock/replies.h"

namespace redisgo::lock {

/// The node-state array of lock/lua/lib/once.lua's once_state ({uptime, time, aof, version,
/// witness, durable, adopted, adopted_ms, adopted_by, adopts, replicas}) into `n`;
/// false when it is not of that shape.
bool parse_once_state(const redisReply* r, OnceNode& n);

/// The claim script (lock/once_scripts.h kClaim): {1, how, fsync 0/1, state} claimed,
/// {-1} the lease is not ours, {0, holder, token, start, status} taken, {2, state} held back
/// by the restart guard (the node does not count as unclaimed). kInvalid for anything else.
struct ClaimReply {
  enum class Kind { kClaimed, kNotOurs, kTaken, kGuarded, kInvalid };
  Kind kind = Kind::kInvalid;
  std::string holder, token, start_ms, status;  ///< kTaken, each as shown (cut)
  Counted how = Counted::kNo;                   ///< kClaimed: how the node counted
  bool fsync = false;                           ///< kClaimed: to be fsynced (WAITAOF) before it counts
  OnceNode state;                               ///< kClaimed, kGuarded: the node before the claim
};
ClaimReply parse_claim_reply(const redisReply* r);

using FinishClaimReply = FlagReply;  ///< lua/finish_claim.lua: `ours`, the claim was ours: recorded or dropped

/// The read-claims script: per claim key, {holder, token, start, status}, each "" when absent.
struct ReadClaimsReply {
  /// One per key asked, in their order, each field as shown (cut); holder "" = no claim.
  std::vector<ClaimRecord> claims;
};
/// nullopt unless it is of that shape for `keys` keys.
std::optional<ReadClaimsReply> parse_read_claims_reply(const redisReply* r, std::size_t keys);

/// The read-once script: the node's state, then per claim key {holder, token, start, status}.
struct ReadOnceReply {
  OnceNode state;  ///< the rule's fields only (uptime_s ... replicas): no node, no claim
  /// One per claim key asked, in their order, as stored (not cut); nullopt: no claim (holder "").
  std::vector<std::optional<ClaimRecord>> claims;
};
/// nullopt unless it is of that shape for `claim_keys` claim keys.
std::optional<ReadOnceReply> parse_read_once_reply(const redisReply* r, std::size_t claim_keys);

/// The adopt script: {0, holder, token, start, status} a claim is there (nothing written),
/// or {1, adopted_ms}.
struct AdoptReply {
  enum class Kind { kTaken, kAdopted };
  Kind kind = Kind::kTaken;
  std::string holder, token, start_ms, status;  ///< kTaken: the claim there, each as shown (cut)
  std::int64_t adopted_ms = 0;                  ///< kAdopted: the server's TIME in ms (> 0) of the record
};
std::optional<AdoptReply> parse_adopt_reply(const redisReply* r);

using DropAdoptReply = FlagReply;  ///< lua/drop_adopt.lua: `ours`, the record was this adopt's: dropped

}  // namespace redisgo::lock
