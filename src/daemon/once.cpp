// once_per (redisgo_task(1), once_per; docs/DESIGN.md "Restart guard", once_per claims): the
// read before contending, and the claim under the lease with what a slot not run says.
#include <algorithm>

#include "daemon/runner.h"
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

std::optional<int> Runner::slot_already_run() {
  if (!cfg_.task.once_per) return std::nullopt;
  const Millis period = *cfg_.task.once_per;
  once_slot_s_ = lock::nearest_slot(started_ms_, period);
  once_key_ = keys_.claim(once_slot_s_);
  log_->info("once_per {}: this run belongs to the slot of {}", format_duration(period), utc_text(once_slot_s_));
  // One read, no lease needed: a host that fires while (or after) another runs this slot
  // exits at once instead of waiting for the lease only to find the claim. Unreadable:
  // contend as usual; the claim under the lease decides.
  try {
    const auto claims = backend_->read_claims({*once_key_});
    if (!claims.empty() && claims[0]) {
      log_->info("the slot of {} was run already by {}; not running it again", utc_text(once_slot_s_),
                 lock::describe_claim(*claims[0]));
      return kExitTempFail;
    }
  } catch (const Error& e) {
    log_->debug("could not read the slot's claim before contending: {}", e.what());
  }
  return std::nullopt;
}

std::int64_t Runner::highest_witness() {
  // Read under the lease, just before the claim: no daemon of this key claims meanwhile, so
  // no witness rises between this read and the claim but by `adopt` (which raises it to
  // this very slot). A read made before contending could be older than a run that took the
  // slot while this host waited for the lease (docs/DESIGN.md "Restart guard").
  try {
    return lock::highest_witness(backend_->read_once(keys_.witness(), {*once_key_}));
  } catch (const Error& e) {
    // The claim replies still raise it (W'); the claim round's own failure says the rest.
    log_->debug("could not read the once_per witnesses before claiming: {}", e.what());
    return 0;
  }
}

std::optional<int> Runner::claim_slot(const lock::Acquisition& acquired, lock::Renewer& renewer) {
  if (!once_key_) return std::nullopt;
  // once_per: the slot is claimed under the lease, before the child can start.
  // Restart guard: a run of this slot can have started half a period before it (hosts
  // name the nearest slot); a server that started after that may have forgotten it.
  lock::ClaimRequest q;
  q.claim_key = *once_key_;
  q.witness_key = keys_.witness();
  q.slot_s = once_slot_s_;
  q.token = acquired.token;
  q.start_ms = started_ms_;
  q.ttl = claim_ttl();
  q.witness_ttl = lock::witness_ttl(*cfg_.task.once_per);
  if (cfg_.redis.restart_guard) {
    q.guard_from_ms = once_slot_s_ * 1000 - cfg_.task.once_per->count() / 2;
    q.highest_witness = highest_witness();
  }
  lock::Claim claim = backend_->claim(q);
  // A signal cuts a claim round short (the same wakeup serves SIGTERM), and the round drops
  // what it wrote. Only a stop ends the run: any other signal is discarded while no child
  // runs (redisgo_task(1), SIGNALS), and the round is made again. Bounded: a flood of
  // signals ends in "cannot claim", not a loop.
  for (int round = 1; claim.cancelled && round < kClaimRounds; ++round) {
    read_signals();
    if (stop_requested_) break;
    claim = backend_->claim(q);
  }
  for (const auto& node : claim.unreplicated) {
    log_->warn("the claim of the slot of {} is on {} only: the master has no replica connected to acknowledge it, so "
               "a failover before it is replicated could lose it and let the slot run twice",
               utc_text(once_slot_s_), node);
  }
  if (claim.kind == lock::Claim::Kind::kClaimed) {
    if (claim_made_) claim_made_->store(true);
    log_->info("claimed the slot of {} (once_per {})", utc_text(once_slot_s_), format_duration(*cfg_.task.once_per));
    if (!claim.adopted.empty()) {
      log_->info("counted as unclaimed through the `adopt` record of this slot: {}", joined(claim.adopted));
    }
    log_->debug("once_per: {}", joined(claim.notes));
    return std::nullopt;
  }
  release_lease(renewer);
  read_signals();
  if (stop_requested_) return stopped_while_waiting();
  return slot_not_run(claim);
}

int Runner::slot_not_run(const lock::Claim& claim) {
  const std::string slot = utc_text(once_slot_s_);
  switch (claim.kind) {
    case lock::Claim::Kind::kTaken:
      log_->info("the slot of {} was run already by {}; not running it again", slot, lock::describe_claim(claim.previous));
      return kExitTempFail;
    case lock::Claim::Kind::kGuarded:
      // At most once per slot: a node that may have lost a run's claim cannot say "unclaimed".
      // Never quiet: nobody runs this slot (a metric, an alert, the cron wrapper's mail).
      metrics_.add_once_skipped("restart_guard");
      log_->error("the slot of {} is not run (once_per slot skipped): only {} of {} Redis node(s) count as unclaimed, "
                  "fewer than the quorum of {}, so a node may have lost the claim of a run of it (restart guard): {}. "
                  "What to do: {}",
                  slot, claim.counted, backend_->node_count(), backend_->quorum(), joined(claim.notes),
                  lock::once_advice(cfg_.source, cfg_.redis.key_flag));
      return kExitTempFail;
    case lock::Claim::Kind::kNotDurable:
      metrics_.add_once_skipped("not_durable");
      log_->error("the slot of {} is not run (once_per slot skipped): its claim was not made durable on a quorum of {} "
                  "Redis nodes before the job could start, and a restart or failover could lose it: {}. What to do: "
                  "with AOF, set appendfsync everysec (or always); under Sentinel or Cluster, check the replica's link "
                  "(INFO replication)",
                  slot, backend_->quorum(), joined(claim.notes));
      return kExitTempFail;
    case lock::Claim::Kind::kClaimed:
    case lock::Claim::Kind::kFailed:
      break;
  }
  metrics_.add_once_skipped("claim_failed");
  log_->error("cannot claim the slot of {} (once_per slot skipped): {}; not running{}", slot, claim.error,
              claim.notes.empty() ? std::string() : " (" + joined(claim.notes) + ")");
  return claim.refused ? kExitNoPerm : kExitUnavailable;
}

}  // namespace redisgo::daemon
