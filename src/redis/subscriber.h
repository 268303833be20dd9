#pragma once
/// A pub/sub subscription to one channel on one node, kept up without blocking: the
/// owner puts fd()/events() in its own poll() (with its signal fd and timers), calls
/// on_ready() on readiness and maintain() on every turn. When the connection fails it
/// resubscribes after a delay that doubles from kRetryMin to kRetryMax, so a dead node
/// costs one connection attempt per delay, never a loop. With a locator (Sentinel,
/// Cluster) it follows the server: when the locator's answer changes, it subscribes
/// again on the new one at once.

#include <string>
#include <vector>

#include "redis/connection.h"

namespace redisgo::redis {

/// What the daemon's loops hold of a subscription: Subscriber below, or a fake that a test
/// feeds messages through (daemon::Dependencies::make_subscriber).
class Subscription {
 public:
  virtual ~Subscription() = default;
  virtual void maintain(SteadyClock::time_point now) noexcept = 0;
  virtual bool active() const noexcept = 0;
  virtual int fd() const noexcept = 0;
  virtual short events() const noexcept = 0;
  virtual SteadyClock::time_point next_wakeup() const noexcept = 0;
  virtual void on_ready(short revents) noexcept = 0;
  virtual std::vector<std::string> take_payloads() = 0;
  virtual bool take_became_active() noexcept = 0;
  virtual void close() noexcept = 0;
  virtual int failures() const noexcept = 0;
  virtual const std::string& last_error() const noexcept = 0;
  virtual Fault last_fault() const noexcept = 0;
  virtual const std::string& channel() const noexcept = 0;
  virtual std::string describe() const = 0;
};

class Subscriber final : public Subscription {
 public:
  static constexpr Millis kRetryMin{500};
  static constexpr Millis kRetryMax{30'000};
  /// How often a subscription to a located server checks that it has not moved.
  static constexpr Millis kRelocateCheck{100};

  Subscriber(ConnectionOptions options, std::string channel);

  /// (Re)subscribes when not subscribed, not already trying, and the retry time has
  /// come; enforces the connection's deadlines. Never blocks, never throws.
  void maintain(SteadyClock::time_point now) noexcept override;
  /// True once the server confirmed the SUBSCRIBE (and until the connection fails).
  bool active() const noexcept override { return conn_.subscribed(); }
  int fd() const noexcept override { return conn_.fd(); }
  short events() const noexcept override { return conn_.events(); }
  /// When maintain() next has something to do (a retry or a deadline); max() if nothing.
  SteadyClock::time_point next_wakeup() const noexcept override;
  /// Does the I/O poll() reported. Never throws.
  void on_ready(short revents) noexcept override;
  /// The payloads published on the channel since the last call.
  std::vector<std::string> take_payloads() override;
  /// True the first time it is called after the subscription became active.
  bool take_became_active() noexcept override;
  /// Unsubscribes by closing the connection; maintain() subscribes again.
  void close() noexcept override;
  /// Attempts that failed so far (a caller that logs them compares this with what it saw).
  int failures() const noexcept override { return failures_; }
  /// Why the last attempt failed ("" if none).
  const std::string& last_error() const noexcept override { return last_error_; }
  Fault last_fault() const noexcept override { return last_fault_; }
  const std::string& channel() const noexcept override { return channel_; }
  std::string describe() const override { return conn_.describe(); }

 private:
  void note_failure(SteadyClock::time_point now) noexcept;

  AsyncConnection conn_;
  std::string channel_;
  CallPtr call_;  // the SUBSCRIBE in flight or confirmed
  SteadyClock::time_point retry_at_{};
  Millis retry_delay_ = kRetryMin;
  bool reported_active_ = false;
  int failures_ = 0;
  std::string last_error_;
  Fault last_fault_ = Fault::kNone;
};

}  // namespace redisgo::redis
