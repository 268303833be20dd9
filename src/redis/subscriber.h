#pragma once
/// A dedicated connection in SUBSCRIBE mode, read without blocking so that a waiter can
/// poll() its fd together with the signal fd and a timer (wake-on-release).

#include <optional>
#include <string>

#include "redis/connection.h"

namespace redisgo::redis {

class Subscriber {
 public:
  explicit Subscriber(ConnectionOptions options);
  /// Connects (AUTH as configured) and SUBSCRIBEs; waits for the confirmation. Throws.
  void subscribe(const std::string& channel);
  /// True when subscribed and the connection is healthy.
  bool active() const noexcept;
  /// The socket to poll for POLLIN, or -1.
  int fd() const noexcept;
  /// Drains what is readable without blocking; returns the number of messages received
  /// on the channel since the last call (0 if none). On a broken connection: drops it,
  /// returns 0, and active() becomes false (the caller resubscribes with backoff).
  int drain() noexcept;
  void close() noexcept;

 private:
  ConnectionOptions options_;
  ContextPtr ctx_;
  std::string channel_;
};

}  // namespace redisgo::redis
