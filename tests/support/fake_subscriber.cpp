#include "support/fake_subscriber.h"

#include <poll.h>

#include <algorithm>

#include "util/interrupt.h"

namespace redisgo::testing {

class FakeSubscriptions::Sub final : public redis::Subscription {
 public:
  Sub(FakeSubscriptions& hub, std::string channel) : hub_(hub), channel_(std::move(channel)) {}
  ~Sub() override {
    std::lock_guard lk(hub_.mu_);
    hub_.subs_.erase(std::remove(hub_.subs_.begin(), hub_.subs_.end(), this), hub_.subs_.end());
  }
  void maintain(redis::SteadyClock::time_point) noexcept override {
    std::lock_guard lk(hub_.mu_);
    open_ = true;  // as a Subscriber subscribes again after close()
  }
  bool active() const noexcept override {
    std::lock_guard lk(hub_.mu_);
    return open_;
  }
  int fd() const noexcept override { return ready_.fd(); }
  short events() const noexcept override { return POLLIN; }
  redis::SteadyClock::time_point next_wakeup() const noexcept override { return redis::SteadyClock::time_point::max(); }
  void on_ready(short) noexcept override {}
  std::vector<std::string> take_payloads() override {
    std::lock_guard lk(hub_.mu_);
    ready_.clear();
    return std::exchange(queued_, {});
  }
  bool take_became_active() noexcept override { return !std::exchange(reported_, true); }
  void close() noexcept override {
    std::lock_guard lk(hub_.mu_);
    open_ = false;
  }
  int failures() const noexcept override { return 0; }
  const std::string& last_error() const noexcept override { return none_; }
  redis::Fault last_fault() const noexcept override { return redis::Fault::kNone; }
  const std::string& channel() const noexcept override { return channel_; }
  std::string describe() const override { return "fake " + channel_; }

 private:
  friend class FakeSubscriptions;
  FakeSubscriptions& hub_;
  std::string channel_;
  std::string none_;
  Interrupt ready_;
  bool open_ = true;                  // guarded by hub_.mu_
  bool reported_ = false;
  std::vector<std::string> queued_;   // guarded by hub_.mu_
};

FakeSubscriptions::FakeSubscriptions() = default;
FakeSubscriptions::~FakeSubscriptions() = default;

std::unique_ptr<redis::Subscription> FakeSubscriptions::make(const redis::ConnectionOptions&,
                                                             const std::string& channel) {
  auto sub = std::make_unique<Sub>(*this, channel);
  std::lock_guard lk(mu_);
  subs_.push_back(sub.get());
  return sub;
}

int FakeSubscriptions::publish(const std::string& channel, const std::string& payload) {
  std::lock_guard lk(mu_);
  int got = 0;
  for (Sub* s : subs_) {
    if (s->channel_ != channel || !s->open_) continue;
    s->queued_.push_back(payload);
    s->ready_.trigger();
    ++got;
  }
  return got;
}

int FakeSubscriptions::listening(const std::string& channel) const {
  std::lock_guard lk(mu_);
  return static_cast<int>(std::count_if(subs_.begin(), subs_.end(),
                                        [&](const Sub* s) { return s->channel_ == channel && s->open_; }));
}

}  // namespace redisgo::testing
