#pragma once
// Subscriptions that hear what a test publishes instead of a Redis channel: for the daemon's
// drivers in-process (daemon::Dependencies::make_subscriber), so that a wake message (a
// release, a turn, a handover) reaches a waiter at the moment the test chooses. Each
// subscription is active at once and its fd (an eventfd) is readable while messages wait.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "redis/subscriber.h"

namespace redisgo::testing {

class FakeSubscriptions {
 public:
  FakeSubscriptions();
  ~FakeSubscriptions();
  /// A factory for daemon::Dependencies::make_subscriber.
  std::unique_ptr<redis::Subscription> make(const redis::ConnectionOptions& node, const std::string& channel);
  /// Delivers `payload` to every open subscription of `channel`; how many got it.
  int publish(const std::string& channel, const std::string& payload);
  /// Open subscriptions of `channel`.
  int listening(const std::string& channel) const;

 private:
  class Sub;
  mutable std::mutex mu_;
  std::vector<Sub*> subs_;
};

}  // namespace redisgo::testing
