// Renewals refused (redisgo_task(1) "Renewals refused"): a leader whose renewals Redis refused
// to the deadline (an ACL user without +pexpire takes the lease, since acquiring needs no
// PEXPIRE, but can never keep it). Said as what it is, with the right named; a supervise
// daemon holds back until the right is there instead of taking the lease only to lose it.
#include <algorithm>

#include "daemon/hold.h"
#include "daemon/refused_right.h"
#include "log/logging.h"
#include "lock/renewer.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/exit_status.h"

namespace redisgo::daemon {

std::string Hold::acl_user() const { return ctx_.cfg.redis.username.empty() ? "default" : ctx_.cfg.redis.username; }

RefusedRight Hold::name_refusal(const lock::NodeError& refusal, const lock::RightsProbe& probe) const {
  return refused_right(refusal, probe.command, acl_user(), ctx_.keys.key, ctx_.keys.base);
}

std::vector<std::string> Hold::renewal_commands() const { return daemon::renewal_commands(ctx_.cfg.task.once_per.has_value()); }

void Hold::say_refused_at_exit(const lock::NodeError& refusal) {
  // Where Redis does not name the command (7.0 inside a script), one probe does; it leaves no
  // note: a run that exits holds nothing back.
  lock::RightsProbe probe;
  if (refusal_needs_probe(refusal)) {
    probe = ctx_.backend->probe_rights(renewal_commands(), "", Millis(0));
  }
  const RefusedRight named = name_refusal(refusal, probe);
  ctx_.log->error("renewals refused: {} ({}); no run of this config can keep its lease until that is put right; "
              "exiting {}",
              named.text, log::printable(refusal.message), kExitNoPerm);
}

void Hold::show_refused(const RefusedRight& named) {
  loop_.say_status("renewals refused: " + named.text + "; not taking the lease until " +
             (named.credentials() ? "they are accepted" : "that is put right"));
  ctx_.metrics.set_state(metrics::State::kRenewalRefused);
  ctx_.metrics.set_renewal_refused(named.right);
}

std::optional<int> Hold::while_refused(const lock::NodeError& refusal, const std::string& why) {
  // Never sooner than the step-down hold would have let it (a refusal that the probe cannot
  // see is retaken no faster than before), and only once a probe passes.
  const Millis hold = ctx_.restarts.on_step_down(config::effective_step_down_hold(ctx_.cfg), ctx_.cfg.redis.expire);
  const auto hold_until = ctx_.clock.now() + hold;
  const std::string head = lock::refusal_note_head(ctx_.opts.holder, wall_ms(), acl_user());
  const lock::RightsProbe probe =
      ctx_.backend->probe_rights(renewal_commands(), head, refused_note_ttl(refused_probe_gap(1)));
  loop_.read_signals();
  if (loop_.stop_requested()) return stopped();
  const RefusedRight named = name_refusal(refusal, probe);
  if (rights_granted(probe, ctx_.backend->quorum())) {
    // The probe finds every right the renewals use granted (put right meanwhile, or a
    // refusal it cannot see): as for any failing leader.
    ctx_.log->warn("stepped down: {}: {} ({}); a probe finds the rights the renewals use granted; not contending "
                   "for {}",
                   why, named.text, log::printable(refusal.message), format_duration(hold));
    return hold_back("stepped down: " + why, hold);
  }
  ctx_.log->error("key {}: renewals refused: {} ({}); stepped down, and not taking the lease again until it is "
                  "put right (checked every {} at first, then less often, down to once every {}; `redisgo_task "
                  "status` shows it)",
                  ctx_.cfg.redis.key, named.text, log::printable(refusal.message), format_duration(kRefusedProbeFirst),
                  format_duration(kRefusedProbeMax));
  show_refused(named);
  if (auto code = probe_until_granted(refusal, head, named)) return code;
  end_refused(false);
  const auto now = ctx_.clock.now();
  const Millis left = now < hold_until ? std::chrono::ceil<Millis>(hold_until - now) : Millis(0);
  ctx_.log->info("key {}: the rights the renewals use are granted again (a probe passed); contending again{}",
                 ctx_.cfg.redis.key, left > Millis(0) ? " in " + format_duration(left) + " (step-down hold)" : "");
  if (left > Millis(0)) return hold_back("stepped down: " + why, left);
  loop_.say_status("standby");
  ctx_.metrics.set_state(metrics::State::kStandby);
  return std::nullopt;
}

std::optional<int> Hold::probe_until_granted(const lock::NodeError& refusal, const std::string& head,
                                             const RefusedRight& named) {
  const auto commands = renewal_commands();
  std::string finding = named.text;
  for (int probes = 1;;) {
    if (!loop_.sleep_until(ctx_.clock.now() + refused_probe_gap(probes))) return stopped();
    ++probes;
    const lock::RightsProbe probe = ctx_.backend->probe_rights(commands, head, refused_note_ttl(refused_probe_gap(probes)));
    loop_.read_signals();  // a stop cancels the probe: not a finding
    if (loop_.stop_requested()) return stopped();
    if (rights_granted(probe, ctx_.backend->quorum())) return std::nullopt;
    // What the probe finds now (another right, nodes it cannot reach): said when it changes.
    const std::string now_finding = !probe.command.empty() ? name_refusal(refusal, probe).text
                                    : probe.errors.empty() ? finding
                                                           : "the probe reached too few nodes (" +
                                                                 lock::describe_errors(probe.errors) + ")";
    if (now_finding != finding) {
      finding = now_finding;
      ctx_.log->warn("key {}: renewals still refused: {}", ctx_.cfg.redis.key, finding);
      if (!probe.command.empty()) show_refused(name_refusal(refusal, probe));
    }
  }
}

int Hold::stopped() {
  end_refused(true);
  return ctx_.stopped_while_waiting();
}

void Hold::end_refused(bool drop_note) {
  ctx_.metrics.set_renewal_refused(std::nullopt);
  // A probe that finds nothing refused deletes this holder's note, and one of no command finds
  // nothing: a daemon that stops must not leave a note saying that it holds back.
  if (drop_note) ctx_.backend->probe_rights({}, "", Millis(0));
}

std::optional<int> Hold::after_step_down(const std::string& why, bool planned) {
  // At least one TTL, and longer with every step-down until the child runs stably again:
  // a host that keeps failing must not keep taking the lease back (RestartTracker). A
  // handover is no failure: step_down_hold as configured, but at least one TTL, or a
  // step_down_hold of 0 would take the lease straight back from the standby it was for.
  const auto& cfg = ctx_.cfg;
  const Millis hold = planned ? std::max(config::effective_step_down_hold(cfg), cfg.redis.expire)
                              : ctx_.restarts.on_step_down(config::effective_step_down_hold(cfg), cfg.redis.expire);
  // A planned step-down (handover, pause --stop) is no warning: a paused key would otherwise
  // page through every warning filter and cron mail.
  ctx_.log->log(planned ? spdlog::level::info : spdlog::level::warn, "stepped down: {}; not contending for {}", why,
                format_duration(hold));
  return hold_back("stepped down: " + why, hold);
}

std::optional<int> Hold::hold_back(const std::string& status, Millis hold) {
  loop_.say_status(status);
  ctx_.metrics.set_state(metrics::State::kSteppedDown);
  if (!loop_.sleep_until(ctx_.clock.now() + hold)) return ctx_.stopped_while_waiting();
  loop_.say_status("standby");
  ctx_.metrics.set_state(metrics::State::kStandby);
  return std::nullopt;
}

}  // namespace redisgo::daemon
