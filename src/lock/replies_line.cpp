#include "lock/replies_line.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "lock/fencing.h"
#include "lock/reply_elements.h"
#include "redis/reply.h"
#include "util/text.h"

namespace redisgo::lock {
namespace {

/// A sorted set's score as ZRANGE WITHSCORES sends it, as a ticket; nullopt when it is no
/// number at all (no server sends that), 0 when it is one no ticket can be. A ticket is a
/// TIME in µs, below 2^53 as every count of ours (lock/fencing.h kFenceLimit), so that the
/// waits computed from it stay in range.
std::optional<std::uint64_t> ticket_of(const std::string& score) {
  if (score.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(score.c_str(), &end);
  if (end != score.c_str() + score.size()) return std::nullopt;
  if (!std::isfinite(d) || d < 0 || d >= static_cast<double>(kFenceLimit)) return 0;
  return static_cast<std::uint64_t>(d);
}

/// An integer element that is 0 or 1.
std::optional<bool> flag_at(const redisReply* r, std::size_t i) {
  const auto v = integer_in(element(r, i), 0, 1);
  if (!v) return std::nullopt;
  return *v == 1;
}

}  // namespace

std::optional<ReadLineReply> parse_read_line_reply(const redisReply* r) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 4) return std::nullopt;
  const auto length = redis::as_integer(element(r, 0));
  const auto outside = redis::as_integer(element(r, 2));
  const redisReply* list = element(r, 1);
  const redisReply* listening = element(r, 3);
  if (!length || !outside || !list || list->type != REDIS_REPLY_ARRAY || list->elements % 2 != 0 || !listening ||
      listening->type != REDIS_REPLY_ARRAY || listening->elements != list->elements / 2) {
    return std::nullopt;
  }
  ReadLineReply out;
  out.length = *length;
  out.outside = *outside;
  for (std::size_t k = 0; k + 1 < list->elements; k += 2) {
    const auto holder = text(element(list, k));
    const auto score = text(element(list, k + 1));
    const auto ticket = score ? ticket_of(*score) : std::nullopt;
    const auto listeners = redis::as_integer(element(listening, k / 2));
    if (!holder || !ticket || !listeners) return std::nullopt;
    out.entries.push_back({shown_text(*holder), *ticket, *listeners});
  }
  return out;
}

std::optional<PassTurnReply> parse_pass_turn_reply(const redisReply* r) {
  const auto v = integer_in(r, 0, 2);
  if (!v) return std::nullopt;
  return PassTurnReply{static_cast<PassTurnReply::Result>(*v)};
}

std::optional<PauseReply> parse_pause_reply(const redisReply* r) {
  const auto recorded = flag_at(r, 0), woken = flag_at(r, 1);
  if (recorded != true || !woken || r->elements != 2) return std::nullopt;  // flags: an array
  return PauseReply{*woken};
}

std::optional<ResumeReply> parse_resume_reply(const redisReply* r) {
  const auto was = flag_at(r, 0), woken = flag_at(r, 1);
  if (!was || !woken || r->elements != 2) return std::nullopt;
  return ResumeReply{*was, *woken};
}

std::optional<ReadPauseReply> parse_read_pause_reply(const redisReply* r) {
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 5) return std::nullopt;
  const auto pttl = redis::as_integer(element(r, 0));
  const auto by = text(element(r, 1)), reason = text(element(r, 2)), since = text(element(r, 3)),
             until = text(element(r, 4));
  if (!pttl || !by || !reason || !since || !until) return std::nullopt;
  return ReadPauseReply{*pttl, shown_text(*by), shown_text(*reason), parse_count(*since), parse_count(*until)};
}

std::optional<PublishReply> parse_publish_reply(const redisReply* r) {
  const auto v = integer_in(r, 0, INT64_MAX);
  if (!v) return std::nullopt;
  return PublishReply{*v};
}

}  // namespace redisgo::lock
