#include "lock/replies.h"

#include "lock/fencing.h"
#include "lock/lease.h"
#include "lock/reply_elements.h"
#include "redis/reply.h"
#include "util/text.h"

namespace redisgo::lock {
namespace {

/// The fair scripts' {position, ticket or "", line length} from element `at` on.
bool read_line(const redisReply* r, std::size_t at, AcquireReply& out) {
  auto position = redis::as_integer(element(r, at));
  auto ticket = text(element(r, at + 1));
  auto length = redis::as_integer(element(r, at + 2));
  if (!position || !ticket || !length || *position < 0 || *length < 0) return false;
  std::optional<std::uint64_t> t;
  if (!ticket->empty()) {
    t = parse_token(*ticket);
    if (!t) return false;
  }
  out.line = true;
  out.position = *position;
  out.ticket = t.value_or(0);
  out.line_length = *length;
  return true;
}

/// parse_acquire_reply() without the semaphore's list of slots of another type.
AcquireReply parse_acquire_body(const redisReply* r) {
  AcquireReply out;
  if (!r || r->type != REDIS_REPLY_ARRAY) {
    out.why = std::string("expected an array, got ") + redis::type_name(r);
    return out;
  }
  const auto flag = redis::as_integer(element(r, 0));
  if (flag == 1) {
    out.set_key = true;
    auto t = text(element(r, 1));
    auto token = t ? parse_token(*t) : std::nullopt;
    const std::uint64_t value = token.value_or(0);
    auto slot_key = r->elements >= 3 ? text(element(r, 2)) : std::nullopt;
    auto note = r->elements == 4 ? text(element(r, 3)) : std::nullopt;
    const bool shape = r->elements == 2 || (r->elements == 3 && slot_key && !slot_key->empty()) ||
                       (r->elements == 4 && slot_key && note == "noinfo");
    if (shape && value > 0) {
      out.kind = AcquireReply::Kind::kGranted;
      out.token = value;
      if (slot_key) out.slot_key = *slot_key;
      out.unguarded = note.has_value();
    } else {
      out.why = "granted without a valid token";
    }
    return out;
  }
  if (flag == 0) {
    auto holder = text(element(r, 1));
    auto pttl = redis::as_integer(element(r, 2));
    if ((r->elements == 3 || (r->elements == 6 && read_line(r, 3, out))) && holder && pttl) {
      out.kind = AcquireReply::Kind::kBusy;
      out.holder = shown_holder(*holder);
      out.lease = *holder;
      out.pttl_ms = *pttl;
    } else {
      out.why = "busy without a holder and a TTL";
    }
    return out;
  }
  if (flag == 2) {
    auto left = redis::as_integer(element(r, 1));
    if ((r->elements == 2 || (r->elements == 5 && read_line(r, 2, out))) && left && *left > 0) {
      out.kind = AcquireReply::Kind::kGuarded;
      out.guard_ms = *left;
    } else {
      out.why = "held back by the restart guard without a positive wait";
    }
    return out;
  }
  out.why = "neither granted nor busy";
  return out;
}

ReleaseReply released(bool published, long long unfair_listeners, bool line_broken) {
  ReleaseReply out;
  out.released = true;
  out.published = published;
  out.unfair_listeners = unfair_listeners;
  out.line_broken = line_broken;
  return out;
}

}  // namespace

std::string shown_holder(std::string h) {
  h = holder_of(h);  // the holder, not its attempt
  constexpr std::size_t kShown = 256;
  if (h.size() <= kShown) return h;
  const std::size_t size = h.size();
  h.resize(kShown);
  return h + "... (" + std::to_string(size) + " bytes)";
}

AcquireReply parse_acquire_reply(const redisReply* r) {
  const redisReply* last = r && r->type == REDIS_REPLY_ARRAY && r->elements > 1 ? element(r, r->elements - 1) : nullptr;
  if (!last || last->type != REDIS_REPLY_ARRAY) return parse_acquire_body(r);
  // The semaphore's slots of another type, {key, type, ...}, after the reply proper: read
  // apart, and the rest parsed as a reply of one element fewer (the same elements).
  std::vector<std::pair<std::string, std::string>> bad;
  for (std::size_t i = 0; i + 1 < last->elements; i += 2) {
    auto key = text(last->element[i]);
    auto type = text(last->element[i + 1]);
    if (!key || !type || key->empty()) break;
    bad.emplace_back(*key, shown_text(*type, 32));
  }
  if (bad.empty() || bad.size() * 2 != last->elements) {
    AcquireReply invalid;
    invalid.why = "slots of another type in a list that does not read";
    return invalid;
  }
  redisReply rest = *r;
  --rest.elements;
  AcquireReply out = parse_acquire_body(&rest);
  out.other_type_slots = std::move(bad);
  return out;
}

std::optional<FlagReply> parse_flag_reply(const redisReply* r) {
  const auto v = integer_in(r, 0, 1);
  if (!v) return std::nullopt;
  return FlagReply{*v == 1};
}

std::optional<RenewReply> parse_renew_reply(const redisReply* r) {
  const auto v = integer_in(r, 0, 3);
  if (!v) return std::nullopt;
  return RenewReply{static_cast<RenewReply::Result>(*v)};
}

std::optional<RaiseFenceReply> parse_raise_fence_reply(const redisReply* r) {
  const auto v = integer_in(r, 0, 2);
  if (!v) return std::nullopt;
  return RaiseFenceReply{static_cast<RaiseFenceReply::Result>(*v)};
}

std::optional<ReleaseReply> parse_release_reply(const redisReply* r) {
  if (r && r->type == REDIS_REPLY_ARRAY && redis::as_integer(element(r, 0)) == 0) {
    auto holder = text(element(r, 1));
    auto fence = text(element(r, 2));
    auto type = r->elements == 4 ? text(element(r, 3)) : std::optional<std::string>("");
    if ((r->elements != 3 && r->elements != 4) || !holder || !fence || !type) return std::nullopt;
    if (r->elements == 4 && (type->empty() || !holder->empty())) return std::nullopt;
    ReleaseReply out;
    out.holder = shown_holder(*holder);
    out.fence = shown_text(*fence, 64);
    out.other_type = shown_text(*type, 32);
    return out;
  }
  if (r && r->type == REDIS_REPLY_ARRAY) {
    auto flag = redis::as_integer(element(r, 0));
    auto unfair = redis::as_integer(element(r, 1));
    if (r->elements != 2 || !flag || !unfair || *unfair < 0 || *flag < 1 || *flag > 3) return std::nullopt;
    return released(*flag != 2, *unfair, *flag == 3);
  }
  auto v = redis::as_integer(r);
  if (v == 0) return ReleaseReply{};
  if (v == 1) return released(true, 0, false);
  if (v == 2) return released(false, 0, false);
  return std::nullopt;
}

std::optional<InspectReply> parse_inspect_reply(const redisReply* r) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 4 || r->elements > 6) return std::nullopt;
  auto exists = redis::as_integer(element(r, 0));
  auto holder = text(element(r, 1));
  auto pttl = redis::as_integer(element(r, 2));
  auto fence = text(element(r, 3));
  auto uptime = r->elements >= 5 ? redis::as_integer(element(r, 4)) : std::optional<std::int64_t>(-1);
  auto fence_type = r->elements == 6 ? text(element(r, 5)) : std::optional<std::string>("");
  if (!exists || (*exists != 0 && *exists != 1) || !holder || !pttl || !fence || !uptime || !fence_type) {
    return std::nullopt;
  }
  InspectReply out;
  out.held = *exists == 1;
  out.holder = shown_holder(*holder);
  out.pttl_ms = *pttl;
  if (!fence_type->empty()) {
    const std::string type = fence_type->substr(0, 32);
    out.bad_fence = (std::string("aeiou").find(type[0]) == std::string::npos ? "a " : "an ") + type;
  } else if (auto token = parse_fence(*fence)) {
    out.token = *token;
  } else if (!fence->empty()) {
    constexpr std::size_t kShown = 64;
    out.bad_fence = "\"" + fence->substr(0, kShown) + (fence->size() > kShown ? "...\"" : "\"");
  }
  out.uptime_s = *uptime < 0 ? -1 : *uptime;
  return out;
}

}  // namespace redisgo::lock
