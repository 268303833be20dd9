#include "lock/replies_once.h"

#include <algorithm>
#include <cstdint>

#include "lock/fencing.h"
#include "lock/reply_elements.h"
#include "redis/reply.h"
#include "util/text.h"

namespace redisgo::lock {
namespace {

/// A count written by our scripts ("" = none, 0); nullopt when it is not one.
std::optional<std::int64_t> count_of(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  if (s->empty()) return 0;
  const auto v = parse_token(*s);
  if (!v || *v >= kFenceLimit) return std::nullopt;
  return static_cast<std::int64_t>(*v);
}

/// A claim's four strings {holder, token, start, status} from element `at` of `r` on, as
/// stored; nullopt when one is not a string.
std::optional<ClaimRecord> record_at(const redisReply* r, std::size_t at) {
  auto holder = text(element(r, at)), token = text(element(r, at + 1)), start = text(element(r, at + 2)),
       status = text(element(r, at + 3));
  if (!holder || !token || !start || !status) return std::nullopt;
  return ClaimRecord{*holder, *token, *start, *status};
}

/// A claim as messages show it: the holder as shown_holder() cuts it, the rest shown.
ClaimRecord shown(const ClaimRecord& c) {
  return ClaimRecord{shown_holder(c.holder), shown_text(c.token), shown_text(c.start_ms), shown_text(c.status)};
}

/// A reply's claim fields (holder, token, start_ms, status) set to `c` as shown.
template <class Reply>
void set_shown(const ClaimRecord& c, Reply& out) {
  ClaimRecord s = shown(c);
  out.holder = std::move(s.holder);
  out.token = std::move(s.token);
  out.start_ms = std::move(s.start_ms);
  out.status = std::move(s.status);
}

}  // namespace

bool parse_once_state(const redisReply* r, OnceNode& n) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 11) return false;
  const auto up = redis::as_integer(element(r, 0)), now = redis::as_integer(element(r, 1)),
             aof = redis::as_integer(element(r, 2)), replicas = redis::as_integer(element(r, 10));
  const auto version = text(element(r, 3)), durable = text(element(r, 5)), by = text(element(r, 8));
  const auto witness = count_of(text(element(r, 4))), adopted = count_of(text(element(r, 6))),
             adopted_ms = count_of(text(element(r, 7))), adopts = count_of(text(element(r, 9)));
  if (!up || !now || !aof || !replicas || !version || !durable || !by) return false;
  n.uptime_s = *up;
  n.now_ms = *now;
  n.aof = static_cast<int>(std::clamp<long long>(*aof, -1, 1));
  n.version = version->substr(0, 32);
  // A witness or an adopt record that is not ours to read (set by hand): no evidence.
  n.witness = witness.value_or(0);
  n.witness_durable = witness && *durable == "1";
  n.adopted = adopted.value_or(0);
  n.adopted_ms = adopted ? adopted_ms.value_or(0) : 0;
  n.adopted_by = by->substr(0, 256);
  n.adopts = adopts.value_or(0);
  n.replicas = *replicas;
  return true;
}

ClaimReply parse_claim_reply(const redisReply* r) {
  ClaimReply out;
  const auto flag = redis::as_integer(element(r, 0));
  if (!r || r->type != REDIS_REPLY_ARRAY || !flag) return out;
  if (*flag == 1 && r->elements == 4) {
    const auto how = text(element(r, 1));
    const auto fsync = redis::as_integer(element(r, 2));
    if (how && fsync && counted_from(*how) != Counted::kNo && parse_once_state(element(r, 3), out.state)) {
      out.kind = ClaimReply::Kind::kClaimed;
      out.how = counted_from(*how);
      out.fsync = *fsync == 1;
    }
  } else if (*flag == -1 && r->elements == 1) {
    out.kind = ClaimReply::Kind::kNotOurs;
  } else if (*flag == 2 && r->elements == 2) {
    if (parse_once_state(element(r, 1), out.state)) out.kind = ClaimReply::Kind::kGuarded;
  } else if (*flag == 0 && r->elements == 5) {
    if (auto c = record_at(r, 1)) {
      out.kind = ClaimReply::Kind::kTaken;
      set_shown(*c, out);
    }
  }
  return out;
}

std::optional<ReadClaimsReply> parse_read_claims_reply(const redisReply* r, std::size_t keys) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != keys) return std::nullopt;
  ReadClaimsReply out;
  for (std::size_t i = 0; i < keys; ++i) {
    const redisReply* e = element(r, i);
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 4) return std::nullopt;
    auto c = record_at(e, 0);
    if (!c) return std::nullopt;
    out.claims.push_back(shown(*c));
  }
  return out;
}

std::optional<ReadOnceReply> parse_read_once_reply(const redisReply* r, std::size_t claim_keys) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != claim_keys + 1) return std::nullopt;
  ReadOnceReply out;
  if (!parse_once_state(element(r, 0), out.state)) return std::nullopt;
  out.claims.assign(claim_keys, std::nullopt);
  for (std::size_t i = 0; i < claim_keys; ++i) {
    const redisReply* e = element(r, i + 1);
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 4) return std::nullopt;
    auto c = record_at(e, 0);
    if (!c) return std::nullopt;
    if (!c->holder.empty()) out.claims[i] = std::move(*c);
  }
  return out;
}

std::optional<AdoptReply> parse_adopt_reply(const redisReply* r) {
  const auto flag = redis::as_integer(element(r, 0));
  if (!flag) return std::nullopt;
  AdoptReply out;
  if (*flag == 1 && r->elements == 2) {
    const auto at = integer_in(element(r, 1), 1, INT64_MAX);
    if (!at) return std::nullopt;
    out.kind = AdoptReply::Kind::kAdopted;
    out.adopted_ms = *at;
    return out;
  }
  if (*flag != 0 || r->elements != 5) return std::nullopt;
  auto c = record_at(r, 1);
  if (!c) return std::nullopt;
  out.kind = AdoptReply::Kind::kTaken;
  set_shown(*c, out);
  return out;
}

}  // namespace redisgo::lock
