#include "lock/replies_admin.h"

#include "lock/fencing.h"
#include "lock/lease.h"
#include "lock/replies.h"
#include "lock/reply_elements.h"
#include "redis/reply.h"
#include "util/text.h"

namespace redisgo::lock {
namespace {

/// {by, reason, since, until}, four strings.
std::optional<ListKeyReply::Pause> pause_of_list(const redisReply* f) {
  if (!f || f->type != REDIS_REPLY_ARRAY || f->elements != 4) return std::nullopt;
  auto by = text(element(f, 0)), reason = text(element(f, 1)), since = text(element(f, 2)), until = text(element(f, 3));
  if (!by || !reason || !since || !until) return std::nullopt;
  return ListKeyReply::Pause{shown_text(*by), shown_text(*reason), *since, *until};
}

/// {slot, holder, pttl, ...}: the slots that are held.
std::optional<std::vector<ListKeyReply::Slot>> slots_of_list(const redisReply* s) {
  if (!s || s->type != REDIS_REPLY_ARRAY || s->elements % 3 != 0) return std::nullopt;
  std::vector<ListKeyReply::Slot> out;
  for (std::size_t j = 0; j < s->elements; j += 3) {
    const auto number = text(element(s, j));
    const auto holder = text(element(s, j + 1));
    const auto pttl = redis::as_integer(element(s, j + 2));
    const std::int64_t slot = number ? parse_count(*number) : 0;
    if (slot < 1 || slot >= kMaxSlots || !holder || !pttl) return std::nullopt;
    out.push_back({static_cast<int>(slot), shown_holder(*holder), *pttl});
  }
  return out;
}

/// {slot, type, ...}: the slots whose key is of another type.
std::optional<std::vector<ListKeyReply::OtherType>> other_types_of_list(const redisReply* s) {
  if (!s || s->type != REDIS_REPLY_ARRAY || s->elements % 2 != 0) return std::nullopt;
  std::vector<ListKeyReply::OtherType> out;
  for (std::size_t j = 0; j < s->elements; j += 2) {
    const auto number = text(element(s, j));
    const auto type = text(element(s, j + 1));
    const std::int64_t slot = number ? parse_count(*number) : 0;
    if (slot < 1 || slot >= kMaxSlots || !type) return std::nullopt;
    out.push_back({static_cast<int>(slot), shown_text(*type)});
  }
  return out;
}

}  // namespace

std::optional<ProbeRightsReply> parse_probe_rights_reply(const redisReply* r) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return std::nullopt;
  auto command = text(element(r, 0)), error = text(element(r, 1));
  if (!command || !error) return std::nullopt;
  return ProbeRightsReply{*command, *error};
}

std::optional<ReadRefusalReply> parse_read_refusal_reply(const redisReply* r) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3) return std::nullopt;
  auto note = text(element(r, 0)), error = text(element(r, 2));
  const auto pttl = redis::as_integer(element(r, 1));
  if (!note || !pttl || !error) return std::nullopt;
  return ReadRefusalReply{*note, *pttl, *error};
}

std::optional<SlotsBeyondReply> parse_slots_beyond_reply(const redisReply* r) {
  const auto v = integer_in(r, -1, kMaxSlots);
  if (!v) return std::nullopt;
  return SlotsBeyondReply{*v};
}

std::optional<ListKeyReply> parse_list_key_reply(const redisReply* r) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 9) return std::nullopt;
  auto holder = text(element(r, 0)), fence = text(element(r, 2)), note = text(element(r, 7));
  const auto pttl = redis::as_integer(element(r, 1)), line = redis::as_integer(element(r, 3)),
             pause_pttl = redis::as_integer(element(r, 4));
  auto pause = pause_of_list(element(r, 5));
  auto slots = slots_of_list(element(r, 6));
  auto others = other_types_of_list(element(r, 8));
  if (!holder || !fence || !note || !pttl || !line || !pause_pttl || !pause || !slots || !others) return std::nullopt;
  ListKeyReply out;
  out.holder = shown_holder(*holder);
  out.pttl_ms = *pttl;
  out.fence = *fence;
  out.line_length = *line;
  out.pause_pttl_ms = *pause_pttl;
  out.pause = std::move(*pause);
  out.slots = std::move(*slots);
  out.note = *note;
  out.other_type = std::move(*others);
  return out;
}

}  // namespace redisgo::lock
