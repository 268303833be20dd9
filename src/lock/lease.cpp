#include "lock/lease.h"

#include <algorithm>

#include "lock/redlock.h"

namespace redisgo::lock {

LeaseKeys LeaseKeys::derive(const std::string& key) {
  // Redis Cluster hashes only the tag when the key has one: the text between the first
  // '{' and the first '}' after it, if that text is non-empty. Then suffixes keep the
  // slot; otherwise the whole key becomes the tag of the derived names.
  bool has_tag = false;
  if (auto open = key.find('{'); open != std::string::npos) {
    auto close = key.find('}', open + 1);
    has_tag = close != std::string::npos && close > open + 1;
  }
  const std::string base = has_tag ? key : "{" + key + "}";
  return LeaseKeys{key, base + ":fence", base + ":released"};
}

Millis fence_ttl(Millis lease_ttl) {
  constexpr Millis kWeek = std::chrono::hours(24 * 7);
  return std::max(kWeek, lease_ttl * 100);
}

std::unique_ptr<LeaseBackend> make_redis_backend(const LeaseOptions& options, const Clock& clock) {
  return std::make_unique<RedlockBackend>(options, clock);
}

}  // namespace redisgo::lock
