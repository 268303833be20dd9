#include "simulator/subscription.h"

#include <algorithm>

namespace redisgo::simulator {

SimSubscription::SimSubscription(Network& net, int host, int node, Process* client, WireOptions options,
                                 std::string channel)
    : net_(net), wire_(net, host, node, client, options), channel_(std::move(channel)) {}

void SimSubscription::note_failure() {
  ++failures_;
  wire_.close(redis::Fault::kClosed, "subscription closed");
  call_.reset();
  reported_active_ = false;
  retry_at_ = net_.world().now() + retry_delay_;
  retry_delay_ = std::min(retry_delay_ * 2, Time{redis::Subscriber::kRetryMax.count() * kMs});
}

void SimSubscription::maintain() {
  if (call_) {
    const bool ok = call_->state == WireCall::State::kReplied && !call_->reply.is_error();
    if (call_->done() && (!ok || !wire_.open())) note_failure();
    if (call_ && ok && wire_.open()) retry_delay_ = redis::Subscriber::kRetryMin.count() * kMs;
    return;
  }
  if (net_.world().now() < retry_at_) return;
  call_ = wire_.send({"SUBSCRIBE", channel_});
  if (call_->done() && call_->state != WireCall::State::kReplied) note_failure();
}

std::vector<std::string> SimSubscription::take_payloads() {
  std::vector<std::string> out;
  for (const auto& p : wire_.take_pushes()) {
    // ["message", channel, payload]; other pushes (a confirmation) are not messages.
    if (p.is_array() && p.items.size() == 3 && p.items[0].text == "message" && p.items[1].text == channel_) {
      out.push_back(p.items[2].text);
    }
  }
  return out;
}

bool SimSubscription::take_became_active() {
  if (reported_active_ || !active()) return false;
  reported_active_ = true;
  return true;
}

void SimSubscription::close() {
  wire_.close(redis::Fault::kCancelled, "unsubscribed");
  call_.reset();
  reported_active_ = false;
}

}  // namespace redisgo::simulator
