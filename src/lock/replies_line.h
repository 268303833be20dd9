#pragma once
/// What the scripts of the waiting line and the pause answer (docs/DESIGN.md "The waiting
/// line"; lock/replies.h says how these parsers read a reply): reading the line, handing on a
/// turn, pausing, resuming, reading the pause, and control messages.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redisgo::lock {

/// The read-line script: {length, {holder, score, ...}, outside, {listeners, ...}}.
struct ReadLineReply {
  struct Entry {
    std::string holder;           ///< as shown_text() shows it (a member written by hand can be 100 KB)
    /// Its score: the ticket, the server's TIME in µs when it joined (lock/lua/lib/line.lua); 0
    /// for a score no ticket can be (written by hand: negative, 2^53 or more, inf).
    std::uint64_t ticket = 0;
    /// Subscribers of its wake channel: 0 = gone (killed without leaving), -1 = unknown.
    std::int64_t listeners = -1;
  };
  std::int64_t length = 0;      ///< the line's length
  std::vector<Entry> entries;   ///< from the head, at most the number asked for
  /// Subscribers of the release channel: waiters outside the line (fair = false, or an older
  /// version); -1 unknown.
  std::int64_t outside = -1;
};
std::optional<ReadLineReply> parse_read_line_reply(const redisReply* r);

/// The pass-turn script: an integer, its `result`.
struct PassTurnReply {
  enum class Result {
    kNotOurs = 0,    ///< the key no longer holds our turn: nothing changed
    kHandedOn = 1,   ///< handed on to the next waiter
    kPublished = 2,  ///< deleted, and the release channel published (nobody listens in line)
  };
  Result result = Result::kNotOurs;
};
std::optional<PassTurnReply> parse_pass_turn_reply(const redisReply* r);

/// The pause script: {1, woken 0/1}.
struct PauseReply {
  bool woken = false;  ///< false: waiters were to be woken, but the wake was refused (ACL)
};
std::optional<PauseReply> parse_pause_reply(const redisReply* r);

/// The resume script: {was_paused 0/1, woken 0/1}.
struct ResumeReply {
  bool was_paused = false;  ///< there was a pause (and it is gone)
  bool woken = false;       ///< false: the wake was refused (ACL)
};
std::optional<ResumeReply> parse_resume_reply(const redisReply* r);

/// The read-pause script: {pttl, by, reason, since, until}; with no pause, pttl -2 and every
/// field "".
struct ReadPauseReply {
  std::int64_t pttl_ms = -2;  ///< as PTTL: -2 no pause, -1 no expiry
  std::string by;             ///< who paused, as shown_text() shows it
  std::string reason;         ///< why, as shown_text() shows it
  std::int64_t since_ms = 0;  ///< ms since the epoch (0: none, or not a count: lock/fencing.h parse_count)
  std::int64_t until_ms = 0;  ///< likewise
};
std::optional<ReadPauseReply> parse_read_pause_reply(const redisReply* r);

/// The publish script: an integer, PUBLISH's own reply.
struct PublishReply {
  std::int64_t receivers = 0;  ///< subscribers that received the message
};
std::optional<PublishReply> parse_publish_reply(const redisReply* r);

}  // namespace redisgo::lock
