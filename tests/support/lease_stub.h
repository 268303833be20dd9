#pragma once
// The base of the tests' lease backends (tests/support/fake_lease.h, the renewer's tests): every
// operation of lock::LeaseBackend but acquire, renew, release and node_count, answering as a
// backend with nothing to report would (no claim, no line to leave, every right granted, no
// slot beyond the limit). A fake overrides what its test is about.

#include <optional>
#include <string>
#include <vector>

#include "lock/lease.h"
#include "util/clock.h"

namespace redisgo::testing {

class LeaseStub : public lock::LeaseBackend {
 public:
  void settle(Millis) noexcept override {}
  void released_elsewhere() override {}
  void bound_attempts(Clock::time_point) override {}
  void line_listening(const std::vector<bool>&) override {}
  std::string leave_line() noexcept override { return {}; }
  lock::Claim claim(const lock::ClaimRequest&) override { return {}; }
  std::vector<lock::OnceNode> read_once(const std::string&, const std::vector<std::string>&,
                                        std::vector<std::vector<std::optional<lock::ClaimRecord>>>* = nullptr) override {
    return {};
  }
  void finish_claim(const std::string&, const std::string&) noexcept override {}
  std::vector<std::optional<lock::ClaimRecord>> read_claims(const std::vector<std::string>& claim_keys) override {
    return std::vector<std::optional<lock::ClaimRecord>>(claim_keys.size());
  }
  int slots_beyond_limit() override { return 0; }
  lock::RightsProbe probe_rights(const std::vector<std::string>&, const std::string&, Millis) override {
    lock::RightsProbe p;
    p.allowed = node_count();
    return p;
  }
};

}  // namespace redisgo::testing
