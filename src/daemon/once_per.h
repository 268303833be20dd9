#pragma once
/// once_per (internal to daemon/; redisgo_task(1), once_per; docs/DESIGN.md "Restart guard",
/// once_per claims): the read of this run's slot before contending, the claim under the lease,
/// what a slot not run says, and the claim's record of how the run ended.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "daemon/context.h"
#include "daemon/event_loop.h"

namespace redisgo::daemon {

class OncePer {
 public:
  OncePer(Context& ctx, EventLoop& loop) : ctx_(ctx), loop_(loop) {}

  /// Before contending, whether this run's slot was run already (exit 75 then).
  std::optional<int> slot_already_run();
  /// Claims the slot under the lease (after the renewals began: add_to()). nullopt when it is
  /// claimed or there is no once_per; else the claim that keeps the child from running.
  std::optional<lock::Claim> claim(const lock::Acquisition& acquired);
  /// A slot not run after its claim (run already; skipped: logged at error and counted); its
  /// exit status.
  int not_run(const lock::Claim& claim);
  /// The renewals of a lease keep this run's claim (LeaseOptions::claim_*): written again when
  /// lost, once it was made.
  void add_to(lock::LeaseOptions& renewals);
  /// The claim records how the run ended (before the release, so that whoever takes the lease
  /// next finds it complete).
  void finish(int exit_code);

 private:
  /// How long a claim is kept, from its writing and from every renewal of its run's lease:
  /// 2 x once_per (redisgo_task(1), MODES), and never less than 2 x expire, so that it
  /// outlives the gap between two renewals and a dead holder's lease.
  Millis claim_ttl() const { return std::max(*ctx_.cfg.task.once_per, ctx_.cfg.redis.expire) * 2; }
  /// The highest witness the nodes show, read under the lease (0: none, or unreadable).
  std::int64_t highest_witness();

  Context& ctx_;
  EventLoop& loop_;
  std::optional<std::string> key_;  ///< the claim of this run's slot
  /// The claim counted (claim()); the renewals write a lost claim again only then.
  std::shared_ptr<std::atomic<bool>> claim_made_;
  std::int64_t slot_s_ = 0;  ///< its start, seconds since the epoch
};

}  // namespace redisgo::daemon
