// once_per (redisgo_task(1), once_per; docs/DESIGN.md "Restart guard", once_per claims): the
// read before contending, and the claim under the lease with what a slot not run says.
#include <algorithm>

#include "daemon/once_per.h"
#include "log/logging.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/exit_status.h"

namespace redisgo::daemon {
namespace {

/// Claim rounds one run may make when signals other than a stop cut them short.
constexpr int kClaimRounds = 8;

/// "a; b; c".
std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

std::optional<int> OncePer::slot_already_run() {
  if (!ctx_.cfg.task.once_per) return std::nullopt;
  const Millis period = *ctx_.cfg.task.once_per;
  slot_s_ = lock::nearest_slot(ctx_.started_ms, period);
  key_ = ctx_.keys.claim(slot_s_);
  ctx_.log->info("once_per {}: this run belongs to the slot of {}", format_duration(period), utc_text(slot_s_));
  // One read, no lease needed: a host that fires while (or after) another runs this slot
  // exits at once instead of waiting for the lease only to find the claim. Unreadable:
  // contend as usual; the claim under the lease decides.
  try {
    const auto claims = ctx_.backend->read_claims({*key_});
    if (!claims.empty() && claims[0]) {
      ctx_.log->info("the slot of {} was run already by {}; not running it again", utc_text(slot_s_),
                 lock::describe_claim(*claims[0]));
      return kExitTempFail;
    }
  } catch (const Error& e) {
    ctx_.log->debug("could not read the slot's claim before contending: {}", e.what());
  }
  return std::nullopt;
}

std::int64_t OncePer::highest_witness() {
  // Read under the lease, just before the claim: no daemon of this key claims meanwhile, so
  // no witness rises between this read and the claim but by `adopt` (which raises it to
  // this very slot). A read made before contending could be older than a run that took the
  // slot while this host waited for the lease (docs/DESIGN.md "Restart guard").
  try {
    return lock::highest_witness(ctx_.backend->read_once(ctx_.keys.witness(), {*key_}));
  } catch (const Error& e) {
    // The claim replies still raise it (W'); the claim round's own failure says the rest.
    ctx_.log->debug("could not read the once_per witnesses before claiming: {}", e.what());
    return 0;
  }
}

std::optional<lock::Claim> OncePer::claim(const lock::Acquisition& acquired) {
  if (!key_) return std::nullopt;
  // once_per: the slot is claimed under the lease, before the child can start.
  // Restart guard: a run of this slot can have started half a period before it (hosts
  // name the nearest slot); a server that started after that may have forgotten it.
  lock::ClaimRequest q;
  q.claim_key = *key_;
  q.witness_key = ctx_.keys.witness();
  q.slot_s = slot_s_;
  q.token = acquired.token;
  q.start_ms = ctx_.started_ms;
  q.ttl = claim_ttl();
  q.witness_ttl = lock::witness_ttl(*ctx_.cfg.task.once_per);
  if (ctx_.cfg.redis.restart_guard) {
    q.guard_from_ms = slot_s_ * 1000 - ctx_.cfg.task.once_per->count() / 2;
    q.highest_witness = highest_witness();
  }
  lock::Claim claim = ctx_.backend->claim(q);
  // A signal cuts a claim round short (the same wakeup serves SIGTERM), and the round drops
  // what it wrote. Only a stop ends the run: any other signal is discarded while no child
  // runs (redisgo_task(1), SIGNALS), and the round is made again. Bounded: a flood of
  // signals ends in "cannot claim", not a loop.
  for (int round = 1; claim.cancelled && round < kClaimRounds; ++round) {
    loop_.read_signals();
    if (loop_.stop_requested()) break;
    claim = ctx_.backend->claim(q);
  }
  for (const auto& node : claim.unreplicated) {
    ctx_.log->warn("the claim of the slot of {} is on {} only: the master has no replica connected to acknowledge it, so "
               "a failover before it is replicated could lose it and let the slot run twice",
               utc_text(slot_s_), node);
  }
  if (claim.kind == lock::Claim::Kind::kClaimed) {
    if (claim_made_) claim_made_->store(true);
    ctx_.log->info("claimed the slot of {} (once_per {})", utc_text(slot_s_), format_duration(*ctx_.cfg.task.once_per));
    if (!claim.adopted.empty()) {
      ctx_.log->info("counted as unclaimed through the `adopt` record of this slot: {}", joined(claim.adopted));
    }
    ctx_.log->debug("once_per: {}", joined(claim.notes));
    return std::nullopt;
  }
  return claim;
}

int OncePer::not_run(const lock::Claim& claim) {
  const std::string slot = utc_text(slot_s_);
  switch (claim.kind) {
    case lock::Claim::Kind::kTaken:
      ctx_.log->info("the slot of {} was run already by {}; not running it again", slot, lock::describe_claim(claim.previous));
      return kExitTempFail;
    case lock::Claim::Kind::kGuarded:
      // At most once per slot: a node that may have lost a run's claim cannot say "unclaimed".
      // Never quiet: nobody runs this slot (a metric, an alert, the cron wrapper's mail).
      ctx_.metrics.add_once_skipped("restart_guard");
      ctx_.log->error("the slot of {} is not run (once_per slot skipped): only {} of {} Redis node(s) count as unclaimed, "
                  "fewer than the quorum of {}, so a node may have lost the claim of a run of it (restart guard): {}. "
                  "What to do: {}",
                  slot, claim.counted, ctx_.backend->node_count(), ctx_.backend->quorum(), joined(claim.notes),
                  lock::once_advice(ctx_.cfg.source, ctx_.cfg.redis.key_flag));
      return kExitTempFail;
    case lock::Claim::Kind::kNotDurable:
      ctx_.metrics.add_once_skipped("not_durable");
      ctx_.log->error("the slot of {} is not run (once_per slot skipped): its claim was not made durable on a quorum of {} "
                  "Redis nodes before the job could start, and a restart or failover could lose it: {}. What to do: "
                  "with AOF, set appendfsync everysec (or always); under Sentinel or Cluster, check the replica's link "
                  "(INFO replication)",
                  slot, ctx_.backend->quorum(), joined(claim.notes));
      return kExitTempFail;
    case lock::Claim::Kind::kClaimed:
    case lock::Claim::Kind::kFailed:
      break;
  }
  ctx_.metrics.add_once_skipped("claim_failed");
  ctx_.log->error("cannot claim the slot of {} (once_per slot skipped): {}; not running{}", slot, claim.error,
              claim.notes.empty() ? std::string() : " (" + joined(claim.notes) + ")");
  return claim.refused ? kExitNoPerm : kExitUnavailable;
}

void OncePer::add_to(lock::LeaseOptions& renewals) {
  claim_made_ = std::make_shared<std::atomic<bool>>(false);  // set by claim()
  if (!key_) return;
  renewals.claim_key = *key_;
  renewals.claim_ttl = claim_ttl();
  renewals.claim_start_ms = ctx_.started_ms;
  renewals.claim_made = claim_made_;
}

void OncePer::finish(int exit_code) {
  if (key_) ctx_.backend->finish_claim(*key_, std::to_string(exit_code));
}

}  // namespace redisgo::daemon
