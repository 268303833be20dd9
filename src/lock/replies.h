#pragma once
/// What the lease scripts' replies mean, as pure functions of a reply: one place that decides
/// what a node said, whatever bytes it sent. Every script of src/lock/lua/ has a reply type of
/// its own name in these headers, and its header documents its reply by that type's field
/// names:
///   lock/replies.h        the lease: acquire, renew, raise, release, undo, inspect
///   lock/replies_line.h   the waiting line and the pause: read_line, pass_turn, pause,
///                         resume, read_pause, publish
///   lock/replies_admin.h  what `status`, `check` and `list` read beside the lease:
///                         probe_rights, read_refusal, check_rights, slots_beyond, list_key
///   lock/replies_once.h   once_per: claim, finish_claim, read_claims, read_once, adopt,
///                         drop_adopt
/// Where two scripts answer in one shape, one type serves both under two names (a `using`),
/// with one parser. Fuzzed (tests/fuzz): a reply of the wrong shape is "not understood"
/// (nullopt, or Kind::kInvalid), never a crash and never a guess.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace redisgo::lock {

/// A holder id as logs and `status` show it: ours are well under 300 bytes; a foreign value
/// stored in a key (10 MB, say) is cut at 256 bytes, with its size, so that one log line stays
/// a line. Not escaped: the id is still compared and its "\1turn:" or "\1pause:" head read
/// (the log and printable() escape it where it is shown).
std::string shown_holder(std::string holder);

/// The compare-and-act scripts that answer 1 (done: it was ours) or 0 (not ours, nothing
/// changed): undo, and once_per's finish_claim and drop_adopt (lock/replies_once.h).
struct FlagReply {
  bool ours = false;
};
/// An integer 1 or 0; nullopt for anything else.
std::optional<FlagReply> parse_flag_reply(const redisReply* r);
using UndoReply = FlagReply;  ///< lua/undo.lua: `ours`, the key was ours and is deleted

/// The acquire scripts: {1, "<token>"} (the slot script adds "<slot key>"; either adds
/// "noinfo" after the slot key, "" for the plain script, when the restart guard could not
/// apply), {0, "<holder>", pttl}, or {2, ms}: the key was free, but the restart guard keeps
/// this server from granting it for that long. Both scripts add the line to a busy or a
/// guarded reply; the slot script may add the slots of another type it skipped.
struct AcquireReply {
  enum class Kind { kGranted, kBusy, kGuarded, kInvalid };
  Kind kind = Kind::kInvalid;
  std::uint64_t token = 0;    ///< kGranted: a positive token
  std::string holder;         ///< kBusy: who holds it ("" if unknown)
  std::string lease;          ///< kBusy: the value the key holds (a lease id), uncut
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
/// Either acquire script's reply (the slot script's is the lease script's, with a slot key).
AcquireReply parse_acquire_reply(const redisReply* r);
using AcquireSlotReply = AcquireReply;  ///< lua/acquire_slot_fair.lua

/// The renew script: an integer, its `result`.
struct RenewReply {
  enum class Result {
    kNotOurs = 0,    ///< another holder's, another's turn, gone without a token, or lost
    kRenewed = 1,    ///< ours, extended
    kRepaired = 2,   ///< gone from this node (or our own turn there), set again for us
    kOtherType = 3,  ///< the key holds another type: not ours, nothing changed
  };
  Result result = Result::kNotOurs;
};
std::optional<RenewReply> parse_renew_reply(const redisReply* r);

/// The raise script (Redlock's fence, lock/fencing.h): an integer, its `result`.
struct RaiseFenceReply {
  enum class Result {
    kNotOurs = 0,  ///< the key is not ours: nothing changed
    kRaised = 1,   ///< raised to our token, or above it already
    kShared = 2,   ///< a semaphore's slot, the counter at our token already: given up
  };
  Result result = Result::kNotOurs;
};
std::optional<RaiseFenceReply> parse_raise_fence_reply(const redisReply* r);

/// The release scripts. The plain one answers 1 released, 2 released but its PUBLISH
/// refused, 0 not ours. The fair one answers {1, 2 or 3, waiters outside the line that heard
/// the release}, 0 when the key is gone, and when the key is not ours but there, {0, its
/// value, the fence counter} or {0, "", "", its type}. One parser reads both (a release may
/// fall back from the fair script to the plain one, and its calls are counted together).
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
using ReleaseFairReply = ReleaseReply;  ///< lua/release_fair.lua

/// The inspect script: {held 0/1, holder or "", pttl, fence or "", uptime in s or -1,
/// "" or the fence counter's type}. (A reply without the uptime or the type, from a
/// script of an older version, is read as -1 and "".)
struct InspectReply {
  bool held = false;
  std::string holder;
  std::int64_t pttl_ms = -2;
  std::uint64_t token = 0;  ///< the fence counter; 0: no counter, or one that is unreadable (bad_fence)
  /// Non-empty: the fence counter holds what the acquire scripts refuse (parse_fence), so
  /// there is no token to show and no acquisition succeeds on this node; what it holds:
  /// "\"abc\"" (cut at 64 bytes) or "a hash".
  std::string bad_fence;
  std::int64_t uptime_s = -1;
};
std::optional<InspectReply> parse_inspect_reply(const redisReply* r);

}  // namespace redisgo::lock
