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
  /// Connects (AUTH as configured) and SUBSCRIBEs; waits for the confirmation (up to
  /// io_timeout), so a PUBLISH after it returns reaches us. Throws. When `cancel_fd` is
  /// given and becomes readable, the wait ends at once with an Error ("cancelled").
  void subscribe(const std::string& channel, int cancel_fd = -1);
  /// True when subscribed and the connection is healthy.
  bool active() const noexcept;
  /// The socket to poll for POLLIN, or -1.
  int fd() const noexcept;
  /// Drains what is readable without blocking; returns the number of messages received
  /// on the channel since the last call (0 if none). On a broken connection: drops it,
  /// returns the messages that arrived before the break (usually 0), and active()
  /// becomes false (the caller resubscribes with backoff).
  /// Also returns messages that arrived together with the SUBSCRIBE confirmation and are
  /// already buffered (poll() cannot see those): call it once right after subscribe().
  int drain() noexcept;
  void close() noexcept;
  /// The channel of the last successful subscribe().
  const std::string& channel() const noexcept { return channel_; }

 private:
  // Counts complete replies already in the hiredis reader; false on a protocol error.
  bool take_buffered(int* count) noexcept;

  ConnectionOptions options_;
  ContextPtr ctx_;
  std::string channel_;
};

}  // namespace redisgo::redis
