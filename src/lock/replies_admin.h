#pragma once
/// What the scripts that `status`, `check` and `list` run beside the lease answer (lock/replies.h
/// says how these parsers read a reply): the probe of the rights renewals need and the note it
/// leaves, `check`'s trial of the scripts' commands, slots beyond the limit, and `list`'s look
/// at one key.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redisgo::lock {

/// The rights probe ({command, error}): the first command the ACL user may not run, or "".
struct ProbeRightsReply {
  std::string command;  ///< "" when every command ran
  std::string error;    ///< its error, or ""
};
std::optional<ProbeRightsReply> parse_probe_rights_reply(const redisReply* r);
/// `check`'s trial of the scripts' commands answers in the same shape; its `command` is "the
/// check script" when the script itself failed.
using CheckRightsReply = ProbeRightsReply;
inline std::optional<CheckRightsReply> parse_check_rights_reply(const redisReply* r) {
  return parse_probe_rights_reply(r);
}

/// The read-refusal script: {note or "", its pttl (-2: none), "" or the error reading it}.
struct ReadRefusalReply {
  std::string note;           ///< the note (lock/lease.h RefusalNote, parse_refusal_note), or ""
  std::int64_t pttl_ms = -2;  ///< its PTTL (-2: none)
  std::string error;          ///< "", or why it may not be read
};
std::optional<ReadRefusalReply> parse_read_refusal_reply(const redisReply* r);

/// The slots-beyond script: an integer.
struct SlotsBeyondReply {
  std::int64_t held = 0;  ///< slot keys beyond the limit that exist; -1: the user may not ask
};
std::optional<SlotsBeyondReply> parse_slots_beyond_reply(const redisReply* r);

/// The list-key script: one key's state in one snapshot, {holder, pttl, fence, line length,
/// pause pttl, {by, reason, since, until}, {slot, holder, pttl, ...}, note}.
struct ListKeyReply {
  std::string holder;               ///< the lease key's value ("" free), as shown_holder() cuts it
  std::int64_t pttl_ms = -2;        ///< its PTTL
  std::string fence;                ///< the fence counter as stored, or ""
  std::int64_t line_length = 0;     ///< -1: the line is not a sorted set
  std::int64_t pause_pttl_ms = -2;  ///< -2: no pause
  struct Pause {
    std::string by, reason;         ///< as shown_text() shows them
    std::string since_ms, until_ms; ///< as stored ("" each when there is no pause)
  } pause;
  struct Slot {
    int slot = 0;                   ///< 1..63: the slot key's number
    std::string holder;             ///< as shown_holder() cuts it
    std::int64_t pttl_ms = -2;
  };
  std::vector<Slot> slots;          ///< a semaphore's other slots that are held
  std::string note;                 ///< the key's RefusalNote, or ""
  struct OtherType {
    int slot = 0;                   ///< 1..63
    std::string type;               ///< TYPE's answer
  };
  std::vector<OtherType> other_type;  ///< other slots whose key is not a lease (skipped by the daemons)
};
std::optional<ListKeyReply> parse_list_key_reply(const redisReply* r);

}  // namespace redisgo::lock
