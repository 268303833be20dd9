#pragma once
/// What the lease scripts' replies mean (src/lock/lua/*.lua: each script's header documents its
/// reply by these structs' field names), as pure functions of a reply:
/// one place that decides what a node said, whatever bytes it sent. Fuzzed
/// (tests/fuzz): a reply of the wrong shape is "not understood", never a crash.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lock/once.h"

namespace redisgo::lock {

/// A holder id as logs and `status` show it: ours are well under 300 bytes; a foreign value
/// stored in a key (10 MB, say) is cut at 256 bytes, with its size, so that one log line stays
/// a line. Not escaped: the id is still compared and its "\1turn:" or "\1pause:" head read
/// (the log and printable() escape it where it is shown).
std::string shown_holder(std::string holder);

/// The acquire script: {1, "<token>"} (the slot script adds "<slot key>"; either adds
/// "noinfo" after the slot key, "" for the plain script, when the restart guard could not
/// apply), {0, "<holder>", pttl}, or {2, ms}: the key was free, but the restart guard
/// keeps this server from granting it for that long.
struct AcquireReply {
  enum class Kind { kGranted, kBusy, kGuarded, kInvalid };
  Kind kind = Kind::kInvalid;
  std::uint64_t token = 0;    ///< kGranted: a positive token
  std::string holder;         ///< kBusy: who holds it ("" if unknown)
  std::int64_t pttl_ms = -1;  ///< kBusy: its remaining TTL as PTTL reports it (-1: none)
  std::string why;            ///< kInvalid: what was wrong with it
  /// Granted, whatever the token said: the key may be ours there (the undo must cover it).
  bool set_key = false;
  /// kGranted by the semaphore's script: the slot key it took ("" from the plain script).
  std::string slot_key;
  /// kGranted: the restart guard could not apply on this server (INFO refused).
  bool unguarded = false;
  /// kGuarded: how long (ms, > 0) the server must still stay up before it grants.
  std::int64_t guard_ms = 0;
  /// The fair scripts (kAcquireFair, kAcquireSlotFair) add to a busy or guarded reply:
  /// {..., position (0: not in line), ticket or "", line length}.
  bool line = false;
  std::int64_t position = 0;
  std::uint64_t ticket = 0;
  std::int64_t line_length = 0;
  /// The semaphore's script, after any of the above: slot keys it found holding another type
  /// (a hash written over one), skipped: {key, type}.
  std::vector<std::pair<std::string, std::string>> other_type_slots;
};
AcquireReply parse_acquire_reply(const redisReply* r);

/// Renew, release, undo and raise answer 1 (done, ours) or 0 (not ours): nullopt for
/// anything else.
std::optional<bool> parse_flag_reply(const redisReply* r);

/// The release script: 1 released, 2 released but its PUBLISH refused, 0 not ours. The fair
/// release answers {1 or 2, waiters outside the line that heard the release}, and when the
/// key is not ours but there, {0, its value, the fence counter} or {0, "", "", its type}.
struct ReleaseReply {
  bool released = false;
  bool published = false;
  long long unfair_listeners = 0;
  bool line_broken = false;  ///< 3: the line is not a sorted set; the key was only deleted
  /// Not released: the value the key holds instead of ours ("" = gone), as shown_holder() cuts
  /// it, and the fence counter then (shown, "" = none).
  std::string holder;
  std::string fence;
  std::string other_type;  ///< not released: the key holds this type, not a lease ("" = a string or gone)
};
std::optional<ReleaseReply> parse_release_reply(const redisReply* r);

/// The inspect script: {exists 0/1, holder or "", pttl, fence or "", uptime in s or -1,
/// "" or the fence counter's type}. (A reply without the uptime or the type, from a
/// script of an older version, is read as -1 and "".)
struct InspectReply {
  bool held = false;
  std::string holder;
  std::int64_t pttl_ms = -2;
  std::uint64_t token = 0;  ///< 0: no counter, or one that is unreadable (bad_fence)
  /// Non-empty: the fence counter holds what the acquire scripts refuse (parse_fence), so
  /// there is no token to show and no acquisition succeeds on this node; what it holds:
  /// "\"abc\"" (cut at 64 bytes) or "a hash".
  std::string bad_fence;
  std::int64_t uptime_s = -1;
};
std::optional<InspectReply> parse_inspect_reply(const redisReply* r);

/// The claim script (lock/once_scripts.h kClaim): {1, how, fsync 0/1, state} claimed,
/// {-1} the lease is not ours, {0, holder, token, start, status} taken, {2, state} held back
/// by the restart guard (the node does not count as unclaimed). kInvalid for anything else.
/// The read-claims script gives kTaken or kInvalid (no claim) per key.
struct ClaimReply {
  enum class Kind { kClaimed, kNotOurs, kTaken, kGuarded, kInvalid };
  Kind kind = Kind::kInvalid;
  std::string holder, token, start_ms, status;  ///< kTaken
  Counted how = Counted::kNo;                   ///< kClaimed: how the node counted
  bool fsync = false;                           ///< kClaimed: to be fsynced (WAITAOF) before it counts
  OnceNode state;                               ///< kClaimed, kGuarded: the node before the claim
};
ClaimReply parse_claim_reply(const redisReply* r);
/// The read-claims script's reply for `keys` keys; nullopt when it is not of that shape.
std::optional<std::vector<ClaimReply>> parse_read_claims_reply(const redisReply* r, std::size_t keys);

}  // namespace redisgo::lock
