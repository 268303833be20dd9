#include "support/fake_lease.h"

#include <poll.h>

#include "support/lease_stub.h"

namespace redisgo::testing {

class FakeLease::Backend final : public LeaseStub {
 public:
  Backend(FakeLease& lease, const Clock& clock, int cancel_fd) : lease_(lease), clock_(clock), cancel_fd_(cancel_fd) {}

  lock::Acquisition acquire() override {
    lock::Acquisition a;
    a.started = clock_.now();
    // As the real backend: anything readable on cancel_fd (the daemon's signalfd) during
    // the round (a round trip of up to 5 ms here) ends the attempt unanswered.
    bool cancelled = false;
    if (cancel_fd_ >= 0) {
      pollfd p{cancel_fd_, POLLIN, 0};
      cancelled = ::poll(&p, 1, 5) > 0;
    }
    std::lock_guard lk(lease_.mu_);
    ++lease_.acquisitions_;
    if (cancelled) {
      a.cancelled = true;
      return a;
    }
    a.answered = {"fake"};
    if (lease_.grant_) {
      a.acquired = true;
      a.token = ++lease_.token_;
      a.valid_until = clock_.now() + lease_.ttl_;
    } else {
      a.busy = 1;
      a.holder = "someone-else";
      a.holder_ttl_ms = lease_.held_ttl_.count();
    }
    return a;
  }
  lock::Renewal renew() override {
    std::lock_guard lk(lease_.mu_);
    ++lease_.renewals_;
    lock::Renewal r;
    switch (lease_.renew_) {
      case Renew::kConfirm:
        r.confirmed = true;
        r.votes = 1;
        r.valid_until = clock_.now() + lease_.ttl_;
        r.answered = {"fake"};
        break;
      case Renew::kUnconfirmed:
        r.errors.push_back({"fake", redis::Fault::kTimeout, "fake: no reply"});
        break;
      case Renew::kLost:
        r.lost = true;
        break;
    }
    return r;
  }
  lock::Release release() noexcept override {
    std::lock_guard lk(lease_.mu_);
    ++lease_.releases_;
    lock::Release r;
    r.released = 1;
    return r;
  }
  int node_count() const override { return 1; }

 private:
  FakeLease& lease_;
  const Clock& clock_;
  int cancel_fd_;
};

void FakeLease::set_grant(bool grant, Millis held_ttl) {
  std::lock_guard lk(mu_);
  grant_ = grant;
  held_ttl_ = held_ttl;
}

void FakeLease::set_renew(Renew r) {
  std::lock_guard lk(mu_);
  renew_ = r;
}

int FakeLease::acquisitions() const {
  std::lock_guard lk(mu_);
  return acquisitions_;
}

int FakeLease::renewals() const {
  std::lock_guard lk(mu_);
  return renewals_;
}

int FakeLease::releases() const {
  std::lock_guard lk(mu_);
  return releases_;
}

std::uint64_t FakeLease::last_token() const {
  std::lock_guard lk(mu_);
  return token_;
}

std::unique_ptr<lock::LeaseBackend> FakeLease::make(const lock::LeaseOptions& options, const Clock& clock) {
  return std::make_unique<Backend>(*this, clock, options.cancel_fd);
}

}  // namespace redisgo::testing
