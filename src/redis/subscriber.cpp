#include "redis/subscriber.h"

#include <algorithm>

namespace redisgo::redis {

Subscriber::Subscriber(ConnectionOptions options, std::string channel)
    : conn_(std::move(options)), channel_(std::move(channel)) {}

SteadyClock::time_point Subscriber::next_wakeup() const noexcept {
  if (!call_) return retry_at_;
  auto next = conn_.next_deadline();
  // A located server (Sentinel, Cluster) can move while we sleep; the locator learns it on
  // its own thread. Look again (locally, no command) so the subscription follows within
  // kRelocateCheck instead of staying on a demoted master until the holder's TTL.
  if (conn_.located()) next = std::min(next, SteadyClock::now() + kRelocateCheck);
  return next;
}

void Subscriber::note_failure(SteadyClock::time_point now) noexcept {
  ++failures_;
  if (call_ && call_->done() && !call_->ok()) {
    last_error_ = call_->error();
    last_fault_ = call_->fault();
  } else {
    last_error_ = conn_.describe() + ": subscription lost";
    last_fault_ = conn_.last_fault();
  }
  conn_.close(last_fault_ == Fault::kNone ? Fault::kClosed : last_fault_, "subscription closed");
  call_.reset();
  reported_active_ = false;
  retry_at_ = now + retry_delay_;
  retry_delay_ = std::min(retry_delay_ * 2, kRetryMax);
}

void Subscriber::maintain(SteadyClock::time_point now) noexcept {
  conn_.check_deadlines(now);
  if (call_ && conn_.stale()) {
    // The server moved (a failover, a MOVED): subscribe again there at once. Not a
    // failure of the node, so no retry delay.
    close();
    retry_at_ = now;
  }
  if (call_) {
    // Failed: the SUBSCRIBE was refused or timed out, or the confirmed subscription's
    // connection went away (EOF, reset, keepalive).
    const bool failed = call_->done() && (!call_->ok() || !conn_.subscribed());
    if (failed) note_failure(now);
    if (call_ && call_->ok() && conn_.subscribed()) retry_delay_ = kRetryMin;
    return;
  }
  if (now < retry_at_) return;
  try {
    call_ = conn_.send({"SUBSCRIBE", channel_});
  } catch (...) {
    call_.reset();
    retry_at_ = now + retry_delay_;
    return;
  }
  if (call_->done() && !call_->ok()) note_failure(now);
}

void Subscriber::on_ready(short revents) noexcept { conn_.on_ready(revents); }

std::vector<std::string> Subscriber::take_payloads() {
  std::vector<std::string> out;
  for (auto& m : conn_.take_messages()) {
    if (m.channel == channel_) out.push_back(std::move(m.payload));
  }
  return out;
}

bool Subscriber::take_became_active() noexcept {
  if (reported_active_ || !active()) return false;
  reported_active_ = true;
  return true;
}

void Subscriber::close() noexcept {
  conn_.close(Fault::kCancelled, "unsubscribed");
  call_.reset();
  reported_active_ = false;
}

}  // namespace redisgo::redis
