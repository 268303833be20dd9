#include <algorithm>
#include <string_view>
#include <utility>

#include "daemon/runner.h"
#include "log/logging.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/strings.h"

namespace redisgo::daemon {

using namespace standby;

std::optional<int> Runner::contend() {
  // Whichever way the wait ends, the terminal line goes; and but for the lease, we leave the
  // waiting line at once.
  StandbyMachine& machine = *standby_;
  struct ClearLine {
    WaitReporter& w;
    const StandbyMachine& m;
    lock::LeaseBackend& backend;
    spdlog::logger& log;
    ~ClearLine() {
      w.done();
      if (m.state() == StandbyState::kLeading) return;
      if (const std::string why = backend.leave_line(); !why.empty()) {
        try {
          log.warn("could not leave the waiting line ({}); the next release drops our entry, as nobody listens for it",
                   why);
        } catch (...) {  // a destructor: a logging failure must not end the process
        }
      }
    }
  } clear_line{waiting_, machine, *backend_, *log_};
  Actions actions = machine.step(Begin{}, clock_.now());
  std::optional<ShowMiss> shown;  // the miss on show: a long wait redraws it
  for (;;) {
    Actions next;
    for (const Action& action : actions) {
      if (std::holds_alternative<Attempt>(action)) {
        next = attempt(machine);
      } else if (const auto* w = std::get_if<Wait>(&action)) {
        // The time the wait ended, read after it (two arguments of one call would be
        // evaluated in either order: the clock first would hand the machine the time the
        // wait began, and a paced re-run would go out early).
        const WaitEnded ended = wait_for(*w, shown);
        next = machine.step(ended, clock_.now());
      } else if (const auto* r = std::get_if<Report>(&action)) {
        report(*r);
      } else if (const auto* m = std::get_if<ShowMiss>(&action)) {
        shown = *m;
        show_miss(*m);
      } else if (const auto* d = std::get_if<Debug>(&action)) {
        log_->debug("{}", d->text);
      } else if (const auto* l = std::get_if<Lead>(&action)) {
        guard_said_.clear();
        // attempt_log_ is kept: a fault on a minority node outlives one wait, and said afresh
        // at each wait it would be said every few seconds (invariant 7).
        waiting_.done();  // before "acquired" is logged on the same terminal
        metrics_.add_wait(std::chrono::duration<double>(clock_.now() - l->began).count());
        return lead(l->acquisition);
      } else if (const auto* g = std::get_if<GiveUp>(&action)) {
        if (g->timed_out) {
          // Deaf first: a release that picks us from now on finds nobody listening and wakes
          // the next waiter; one that already handed us a turn is handed on by leaving.
          for (auto& s : subscribers_) s->close();
        }
        return give_up(*g);
      } else if (const auto* s = std::get_if<Stopped>(&action)) {
        return s->exit_status;
      }
    }
    actions = std::move(next);
  }
}

void Runner::show_miss(const ShowMiss& m) {
  waiting_.missed(m.holder, m.holder_ttl_ms, m.attempts, m.began, clock_.now(), m.guard_wait_ms, m.position,
                  m.line_length, m.quorum_answered);
}

Actions Runner::attempt(StandbyMachine& machine) {
  if (stop_requested_) return machine.step(StopAsked{}, clock_.now());
  drain_subscriptions();  // messages from before this attempt are stale
  if (cfg_.redis.fair) {
    // Join the line only where a wake can reach us, and only if we would wait for it: a
    // --no-wait run never makes anyone wait on it (docs/DESIGN.md "The waiting line").
    std::vector<bool> listening;
    for (const auto& s : subscribers_) listening.push_back(opts_.wait && s->active());
    backend_->line_listening(listening);
  }
  Attempted a;
  a.started = clock_.now();
  // --wait-timeout bounds the attempts too, the first one's connecting included: a node that
  // has not answered when it comes counts as not answered (0, --no-wait, sets no bound: one
  // attempt, as long as the nodes' timeouts let it take).
  backend_->bound_attempts(machine.give_up_at().value_or(Clock::time_point::max()));
  try {
    a.acquisition = backend_->acquire();
  } catch (const Error& e) {
    a.acquisition.errors.push_back(lock::round_failure(e.what()));
  }
  const lock::Verdict verdict = lock::classify(a.acquisition, backend_->node_count(), backend_->quorum());
  note_pause(a.acquisition, verdict, a.started);

  backend_->bound_attempts(Clock::time_point::max());
  read_signals();
  a.stop = stop_requested_;
  note_line(a.acquisition, verdict);
  a.subscribed = std::any_of(subscribers_.begin(), subscribers_.end(), [](const auto& s) { return s->active(); });
  return machine.step(a, clock_.now());
}

WaitEnded Runner::wait_for(const Wait& w, const std::optional<ShowMiss>& shown) {
  for (;;) {
    // At a terminal the line is redrawn every second (the TTL counts down); that costs
    // no request to Redis.
    const auto tick = w.wake_on_release && waiting_.refreshes() ? std::min(w.until, clock_.now() + std::chrono::seconds(1))
                                                                : w.until;
    const WaitEnded ended = wait_until(tick, w.wake_on_release);
    if (ended.end != End::kTimer) return ended;
    if (clock_.now() >= w.until) return ended;
    if (shown) show_miss(shown->aged(clock_.now()));
  }
}

void Runner::drain_subscriptions() {
  std::vector<pollfd> fds;
  for (auto& s : subscribers_) fds.push_back(pollfd{s->fd(), s->events(), 0});
  if (::poll(fds.data(), fds.size(), 0) > 0) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) subscribers_[i]->on_ready(fds[i].revents);
    }
  }
  for (auto& s : subscribers_) s->take_payloads();
}

WaitEnded Runner::wait_until(Clock::time_point until, bool wake_on_release) {
  std::vector<pollfd> fds;
  for (;;) {
    if (stop_requested_) return {End::kShutdown};
    if (clock_.now() >= until) return {End::kTimer};
    fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
    std::optional<Millis> cap;
    if (wake_on_release) {
      const auto now = redis::SteadyClock::now();
      for (auto& s : subscribers_) {
        s->maintain(now);
        fds.push_back(pollfd{s->fd(), s->events(), 0});
        if (auto next = s->next_wakeup(); next != redis::SteadyClock::time_point::max()) {
          auto ms = std::max(Millis(0), std::chrono::ceil<Millis>(next - now));
          cap = cap ? std::min(*cap, ms) : ms;
        }
      }
    }
    poll_until(fds, until, cap);
    read_signals();  // nothing to forward while there is no child
    if (!wake_on_release) continue;
    bool released = false, subscribed = false, turn = false, next = false;
    Millis window{0};
    for (std::size_t i = 0; i < subscribers_.size(); ++i) {
      auto& s = subscribers_[i];
      if (fds[i + 1].revents != 0) s->on_ready(fds[i + 1].revents);
      s->maintain(redis::SteadyClock::now());
      for (const auto& payload : s->take_payloads()) {
        const lock::Wake wake = lock::read_wake(payload, cfg_.redis.fair, opts_.holder);
        released |= wake.kind == lock::Wake::Kind::kReleased;
        turn |= wake.kind == lock::Wake::Kind::kTurn;
        if (wake.kind == lock::Wake::Kind::kNext) {
          next = true;
          window = wake.window;
        }
      }
      if (s->take_became_active()) {
        log_->debug("subscribed to {} {} on {}", cfg_.redis.fair ? "our wake channel" : "the release channel",
                    s->channel(), s->describe());
        subscribe_log_.success(s->describe());
        subscribed = true;
      }
      if (s->failures() > subscriber_failures_[i]) {
        // A node that answers but refuses the SUBSCRIBE (an ACL user without the channel)
        // leaves us without wake-on-release: say so, once; waits still end at the holder's
        // TTL. A node that is down is reported by the acquisitions already.
        subscriber_failures_[i] = s->failures();
        if (lock::server_answered(s->last_fault())) {
          subscribe_log_.failure(s->describe(), s->last_error() + " (standing by without wake-on-release)");
        }
      }
    }
    if (stop_requested_) return {End::kShutdown};
    if (turn) return {End::kTurn};
    if (released) return {End::kReleased};
    if (subscribed) return {End::kSubscribed};
    if (next) return {End::kNext, window};
  }
}

void Runner::note_line(const lock::Acquisition& acq, const lock::Verdict& verdict) {
  if (cfg_.redis.fair) {
    metrics_.set_line_length(acq.line_length);
    metrics_.set_line_position(acq.position);
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

int Runner::stopped_while_waiting() const { return stopped_status(cfg_.task.mode); }

void Runner::report(const Report& r) {
  report_attempt(r.acquisition);
  report_guard(r.acquisition);
  report_standing(r);
  if (!r.acquisition.acquired) report_never_expires(r.acquisition, r.verdict);
  // The mixed-limit look, first made while waiting (a quorum answered, so it can answer
  // too): a standby's acquisition later asks nothing on the handover's path.
  if (r.look_for_larger_limit && !limit_checked_) warn_larger_limit();
}

void Runner::report_attempt(const lock::Acquisition& acq) {
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

void Runner::report_guard(const lock::Acquisition& acq) {
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

void Runner::report_standing(const Report& r) {
  const lock::Acquisition& acq = r.acquisition;
  const bool giving_up = r.giving_up;
  const auto& blocked = r.blocked;
  const std::string cause = blocked ? blocked->cause : "";
  if (cause != blocked_cause_) {
    // Said when it begins, and again at most every kForwardSummary per cause while it flaps;
    // a oneshot run that gives up says it in its last line instead.
    const auto now = clock_.now();
    auto& said = blocked_said_[cause];
    if (blocked && !giving_up && (said == Clock::time_point{} || now - said >= kForwardSummary)) {
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
  if (pause && !paused_said_ && pause->by.empty()) {
    // A pause key that `pause` did not write (another type, or a hash without its fields).
    paused_said_ = true;
    log_->warn("key {} is held back by {}, which `pause` did not write (set by hand?): no host starts the job while it "
               "exists; `redisgo_task resume` deletes it",
               cfg_.redis.key, keys_.pause());
  } else if (pause && !paused_said_) {
    paused_said_ = true;
    log_->info("key {} is {}: no host starts the job until it ends or `redisgo_task resume`", cfg_.redis.key,
               lock::describe_pause(*pause));
  } else if (!pause && paused_said_ && !blocked) {
    paused_said_ = false;
    log_->info("key {} is no longer paused", cfg_.redis.key);
  }
  // redisgo_task_state says what STATUS= says, in the same order.
  if (blocked) {
    say_status(blocked->text);
    metrics_.set_state(metrics::state_of_cause(blocked->cause).value_or(metrics::State::kErrorReply));
  } else if (pause) {
    say_status(lock::describe_pause(*pause));
    metrics_.set_state(metrics::State::kPaused);
  } else if (acq.guard_wait_ms >= 0) {
    say_status("standby (restart guard: a Redis node restarted; it grants nothing new for " +
               format_duration(Millis(acq.guard_wait_ms)) + ")");
    metrics_.set_state(metrics::State::kRestartGuard);
  } else {
    say_status("standby");
    metrics_.set_state(acq.position > 0 ? metrics::State::kInLine : metrics::State::kStandby);
  }
}

void Runner::note_pause(const lock::Acquisition& acq, const lock::Verdict& verdict, Clock::time_point sent) {
  if (verdict.pause) {
    // A pause this daemon was not yet held back by; a leader asked by `pause --stop` counted
    // it when asked.
    if (!pause_ends_ && !std::exchange(pause_stop_heard_, false)) metrics_.add_control_request("pause");
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
  if (clock_.now() < *pause_ends_) metrics_.add_control_request("resume");
  pause_ends_.reset();
}

void Runner::report_never_expires(const lock::Acquisition& acq, const lock::Verdict& verdict) {
  if (!acq.holder_never_expires || warned_never_expires_) return;
  if (verdict.pause) {
    log_->warn("key {} is paused without an expiry ({} was set by hand, not by `pause`): no host starts the job until "
               "it is deleted; `redisgo_task resume` deletes it",
               cfg_.redis.key, keys_.pause());
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

void Runner::note_nodes(const std::vector<std::string>& answered, const std::vector<lock::NodeError>& errors) {
  for (const auto& node : answered) metrics_.set_node_up(node, true);
  // An error reply comes from a live server, and so does a refused AUTH (its own alert says
  // so); only a node that did not answer is down.
  for (const auto& node : lock::down_nodes(errors)) metrics_.set_node_up(node, false);
}

int Runner::give_up(const GiveUp& g) {
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
    case GiveUp::Why::kNoQuorum:
      log_->error("lease not acquired {}: no quorum of Redis nodes ({} unreachable, {} refused: {}); "
                  "giving up",
                  tries, v.down, v.failed - v.down, v.example);
      break;
  }
  return g.exit_status;
}

}  // namespace redisgo::daemon
