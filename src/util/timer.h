#pragma once
/// A one-shot timer on CLOCK_BOOTTIME, as a file descriptor for poll().
///
/// poll()'s own timeout and condition variables run on CLOCK_MONOTONIC, which stands
/// still while the host is suspended; a lease on a remote Redis keeps expiring then. A
/// deadline armed here as an absolute boot-time instant fires at the right moment after
/// a resume, so the lease deadline is enforced with no extra delay.

#include "util/clock.h"
#include "util/unique_fd.h"

namespace redisgo {

class BootTimer {
 public:
  BootTimer();  ///< throws IoError
  /// Fires (fd() readable) once SystemClock reaches `at`; replaces any earlier arming.
  /// An instant in the past fires at once. Never throws.
  void arm(Clock::time_point at) noexcept;
  void disarm() noexcept;
  /// Consumes an expiry so fd() is no longer readable. Never throws.
  void clear() noexcept;
  int fd() const noexcept { return fd_.get(); }

 private:
  UniqueFd fd_;
};

}  // namespace redisgo
