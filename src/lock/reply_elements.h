#pragma once
/// The pieces the parsers of our scripts' replies share (lock/replies*.cpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "redis/reply.h"

namespace redisgo::lock {

/// Element i of an array reply; nullptr when `r` is not an array that long.
inline const redisReply* element(const redisReply* r, std::size_t i) {
  if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements || !r->element) return nullptr;
  return r->element[i];
}

/// An integer reply (or element) within [lo, hi]; nullopt for anything else.
inline std::optional<std::int64_t> integer_in(const redisReply* r, std::int64_t lo, std::int64_t hi) {
  const auto v = redis::as_integer(r);
  if (!v || *v < lo || *v > hi) return std::nullopt;
  return v;
}

/// A string element, but not an error reply inside an array (a script cannot return one
/// there; a server that does is not understood).
inline std::optional<std::string> text(const redisReply* e) {
  if (e && e->type == REDIS_REPLY_ERROR) return std::nullopt;
  return redis::as_string(e);
}

}  // namespace redisgo::lock
