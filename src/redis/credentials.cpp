#include "redis/credentials.h"

#include <utility>

namespace redisgo::redis {

Credentials::Credentials(std::string password, Reread reread, std::chrono::milliseconds min_reread_gap)
    : password_(std::move(password)), reread_(std::move(reread)), min_gap_(min_reread_gap) {}

Credentials::Current Credentials::current() const {
  std::lock_guard lk(mu_);
  return {password_, generation_};
}

bool Credentials::refused(std::uint64_t generation) noexcept {
  try {
    std::lock_guard reading(reread_mu_);
    std::string in_use;
    {
      std::lock_guard lk(mu_);
      if (generation != generation_) return true;  // another connection learnt a newer one meanwhile
      in_use = password_;
    }
    if (!reread_) return false;
    const auto now = std::chrono::steady_clock::now();
    if (last_reread_ && now - *last_reread_ < min_gap_) return false;
    last_reread_ = now;
    auto fresh = reread_(in_use);
    if (!fresh || fresh->empty() || *fresh == in_use) return false;
    std::lock_guard lk(mu_);
    password_ = std::move(*fresh);
    ++generation_;
    return true;
  } catch (...) {
    return false;  // a refusal stays a refusal; the next one may read again
  }
}

}  // namespace redisgo::redis
