#include "util/timer.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "util/error.h"

namespace redisgo {

BootTimer::BootTimer() : fd_(::timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC)) {
  if (!fd_) throw_errno("timerfd_create(CLOCK_BOOTTIME)", errno);
}

void BootTimer::arm(Clock::time_point at) noexcept {
  // SystemClock counts CLOCK_BOOTTIME from boot, so its time_point is the absolute value
  // timerfd expects. Zero would disarm: the earliest instant that fires is 1 ns.
  auto ns = at.time_since_epoch().count();
  if (ns <= 0) ns = 1;
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  ::timerfd_settime(fd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr);
}

void BootTimer::disarm() noexcept {
  itimerspec spec{};
  ::timerfd_settime(fd_.get(), 0, &spec, nullptr);
}

void BootTimer::clear() noexcept {
  std::uint64_t expirations;
  [[maybe_unused]] auto n = ::read(fd_.get(), &expirations, sizeof expirations);
}

}  // namespace redisgo
