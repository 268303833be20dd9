// Renewals refused (redisgo_task(1) "Renewals refused"): a leader whose renewals Redis refused
// to the deadline (an ACL user without +pexpire takes the lease, since acquiring needs no
// PEXPIRE, but can never keep it). Said as what it is, with the right named; a supervise
// daemon holds back until the right is there instead of taking the lease only to lose it.
#include <algorithm>

#include "daemon/runner.h"
#include "log/logging.h"
#include "redis/acl.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/exit_status.h"

namespace redisgo::daemon {

std::string Runner::acl_user() const { return cfg_.redis.username.empty() ? "default" : cfg_.redis.username; }

std::vector<std::string> Runner::renewal_commands() const {
  // What the renew script runs (src/lock/lua/renew.lua): GET and PEXPIRE, SET to set a
  // vanished key again, and with once_per the claim's HGET and EXISTS (its HSET changes
  // what it touches, so it is left to `check`).
  std::vector<std::string> commands{"GET", "PEXPIRE", "SET"};
  if (cfg_.task.once_per) commands.insert(commands.end(), {"HGET", "EXISTS"});
  return commands;
}

Runner::RefusedRight Runner::name_refusal(const lock::NodeError& refusal, const lock::RightsProbe& probe) const {
  if (refusal.fault == redis::Fault::kTls) return {"tls", "TLS verification of the Redis nodes failed"};
  const std::string user = "the ACL user '" + acl_user() + "'";
  switch (redis::refusal_of(refusal.message)) {
    case redis::Refusal::kCommand: {
      // Redis 7.2 and later name the command; 7.0 does not inside a script, and the probe
      // finds it as `check` would.
      auto command = redis::refused_command(refusal.message);
      if (!command && !probe.command.empty()) command = probe.command;
      if (command) {
        const std::string right = redis::right_for(*command);
        return {right, user + " lacks " + right};
      }
      return {"unknown", user + " lacks a right the renewals need (`redisgo_task check` names it)"};
    }
    case redis::Refusal::kKey:
      return {"keys", user + " may not use " + keys_.key + " or " + keys_.base + ":* (the README's ACL recipe)"};
    case redis::Refusal::kChannel:
    case redis::Refusal::kCredentials:
    case redis::Refusal::kNone: break;
  }
  return {"credentials", "Redis refused this host's credentials"};
}

void Runner::say_refused_at_exit(const lock::NodeError& refusal) {
  // Where Redis does not name the command (7.0 inside a script), one probe does; it leaves no
  // note: a run that exits holds nothing back.
  lock::RightsProbe probe;
  if (redis::refusal_of(refusal.message) == redis::Refusal::kCommand && !redis::refused_command(refusal.message)) {
    probe = backend_->probe_rights(renewal_commands(), "", Millis(0));
  }
  const RefusedRight named = name_refusal(refusal, probe);
  log_->error("renewals refused: {} ({}); no run of this config can keep its lease until that is put right; "
              "exiting {}",
              named.text, log::printable(refusal.message), kExitNoPerm);
}

void Runner::show_refused(const RefusedRight& named) {
  say_status("renewals refused: " + named.text + "; not taking the lease until " +
             (named.right == "credentials" ? "they are accepted" : "that is put right"));
  metrics_.set_state(metrics::State::kRenewalRefused);
  metrics_.set_renewal_refused(named.right);
}

std::optional<int> Runner::hold_while_refused(const lock::NodeError& refusal, const std::string& why) {
  // Never sooner than the step-down hold would have let it (a refusal that the probe cannot
  // see is retaken no faster than before), and only once a probe passes.
  const Millis hold = restarts_.on_step_down(config::effective_step_down_hold(cfg_), cfg_.redis.expire);
  const auto hold_until = clock_.now() + hold;
  const std::string head = lock::refusal_note_head(opts_.holder, wall_ms(), acl_user());
  const auto commands = renewal_commands();
  int probes = 1;
  lock::RightsProbe probe = backend_->probe_rights(commands, head, refused_note_ttl(refused_probe_gap(probes)));
  read_signals();
  if (stop_requested_) {
    end_refused(true);
    return stopped_while_waiting();
  }
  const RefusedRight named = name_refusal(refusal, probe);
  if (probe.allowed >= backend_->quorum()) {
    // The probe finds every right the renewals use granted (put right meanwhile, or a
    // refusal it cannot see): as for any failing leader.
    log_->warn("stepped down: {}: {} ({}); a probe finds the rights the renewals use granted; not contending "
               "for {}",
               why, named.text, log::printable(refusal.message), format_duration(hold));
    return hold_back("stepped down: " + why, hold);
  }
  log_->error("key {}: renewals refused: {} ({}); stepped down, and not taking the lease again until it is "
              "put right (checked every {} at first, then less often, down to once every {}; `redisgo_task "
              "status` shows it)",
              cfg_.redis.key, named.text, log::printable(refusal.message), format_duration(kRefusedProbeFirst),
              format_duration(kRefusedProbeMax));
  show_refused(named);
  std::string finding = named.text;
  for (;;) {
    if (wait_until(clock_.now() + refused_probe_gap(probes), false).end == standby::End::kShutdown) {
      end_refused(true);
      return stopped_while_waiting();
    }
    ++probes;
    probe = backend_->probe_rights(commands, head, refused_note_ttl(refused_probe_gap(probes)));
    read_signals();  // a stop cancels the probe: not a finding
    if (stop_requested_) {
      end_refused(true);
      return stopped_while_waiting();
    }
    if (probe.allowed >= backend_->quorum()) break;
    // What the probe finds now (another right, nodes it cannot reach): said when it changes.
    const std::string now_finding = !probe.command.empty() ? name_refusal(refusal, probe).text
                                    : probe.errors.empty() ? finding
                                                           : "the probe reached too few nodes (" +
                                                                 lock::describe_errors(probe.errors) + ")";
    if (now_finding != finding) {
      finding = now_finding;
      log_->warn("key {}: renewals still refused: {}", cfg_.redis.key, finding);
      if (!probe.command.empty()) show_refused(name_refusal(refusal, probe));
    }
  }
  end_refused(false);
  const auto now = clock_.now();
  const Millis left = now < hold_until ? std::chrono::ceil<Millis>(hold_until - now) : Millis(0);
  log_->info("key {}: the rights the renewals use are granted again (a probe passed); contending again{}",
             cfg_.redis.key, left > Millis(0) ? " in " + format_duration(left) + " (step-down hold)" : "");
  if (left > Millis(0)) return hold_back("stepped down: " + why, left);
  say_status("standby");
  metrics_.set_state(metrics::State::kStandby);
  return std::nullopt;
}

void Runner::end_refused(bool drop_note) {
  metrics_.set_renewal_refused(std::nullopt);
  // A probe that finds nothing refused deletes this holder's note, and one of no command finds
  // nothing: a daemon that stops must not leave a note saying that it holds back.
  if (drop_note) backend_->probe_rights({}, "", Millis(0));
}

}  // namespace redisgo::daemon
