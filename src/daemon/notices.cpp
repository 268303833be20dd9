#include "daemon/notices.h"

#include <utility>

#include "log/logging.h"
#include "util/duration.h"
#include "util/strings.h"

namespace redisgo::daemon {

using namespace standby;

std::string cause_key(const lock::NodeError& e) { return e.node.empty() ? redis::to_string(e.fault) : e.node; }

Notices::Notices(Context& ctx, EventLoop& loop)
    : ctx_(ctx),
      loop_(loop),
      cfg_(ctx.cfg),
      log_(ctx.log),
      waiting_(log_, cfg_.redis.key, terminal_stderr()),
      attempt_log_(log::get("lock"), "acquire"),
      renew_log_(log::get("lock"), "renew"),
      subscribe_log_(log::get("lock"), "subscribe") {}

void Notices::show_miss(const ShowMiss& m) {
  waiting_.missed(m.holder, m.holder_ttl_ms, m.attempts, m.began, ctx_.clock.now(), m.guard_wait_ms, m.position,
                  m.line_length, m.quorum_answered);
}

void Notices::leading(const Lead& lead) {
  guard_said_.clear();
  // attempt_log_ is kept: a fault on a minority node outlives one wait, and said afresh
  // at each wait it would be said every few seconds (invariant 7).
  waiting_.done();  // before "acquired" is logged on the same terminal
  ctx_.metrics.add_wait(std::chrono::duration<double>(ctx_.clock.now() - lead.began).count());
}

void Notices::subscribed(const std::string& node) { subscribe_log_.success(node); }

void Notices::subscribe_failed(const std::string& node, const std::string& error, const std::string& what) {
  subscribe_log_.failure(node, error + " (" + what + ")");
}

void Notices::note_line(const lock::Acquisition& acq, const lock::Verdict& verdict) {
  if (cfg_.redis.fair) {
    ctx_.metrics.set_line_length(acq.line_length);
    ctx_.metrics.set_line_position(acq.position);
    return;
  }
  // fair = false beside daemons with the line: a freed lease goes to their line first.
  if (!warned_line_ && (verdict.turn || acq.line_length > 0)) {
    warned_line_ = true;
    log_->warn("key {} has a waiting line (daemons with fair = true wait their turn in it) but this daemon runs "
               "fair = false: a freed lease goes to the line first, so this daemon gets it only when nobody waits "
               "in line; set fair alike on every daemon of the key",
               cfg_.redis.key);
  }
}

void Notices::report(const Report& r) {
  report_attempt(r.acquisition);
  report_guard(r.acquisition);
  report_standing(r);
  if (!r.acquisition.acquired) report_never_expires(r.acquisition, r.verdict);
  // The mixed-limit look, first made while waiting (a quorum answered, so it can answer
  // too): a standby's acquisition later asks nothing on the handover's path.
  if (r.look_for_larger_limit && !limit_checked_) warn_larger_limit();
}

void Notices::report_attempt(const lock::Acquisition& acq) {
  for (const auto& node : acq.answered) attempt_log_.success(node);
  for (const auto& e : acq.errors) attempt_log_.failure(cause_key(e), e.message);
  note_nodes(acq.answered, acq.errors);
  for (const auto& bad : acq.other_type_slots) {
    // Once per slot key and node: the attempts go on around it (the script skips it).
    if (!other_type_said_.insert(bad.node + " " + bad.key).second) continue;
    log_->error("key {}: slot key {} holds {} on {}, not a lease (something else wrote it): the semaphore runs with one "
                "slot fewer until it is deleted (redis-cli DEL {})",
                cfg_.redis.key, bad.key, with_article(bad.type), bad.node, bad.key);
  }
}

void Notices::report_guard(const lock::Acquisition& acq) {
  for (const auto& node : acq.unguarded) {
    if (!unguarded_said_.insert(node).second) continue;
    log_->warn("the restart guard cannot apply on {}: INFO was refused (an ACL user without +info), so a Redis "
               "restarted empty there could hand the lease to a second holder within expire; grant the user +info",
               node);
  }
  if (acq.longer_lease_ms > 0 && !warned_longer_lease_) {
    warned_longer_lease_ = true;
    log_->warn("key {} is held by {} with {} left, more than our expire of {}: the daemons of this key run different "
               "expire values. The restart guard now waits at least that long, which can still fall short of the "
               "other daemon's expire by its cron: until every daemon of this key runs one expire, a Redis restarted "
               "empty can let a second holder in",
               cfg_.redis.key, log::printable(acq.holder), format_duration(Millis(acq.longer_lease_ms)),
               format_duration(cfg_.redis.expire));
  }
  for (const auto& g : acq.guarded) {
    if (!guard_said_.insert(g.node).second) continue;
    log_->warn("{} has been up for less than expire ({}) and the lease key is not there: if it restarted empty, a "
               "holder may still run its child, so it grants nothing new for {} (restart guard)",
               g.node, format_duration(cfg_.redis.expire), format_duration(Millis(g.left_ms)));
  }
}

void Notices::report_standing(const Report& r) {
  const lock::Acquisition& acq = r.acquisition;
  const auto& blocked = r.blocked;
  const std::string cause = blocked ? blocked->cause : "";
  if (cause != blocked_cause_) {
    // Said when it begins, and again at most every kForwardSummary per cause while it flaps;
    // a oneshot run that gives up says it in its last line instead.
    const auto now = ctx_.clock.now();
    auto& said = blocked_said_[cause];
    if (blocked && !r.giving_up && (said == Clock::time_point{} || now - said >= kForwardSummary)) {
      said = now;
      blocked_logged_ = true;
      // Only an error reply is every host's (a broken key, a replica): a refusal is this host's
      // own, and nodes this host cannot reach may serve the others.
      log_->error("key {}: {}{}; retrying", cfg_.redis.key, blocked->text,
                  blocked->every_host ? "; no host with this config can run the job until that is fixed" : "");
    } else if (!blocked && blocked_logged_) {
      blocked_logged_ = false;
      log_->info("key {}: a quorum of Redis nodes answers again", cfg_.redis.key);
    }
    blocked_cause_ = cause;
  }
  const auto& pause = r.verdict.pause;
  report_pause(pause, blocked.has_value());
  // redisgo_task_state says what STATUS= says, in the same order.
  auto& metrics = ctx_.metrics;
  if (blocked) {
    loop_.say_status(blocked->text);
    metrics.set_state(metrics::state_of_cause(blocked->cause).value_or(metrics::State::kErrorReply));
  } else if (pause) {
    loop_.say_status(lock::describe_pause(*pause));
    metrics.set_state(metrics::State::kPaused);
  } else if (acq.guard_wait_ms >= 0) {
    loop_.say_status("standby (restart guard: a Redis node restarted; it grants nothing new for " +
                     format_duration(Millis(acq.guard_wait_ms)) + ")");
    metrics.set_state(metrics::State::kRestartGuard);
  } else {
    loop_.say_status("standby");
    metrics.set_state(acq.position > 0 ? metrics::State::kInLine : metrics::State::kStandby);
  }
}

void Notices::report_pause(const std::optional<lock::PauseRecord>& pause, bool blocked) {
  if (pause && !paused_said_ && pause->by.empty()) {
    // A pause key that `pause` did not write (another type, or a hash without its fields).
    paused_said_ = true;
    log_->warn("key {} is held back by {}, which `pause` did not write (set by hand?): no host starts the job while it "
               "exists; `redisgo_task resume` deletes it",
               cfg_.redis.key, ctx_.keys.pause());
  } else if (pause && !paused_said_) {
    paused_said_ = true;
    log_->info("key {} is {}: no host starts the job until it ends or `redisgo_task resume`", cfg_.redis.key,
               lock::describe_pause(*pause));
  } else if (!pause && paused_said_ && !blocked) {
    paused_said_ = false;
    log_->info("key {} is no longer paused", cfg_.redis.key);
  }
}

void Notices::note_pause(const lock::Acquisition& acq, const lock::Verdict& verdict, Clock::time_point sent) {
  if (verdict.pause) {
    // A pause this daemon was not yet held back by; a leader asked by `pause --stop` counted
    // it when asked.
    if (!pause_ends_ && !std::exchange(pause_stop_heard_, false)) ctx_.metrics.add_control_request("pause");
    // When it would end by itself: its TTL as the quorum read it, counted from before the
    // request went out (the earliest it can end there), so that a pause that merely ran out
    // is never taken for one lifted.
    pause_ends_ = acq.holder_ttl_ms < 0 ? Clock::time_point::max() : sent + Millis(acq.holder_ttl_ms);
    return;
  }
  // Without a quorum's answer nothing says the pause is gone; nor while the restart guard
  // answers for a free key, as it does before the pause is read.
  if (verdict.no_quorum() || (acq.guard_wait_ms >= 0 && acq.holder.empty())) return;
  pause_stop_heard_ = false;  // the pause that asked it to stop is gone already
  if (!pause_ends_) return;
  if (ctx_.clock.now() < *pause_ends_) ctx_.metrics.add_control_request("resume");
  pause_ends_.reset();
}

void Notices::report_never_expires(const lock::Acquisition& acq, const lock::Verdict& verdict) {
  if (!acq.holder_never_expires || warned_never_expires_) return;
  if (verdict.pause) {
    log_->warn("key {} is paused without an expiry ({} was set by hand, not by `pause`): no host starts the job until "
               "it is deleted; `redisgo_task resume` deletes it",
               cfg_.redis.key, ctx_.keys.pause());
    warned_never_expires_ = true;
    return;
  }
  // No lease of ours ever lacks a TTL: someone set this by hand. Said once; the wait goes
  // on (it may be deleted any moment), paced as for any holder.
  log_->warn("key {} is held by {} without an expiry (set by hand?): it will not free itself; delete it "
             "(redis-cli DEL) if no such holder runs",
             cfg_.redis.key, log::printable(acq.holder));
  warned_never_expires_ = true;
}

void Notices::note_nodes(const std::vector<std::string>& answered, const std::vector<lock::NodeError>& errors) {
  for (const auto& node : answered) ctx_.metrics.set_node_up(node, true);
  // An error reply comes from a live server, and so does a refused AUTH (its own alert says
  // so); only a node that did not answer is down.
  for (const auto& node : lock::down_nodes(errors)) ctx_.metrics.set_node_up(node, false);
}

int Notices::give_up(const GiveUp& g) {
  const lock::Acquisition& acq = g.acquisition;
  const lock::Verdict& v = g.verdict;
  // "after 3 attempt(s)", or with --wait-timeout "within the wait timeout of 30s (3 attempt(s))".
  const std::string tries =
      g.timed_out ? "within the wait timeout of " + format_duration(cfg_.task.wait_timeout.value_or(Millis(0))) + " (" +
                        std::to_string(g.attempts) + " attempt(s))"
                  : "after " + std::to_string(g.attempts) + " attempt(s)";
  switch (g.why) {
    case GiveUp::Why::kBusy:
      // Busy is the normal outcome of a cron job on every host but one: info, not louder.
      log_->info("lease not acquired {}{}; giving up", tries,
                 acq.holder.empty() ? ""
                 : v.pause          ? " (the key is " + lock::describe_pause(*v.pause) + ")"
                                    : " (held by " + acq.holder + ")");
      break;
    case GiveUp::Why::kRefused: {
      // The refusal itself, not whichever node failed first (a timeout elsewhere read as the
      // cause); and a server that wants a password the config does not give is said so.
      const lock::NodeError& refusal = *v.refusal;
      const bool none = cfg_.redis.password.empty() && v.wants_password;
      const std::string seen = acq.holder.empty() || acq.holder_node.empty()
                                   ? ""
                                   : " (the key is held by " + lock::describe_holder(acq.holder) + ", as " +
                                         acq.holder_node + " says)";
      log_->error("lease not acquired {}: {} ({}){}{}; giving up", tries,
                  lock::cause_of(refusal) == lock::NoQuorum::kTls ? std::string("TLS verification failed")
                      : refused_what(refusal, "our"),
                  refusal.message,
                  none ? " (the server requires a password and the config gives none: set password_credential, "
                         "password_file or password_env)"
                       : "",
                  seen);
      break;
    }
    case GiveUp::Why::kGuarded:
      // A Redis node restarted and its guard holds the lease back. Nobody runs the job until
      // it opens, and a cron job that skips for that must say why.
      log_->warn("lease not acquired {}: {} started less than expire ago and grants nothing new for "
                 "{} (restart guard); giving up",
                 tries, acq.guarded.front().node, format_duration(Millis(acq.guarded.front().left_ms)));
      break;
    case GiveUp::Why::kNoQuorum: {
      // A node that answered with an error (a key of another type, a read-only replica) was
      // reached: said apart from one that could not be, and from one that refused this host.
      const int errors = v.failed - v.down - v.refusals;
      std::string counts;
      for (const auto& [n, what] : {std::pair{v.down, "unreachable"}, std::pair{v.refusals, "refused this host"},
                                    std::pair{errors, "answered with an error"}}) {
        if (n > 0) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
      }
      log_->error("lease not acquired {}: no quorum of Redis nodes ({}: {}); giving up", tries,
                  counts.empty() ? std::string("none answered") : counts, v.example);
      break;
    }
  }
  return g.exit_status;
}

}  // namespace redisgo::daemon
