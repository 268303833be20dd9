// check: once_per's findings (redisgo_task(1), once_per): will the next slot run, and would it
// still after a node's restart.
#include <algorithm>

#include "commands/check_findings.h"
#include "commands/check_findings_detail.h"
#include "lock/lease.h"
#include "util/duration.h"

namespace redisgo::commands::check {
namespace {

using lock::Counted;

/// Why a node that restarted now would not count for a slot through its data (the witness
/// branch), or "" when it would.
std::string restart_weakness(const lock::OnceNode& n, std::int64_t highest) {
  if (n.aof == 0) return "AOF is off";
  if (n.aof < 0) return "its AOF setting could not be read";
  if (!lock::supports_waitaof(n.version)) return "Redis " + n.version + " has no WAITAOF (7.2 and later)";
  if (n.witness <= 0) return "it has no witness yet (the next run that claims a slot here writes it)";
  if (!n.witness_durable) return "its witness was written where claims were not fsynced";
  if (n.witness < highest) return "its witness is lower than another node's";
  return "";
}

Finding node_finding(const OnceProbe& p, const config::Config& config, std::int64_t slot, std::int64_t guard_from,
                     std::int64_t highest) {
  const auto& n = *p.state;
  const lock::OnceVerdict v = lock::once_verdict(n, slot, guard_from, highest);
  const std::string when = utc_text(slot);
  if (v.how == Counted::kNo) {
    return make(Level::kWarn, "once_per", p.node, "does not count as unclaimed for the slot of " + when + ": " + v.why,
                lock::once_advice(config.source));
  }
  std::string m = "counts as unclaimed for the slot of " + when + " (" + v.why + ")";
  if (guard_from > 0) {
    const std::string weak = restart_weakness(n, highest);
    m += weak.empty() ? "; after a restart it still counts, through its AOF and witness"
                      : "; restarted after " + utc_text(guard_from / 1000) + " it would not count (" + weak +
                            "), and a slot that too few nodes count for is skipped";
  }
  return make(Level::kOk, "once_per", p.node, m);
}

/// What keeps a node's claims from counting at all, whatever its uptime.
std::optional<Finding> durability_finding(const OnceProbe& p, const config::Config& config) {
  const auto& n = *p.state;
  const bool located = config.redis.topology == config::Topology::kSentinel ||
                       config.redis.topology == config::Topology::kCluster;
  if (config.redis.restart_guard && lock::fsyncs_claims(n) && p.appendfsync == "no") {
    return make(Level::kFail, "once_per", p.node,
                "AOF with appendfsync no: WAITAOF never confirms an fsync, so a once_per claim here never counts and "
                "a slot that needs this node is skipped",
                "set appendfsync everysec (or always): CONFIG SET appendfsync everysec, and in redis.conf");
  }
  if (config.redis.restart_guard && lock::fsyncs_claims(n) && !p.waitaof_error.empty()) {
    return make(Level::kFail, "once_per", p.node,
                "this user may not run WAITAOF (" + p.waitaof_error +
                    "): a once_per claim here is fsynced before it counts, so none counts",
                "grant +waitaof (the README's ACL recipe)");
  }
  if (located && !p.wait_error.empty()) {
    return make(Level::kFail, "once_per", p.node,
                "this user may not run WAIT (" + p.wait_error +
                    "): a once_per claim counts once a replica has it, so none counts",
                "grant +wait (the README's ACL recipe)");
  }
  if (located && n.replicas == 0) {
    return make(Level::kWarn, "once_per", p.node,
                "no replica is connected to this master: a once_per claim lives on it alone, and a failover to a "
                "replica that did not receive it could run the slot twice",
                "connect a replica (a claim then waits for its acknowledgement before the job starts)");
  }
  return std::nullopt;
}

}  // namespace

std::vector<Finding> once_findings(const std::vector<OnceProbe>& probes, const config::Config& config,
                                   std::int64_t now_ms, int quorum) {
  std::vector<Finding> out;
  if (!config.task.once_per) return out;
  const Millis period = *config.task.once_per;
  const std::int64_t current = lock::nearest_slot(now_ms, period);
  const std::int64_t step = period.count() / 1000;
  std::optional<lock::ClaimRecord> ran;
  std::vector<lock::OnceNode> states;
  for (const auto& p : probes) {
    if (p.current && !ran) ran = p.current;
    if (p.state) states.push_back(*p.state);
  }
  // The slot to come: the current one while it has not run, else the one after.
  const std::int64_t slot = ran ? current + step : current;
  const std::int64_t guard_from = config.redis.restart_guard ? slot * 1000 - period.count() / 2 : 0;
  const std::int64_t highest = lock::highest_witness(states);
  int counting = 0;
  std::vector<std::string> missing;
  for (const auto& p : probes) {
    if (!p.state) {
      out.push_back(acl_refused(p.why) ? skip("once_per", p.node, "the once_per witness and claims", p.why,
                                              "+eval +evalsha +hmget +exists +info and the keys ~" +
                                                  lock::LeaseKeys::derive(config.redis.key).base + ":*")
                                       : make(Level::kWarn, "once_per", p.node, "could not read the once_per state: " + p.why));
      missing.push_back(p.node + " (unreadable)");
      continue;
    }
    Finding f = node_finding(p, config, slot, guard_from, highest);
    const auto d = durability_finding(p, config);
    const bool blocked = d && d->level == Level::kFail;  // its claims never count
    if (f.level == Level::kOk && !blocked) {
      ++counting;
    } else {
      missing.push_back(p.node + (blocked ? " (its claims never count)" : ""));
    }
    out.push_back(std::move(f));
    if (d) out.push_back(*d);
  }
  const std::string when = utc_text(slot);
  std::string lead = ran ? "the slot of " + utc_text(current) + " was run by " + lock::describe_claim(*ran) + "; the next, " + when + ","
                         : "the slot of " + when + (slot * 1000 <= now_ms ? " (its time has passed without a run)" : "");
  if (counting >= quorum) {
    out.push_back(make(Level::kOk, "once_per", "",
                       lead + " would run: " + std::to_string(counting) + " node(s) count as unclaimed (quorum " +
                           std::to_string(quorum) + ")"));
  } else {
    out.push_back(make(Level::kWarn, "once_per", "",
                       lead + " would be skipped: " + std::to_string(counting) +
                           " node(s) count as unclaimed, fewer than the quorum of " + std::to_string(quorum) + "; " +
                           detail::and_list(missing) + (missing.size() == 1 ? " does" : " do") +
                           " not (their once_per lines say why)",
                       lock::once_advice(config.source)));
  }
  return out;
}

}  // namespace redisgo::commands::check
