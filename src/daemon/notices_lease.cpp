// What the daemon says of a lease it holds (notices.h): the acquisition, the renewals, the
// lease's loss, the release, and the settings of the other daemons of the key a release or a
// look beyond our limit reveals.
#include <utility>

#include "daemon/notices.h"
#include "log/logging.h"
#include "util/duration.h"

namespace redisgo::daemon {

static_assert(lock::kMaxSlots == config::kMaxLimit);

void Notices::warn_larger_limit() {
  // One EXISTS of the slot keys beyond our limit: slots there mean a daemon of a larger limit
  // holds this key too, so more than `limit` children run, which this daemon cannot prevent.
  // Asked at the first miss while waiting, or else before the first child, and then before
  // a child starts at most every kLimitCheckEvery (never while it runs: a round on a slow
  // node must not hold up the leader's loop). Not at every acquisition: it would cost each
  // handover a round trip and two commands in the second after a release, when the herd of
  // standbys is busiest; mixed limits are a deployment's lasting state, which one look every
  // few minutes finds, and `status` and `check` show at once.
  if (cfg_.task.limit >= config::kMaxLimit) return;
  const auto now = ctx_.clock.now();
  if (limit_checked_ && now - *limit_checked_ < kLimitCheckEvery) return;
  limit_checked_ = now;
  const int beyond = ctx_.backend->slots_beyond_limit();
  if (beyond <= 0) return;
  log_->error("key {}: {} slot(s) beyond this daemon's limit = {} are held: a daemon of this key runs a larger limit, "
              "so more than {} job(s) run at once; set one limit on every daemon of this key (`status` and `check` "
              "show it)",
              cfg_.redis.key, beyond, cfg_.task.limit, cfg_.task.limit);
}

void Notices::acquired(const lock::Acquisition& acquired) {
  log_->info("acquired key={} token={}{} valid for {}", cfg_.redis.key, acquired.token,
             cfg_.task.limit > 1 ? " slot=" + std::to_string(acquired.slot) : std::string(),
             format_duration(until(acquired.valid_until, ctx_.clock.now())));
  auto& metrics = ctx_.metrics;
  metrics.add_acquisition();
  metrics.set_token(acquired.token);
  metrics.set_state(metrics::State::kLeader);
  metrics.set_line_position(0);  // out of the line: the lease is ours
  metrics.set_lease_deadline(acquired.valid_until);
  lease_loss_counted_ = false;
  lease_ran_out_ = false;
  handover_counted_ = false;
  pause_counted_ = false;
}

void Notices::renewal(const lock::Renewal& r) {
  // A node that fails while we lead is reported once per cause, then summarised, across
  // leads too: a minority node's lasting fault is not news at each lead.
  for (const auto& node : r.answered) renew_log_.success(node);
  for (const auto& e : r.errors) {
    if (!e.node.empty()) renew_log_.failure(cause_key(e), e.message);
  }
  note_nodes(r.answered, r.errors);
  ctx_.metrics.add_renewal(r.confirmed ? "confirmed" : r.lost ? "lost" : "failed",
                           std::chrono::duration<double>(r.took).count());
  if (r.confirmed) ctx_.metrics.set_lease_deadline(r.valid_until);
}

void Notices::lease_lost(const std::string& reason, bool by_deadline) {
  log_->warn("lease lost: {}", reason);
  if (by_deadline) return lease_past_deadline();
  ctx_.metrics.add_lease_loss("lost");
  lease_loss_counted_ = true;
}

void Notices::ended_with_lease(int exit_status) {
  log_->error("the run ends without its lease: {}, and the child was stopped; exiting {}",
              lease_ran_out_ ? "no renewal was confirmed before its deadline" : "Redis said the key was no longer ours",
              exit_status);
}

void Notices::lease_past_deadline() {
  ctx_.metrics.add_lease_loss("deadline");
  lease_loss_counted_ = true;
  lease_ran_out_ = true;
}

void Notices::control_heard(lock::Control kind) {
  switch (kind) {
    case lock::Control::kHandover:
      if (!std::exchange(handover_counted_, true)) ctx_.metrics.add_control_request("handover");
      break;
    case lock::Control::kPauseStop:
      if (!std::exchange(pause_counted_, true)) {
        ctx_.metrics.add_control_request("pause");
        // The pause the next attempt finds is this one: counted already.
        pause_stop_heard_ = true;
      }
      break;
    case lock::Control::kNone: break;
  }
}

void Notices::say(leader::Level level, const std::string& text) {
  switch (level) {
    case leader::Level::kDebug: log_->debug("{}", text); break;
    case leader::Level::kInfo: log_->info("{}", text); break;
    case leader::Level::kWarn: log_->warn("{}", text); break;
    case leader::Level::kError: log_->error("{}", text); break;
  }
}

void Notices::report_taken(const lock::Release& r) {
  std::string where;
  for (const auto& t : r.taken) {
    where += (where.empty() ? "" : "; ") + t.node + ": holder " + t.holder +
             (t.fence.empty() ? std::string() : " (the key's fence counter is at token " + t.fence + ")");
  }
  if (lease_ran_out_) {
    // Ours ran out first and the child was due to stop before it could end (by the daemon,
    // or by its keeper while the daemon was frozen; a child that outlived it was said at
    // error then): a later holder is what a lease that ran out leads to, not an overlap.
    log_->warn("key {}: at release the lease was another holder's ({}): granted again after ours ran out", cfg_.redis.key,
               where);
    return;
  }
  // Nothing had said that the lease was lost, or the child would have been stopped: it ran
  // on while another holder's child could run. The child's exit status stands (it ran to its
  // end), but this must not be a quiet line: error, a lease loss of its own cause, and the
  // cron wrapper mails it.
  log_->error("key {}: at release the lease was another holder's ({}): ours was lost while the child ran (the key "
              "deleted, evicted or expired, or a node restarted empty) and granted again, so two children may have run "
              "at once",
              cfg_.redis.key, where);
  if (!lease_loss_counted_) ctx_.metrics.add_lease_loss("taken");
  lease_loss_counted_ = true;
}

void Notices::log_release(const lock::Release& r) {
  // Counts the nodes where a lease of ours was deleted; elsewhere it had expired, was
  // taken, or the node did not answer (then it expires by its TTL).
  if (!r.taken.empty()) report_taken(r);
  if (r.released > 0) {
    log_->info("released key={} on {} of {} node(s){}", cfg_.redis.key, r.released, ctx_.backend->node_count(),
               r.unanswered > 0 ? " (" + std::to_string(r.unanswered) + " more sent, not waited for)" : "");
  } else if (!r.error.empty()) {
    // Answered with an error (a user without +del, say), not an expired lease: the lease stays
    // until its TTL.
    log_->warn("release deleted nothing for key={}: {}; the lease stays until its TTL runs out", cfg_.redis.key,
               log::printable(r.error));
  } else if (!r.other_type.empty()) {
    log_->warn("release deleted nothing for key={}: the key holds another type ({}), not a lease (something else wrote "
               "over it); no host can take it until it is deleted (redis-cli DEL {})",
               cfg_.redis.key, r.other_type, cfg_.redis.key);
  } else if (r.taken.empty()) {
    log_->warn("release deleted nothing for key={}: the lease was already gone (expired, deleted or evicted), or no "
               "node answered",
               cfg_.redis.key);
  }
  report_release_settings(r);
}

void Notices::report_release_settings(const lock::Release& r) {
  const auto& keys = ctx_.keys;
  // fair = false releases through the line's script too: its listeners outside the line are its
  // own kind, not mixed settings, and a key where every daemon runs fair = false is no warning.
  if (cfg_.redis.fair && r.unfair_listeners > 0 && !warned_unfair_) {
    warned_unfair_ = true;
    log_->warn("{} client(s) heard the release of key {} outside the waiting line: daemons with fair = false or a "
               "version without the line (they get the lease only when nobody waits in line), or a PSUBSCRIBE "
               "monitor (which also makes dead waiters look alive); set fair alike on every daemon of the key",
               r.unfair_listeners, cfg_.redis.key);
  }
  if (r.line_broken > 0 && !warned_line_broken_) {
    warned_line_broken_ = true;
    log_->error("the waiting line {} is not a sorted set (set by hand?), or the ACL user may not run the line's "
                "commands on it (+zrange +zremrangebyrank +zadd +zrank +zcard +zrem, the README's recipe): the lease "
                "was released but nobody was woken, and no daemon can queue; if `redis-cli TYPE {}` is not zset, "
                "delete it (redis-cli DEL {})",
                keys.line, keys.line, keys.line);
  }
  if (r.unpublished > 0 && !warned_unpublished_) {
    // Once: it is a setting, not an event.
    log_->warn("Redis refused the release message on {} (ACL: the user lacks +publish or the channel); standbys are not "
               "woken and take over only when they next try. Grant it with ACL SETUSER <user> &{}{}",
               cfg_.redis.fair ? keys.channel + " or the waiting line's wake channels" : keys.channel, keys.channel,
               cfg_.redis.fair ? " &" + keys.base + ":wake:*" : "");
    warned_unpublished_ = true;
  }
}

}  // namespace redisgo::daemon
