#pragma once
// A lease backend that answers from a script instead of Redis: for the daemon's driver
// and the renewal thread in-process (daemon::Dependencies). Never used where the behaviour
// under test is Redis's; those tests run real servers.

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "lock/lease.h"
#include "util/clock.h"

namespace redisgo::testing {

/// What every backend built from one FakeLease shares: the script and the counts.
class FakeLease {
 public:
  enum class Renew { kConfirm, kUnconfirmed, kLost };

  explicit FakeLease(Millis ttl = Millis(5000)) : ttl_(ttl) {}

  /// Whether acquire() grants (else another holder has it for `held_ttl`).
  void set_grant(bool grant, Millis held_ttl = Millis(3000));
  /// What renew() does from now on.
  void set_renew(Renew r);

  int acquisitions() const;
  int renewals() const;
  int releases() const;
  std::uint64_t last_token() const;

  /// A factory for daemon::Dependencies::make_backend.
  std::unique_ptr<lock::LeaseBackend> make(const lock::LeaseOptions& options, const Clock& clock);

 private:
  class Backend;
  mutable std::mutex mu_;
  Millis ttl_;
  bool grant_ = true;
  Millis held_ttl_{3000};
  Renew renew_ = Renew::kConfirm;
  int acquisitions_ = 0;
  int renewals_ = 0;
  int releases_ = 0;
  std::uint64_t token_ = 0;
};

}  // namespace redisgo::testing
