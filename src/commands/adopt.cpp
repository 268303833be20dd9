#include "commands/adopt.h"

#include <algorithm>

#include "commands/pause.h"
#include "commands/quorum_view.h"
#include "lock/lease.h"
#include "log/logging.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/exit_status.h"
#include "wiring/servers.h"

namespace redisgo::commands {
namespace {

/// What an ACL user needs for `adopt` (README's ACL recipe).
constexpr const char* kAdoptRights = "+eval +evalsha +exists +hget +hmget +hset +pttl +pexpire +time +info";

/// Fewer than a quorum read or wrote: 77 when a node refused us, else 69.
int no_quorum(const char* what, int done, const lock::LeaseAdmin& backend, bool refused,
              const std::vector<std::string>& errors, std::ostream& err) {
  err << "redisgo_task: adopt: " << what << " " << done << " of " << backend.node_count() << " node(s), fewer than the quorum of "
      << backend.quorum();
  for (const auto& e : errors) err << "; " << log::printable(e);
  if (refused) err << " (an ACL user that adopts needs " << kAdoptRights << " and the keys of the README's ACL recipe)";
  err << "\n";
  return refused ? kExitNoPerm : kExitUnavailable;
}

/// The slot was run (or is running): nothing to adopt.
int claimed(std::int64_t slot_s, const lock::ClaimRecord& c, const std::string& node, std::ostream& err) {
  err << "redisgo_task: adopt: the slot of " << utc_text(slot_s) << " was claimed already by "
      << log::printable(lock::describe_claim(c)) << " (on " << node
      << "): it was run, or runs now; nothing adopted (to run it again on purpose, delete its claim)\n";
  return kExitTempFail;
}

}  // namespace

int run_adopt(const config::Config& config, std::ostream& out, std::ostream& err) {
  if (!config.task.once_per) {
    err << "redisgo_task: adopt: " << config.source
        << " has no [task] once_per: there is no slot to adopt; nothing was written\n";
    return kExitConfig;
  }
  const Millis period = *config.task.once_per;
  const std::unique_ptr<lock::LeaseAdmin> backend = lock::make_redis_backend(wiring::lease_options(config, "adopt"));
  const lock::LeaseKeys keys = lock::LeaseKeys::derive(config.redis.key);
  const std::int64_t slot = lock::nearest_slot(wall_ms(), period);
  const std::string claim_key = keys.claim(slot);

  // A claim anywhere means the slot ran (or runs): refused, whoever ran it said.
  const auto before = backend->read_once(keys.witness(), {claim_key});
  int reachable = 0;
  bool refused = false;
  std::vector<std::string> errors;
  for (const auto& n : before) {
    if (n.claim) return claimed(slot, *n.claim, n.node, err);
    reachable += n.reachable ? 1 : 0;
    if (!n.reachable) errors.push_back(n.error);
    refused = refused || redis::is_refusal(n.fault);
  }
  if (reachable < backend->quorum()) return no_quorum("could read", reachable, *backend, refused, errors, err);

  const std::string by = operator_name();
  const auto adoption = backend->adopt(claim_key, keys.witness(), slot, by, lock::witness_ttl(period));
  const int written = static_cast<int>(std::count_if(adoption.written_ms.begin(), adoption.written_ms.end(),
                                                     [](std::int64_t ms) { return ms > 0; }));
  if (adoption.claimed || written < backend->quorum()) {
    // A record on a minority declares nothing: dropped where it was written.
    backend->drop_adoption(keys.witness(), slot, adoption.written_ms);
    if (adoption.claimed) return claimed(slot, *adoption.claimed, adoption.claimed_on, err);
    return no_quorum("wrote its record on", written, *backend, adoption.refused, adoption.errors, err);
  }
  log::get("adopt")->info("adopted the once_per slot of {} for key {}: declared unclaimed by {} on {} of {} node(s)",
                          utc_text(slot), config.redis.key, by, written, backend->node_count());
  out << "adopted the slot of " << utc_text(slot) << " for key " << log::printable(config.redis.key)
      << ": declared unclaimed by " << log::printable(by) << " on " << written << " of " << backend->node_count()
      << " node(s)\n";
  // What each node now says for the slot: a node restarted after the record does not count
  // through it.
  const std::int64_t guard_from = slot * 1000 - period.count() / 2;
  const auto after = backend->read_once(keys.witness(), {claim_key});
  const std::int64_t highest = lock::highest_witness(after);
  for (const auto& n : after) {
    if (!n.reachable) {
      out << "node " << n.node << ": unreachable: " << log::printable(n.error) << "\n";
      continue;
    }
    const auto v = lock::once_verdict(n, slot, config.redis.restart_guard ? guard_from : 0, highest);
    out << "node " << n.node << ": " << (v.how == lock::Counted::kNo ? "does not count: " : "counts as unclaimed: ")
        << log::printable(v.why) << "\n";
  }
  if (wall_ms() >= slot * 1000) {
    out << "the slot's time has passed: a host that fires before " << utc_text(slot + period.count() / 2000)
        << " runs it (run the job by hand now if cron has fired already)\n";
  } else {
    out << "a host that fires for it (at " << utc_text(slot) << ") runs it\n";
  }
  return output_ok(out) ? 0 : kExitIoError;
}

}  // namespace redisgo::commands
