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
  return LeaseKeys{key, base + ":fence", base + ":released", base + ":control", base};
}

std::string LeaseKeys::slot(int i) const { return i == 0 ? key : base + ":slot:" + std::to_string(i); }

std::string LeaseKeys::claim(std::int64_t slot_start_s) const { return base + ":once:" + std::to_string(slot_start_s); }

std::int64_t nearest_slot(std::int64_t now_ms, Millis period) {
  const std::int64_t p = period.count();
  // Floor division (a clock before 1970 is no reason to crash), then the nearer end.
  std::int64_t q = now_ms / p;
  if (now_ms % p < 0) --q;
  const std::int64_t into = now_ms - q * p;
  if (2 * into >= p) ++q;
  return q * p / 1000;
}

Millis fence_ttl(Millis lease_ttl) {
  constexpr Millis kWeek = std::chrono::hours(24 * 7);
  return std::max(kWeek, lease_ttl * 100);
}

std::unique_ptr<LeaseBackend> make_redis_backend(const LeaseOptions& options, const Clock& clock) {
  return std::make_unique<RedlockBackend>(options, clock);
}

}  // namespace redisgo::lock
