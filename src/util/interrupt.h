#pragma once
/// A wake-up flag backed by an eventfd: trigger() may be called from any thread or a
/// signal handler (it is a single write(2)), and a waiter sleeping in wait_for() or in a
/// poll() that includes fd() wakes at once. Used to cancel backoff waits on shutdown.

#include <chrono>

#include "util/unique_fd.h"

namespace redisgo {

class Interrupt {
 public:
  Interrupt();  // throws IoError
  Interrupt(const Interrupt&) = delete;
  Interrupt& operator=(const Interrupt&) = delete;

  /// Sets the flag and wakes every waiter. Async-signal-safe.
  void trigger() noexcept;
  /// True once trigger() was called and until clear().
  bool triggered() const noexcept;
  /// Resets the flag.
  void clear() noexcept;
  /// Readable while triggered; for poll() together with other fds.
  int fd() const noexcept { return fd_.get(); }

  /// Sleeps up to `timeout`; returns true if triggered (immediately if already).
  bool wait_for(std::chrono::milliseconds timeout) const;

 private:
  UniqueFd fd_;
};

}  // namespace redisgo
