#pragma once
/// A simulated daemon's subscription to one channel on one node, with redis::Subscriber's rules
/// (redis/subscriber.h): subscribe when not subscribed and the retry time has come, a failure
/// doubles the retry delay from 500 ms to 30 s, a confirmed subscription resets it; active once
/// the SUBSCRIBE is confirmed and until its connection fails. Over a Wire, so its messages come
/// with the network's delays and faults.

#include <memory>
#include <string>
#include <vector>

#include "redis/subscriber.h"
#include "simulator/network.h"

namespace redisgo::simulator {

class SimSubscription {
 public:
  SimSubscription(Network& net, int host, int node, Process* client, WireOptions options, std::string channel);

  /// (Re)subscribes when due; notes a failure. Call on every turn, as the real loops do.
  void maintain();
  bool active() const { return call_ && call_->state == WireCall::State::kReplied && !call_->reply.is_error() && wire_.open(); }
  /// When maintain() next has something to do; kNever when nothing.
  Time next_wakeup() const { return call_ ? kNever : retry_at_; }
  std::vector<std::string> take_payloads();
  bool take_became_active();
  void close();
  int failures() const { return failures_; }
  const std::string& channel() const { return channel_; }
  /// The fiber woken by what arrives.
  void set_listener(Fiber* f) { wire_.set_listener(f); }
  int node() const { return wire_.node(); }

 private:
  void note_failure();

  Network& net_;
  Wire wire_;
  std::string channel_;
  WireCallPtr call_;
  Time retry_at_ = 0;
  Time retry_delay_ = redis::Subscriber::kRetryMin.count() * kMs;
  bool reported_active_ = false;
  int failures_ = 0;
};

}  // namespace redisgo::simulator
