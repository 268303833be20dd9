#include "util/interrupt.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "util/clock.h"
#include "util/error.h"

namespace redisgo {

Interrupt::Interrupt() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!fd_) throw_errno("eventfd", errno);
}

void Interrupt::trigger() noexcept {
  std::uint64_t one = 1;
  // Nonblocking: the counter cannot realistically overflow; nothing to do on error.
  [[maybe_unused]] auto n = ::write(fd_.get(), &one, sizeof one);
}

bool Interrupt::triggered() const noexcept {
  pollfd p{fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

void Interrupt::clear() noexcept {
  std::uint64_t value;
  [[maybe_unused]] auto n = ::read(fd_.get(), &value, sizeof value);
}

bool Interrupt::wait_for(std::chrono::milliseconds timeout) const {
  const auto& clock = SystemClock::instance();
  const auto deadline = clock.now() + timeout;
  for (;;) {
    pollfd p{fd_.get(), POLLIN, 0};
    auto left = until(deadline, clock.now());
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw_errno("poll", errno);
  }
}

}  // namespace redisgo
