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
  for (;;) {
    Actions next;
    for (const Action& action : actions) {
      if (std::holds_alternative<Attempt>(action)) {
        next = attempt(machine);
      } else if (const auto* w = std::get_if<Wait>(&action)) {
        // The time the wait ended, read after it (two arguments of one call would be
        // evaluated in either order: the clock first would hand the machine the time the
        // wait began, and a paced re-run would go out early).
        const End end = wait_for(machine, *w);
        next = machine.step(WaitEnded{end, next_window_}, clock_.now());
      } else if (std::holds_alternative<Report>(action)) {
        report_attempt(machine.last());
        report_guard(machine.last());
        report_standing(machine.last(), machine.state() == StandbyState::kGaveUp);
        if (!machine.last().acquired) report_never_expires(machine.last());
        // The mixed-limit look, first made while waiting (a quorum answered, so it can
        // answer too): a standby's acquisition later asks nothing on the handover's path.
        if (!machine.last().acquired && !limit_checked_ && blocked_cause_.empty() &&
            machine.state() != StandbyState::kGaveUp) {
          warn_larger_limit();
        }
      } else if (std::holds_alternative<ShowMiss>(action)) {
        const auto& acq = machine.last();
        waiting_.missed(acq.holder, acq.holder_ttl_ms, machine.attempts(), machine.began(), clock_.now(),
                        acq.guard_wait_ms, acq.position, acq.line_length, quorum_answered(acq));
      } else if (const auto* d = std::get_if<Debug>(&action)) {
        log_->debug("{}", d->text);
      } else if (std::holds_alternative<Lead>(action)) {
        guard_said_.clear();
        // attempt_log_ is kept: a fault on a minority node outlives one wait, and said afresh at
        // each of them it was ~50 lines a minute (attack round, issue 19; invariant 7).
        waiting_.done();  // before "acquired" is logged on the same terminal
        metrics_.add_wait(std::chrono::duration<double>(clock_.now() - machine.began()).count());
        return lead(machine.last());
      } else if (const auto* g = std::get_if<GiveUp>(&action)) {
        if (g->timed_out) {
          // Deaf first: a release that picks us from now on finds nobody listening and wakes
          // the next waiter; one that already handed us a turn is handed on by leaving.
          for (auto& s : subscribers_) s->close();
        }
        return give_up(machine.last(), g->attempts, g->timed_out);
      } else if (std::holds_alternative<Stopped>(action)) {
        return stopped_while_waiting();
      }
    }
    actions = std::move(next);
  }
}

bool Runner::quorum_answered(const lock::Acquisition& acq) const {
  return !blocked_by(acq, backend_->node_count(), backend_->quorum());
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
    a.acquisition.errors.push_back({"", redis::Fault::kNone, e.what()});
  }
  note_pause(a.acquisition, a.started);

  backend_->bound_attempts(Clock::time_point::max());
  read_signals();
  a.stop = stop_requested_;
  note_line(a.acquisition);
  a.subscribed = std::any_of(subscribers_.begin(), subscribers_.end(), [](const auto& s) { return s->active(); });
  return machine.step(a, clock_.now());
}

End Runner::wait_for(const StandbyMachine& machine, const Wait& w) {
  for (;;) {
    // At a terminal the line is redrawn every second (the TTL counts down); that costs
    // no request to Redis.
    const auto tick = w.wake_on_release && waiting_.refreshes() ? std::min(w.until, clock_.now() + std::chrono::seconds(1))
                                                                : w.until;
    switch (wait_until(tick, w.wake_on_release)) {
      case WaitEnd::kShutdown: return End::kShutdown;
      case WaitEnd::kReleased: return End::kReleased;
      case WaitEnd::kSubscribed: return End::kSubscribed;
      case WaitEnd::kTurn: return End::kTurn;
      case WaitEnd::kNext: return End::kNext;
      case WaitEnd::kTimer: break;
    }
    if (clock_.now() >= w.until) return End::kTimer;
    const auto& acq = machine.last();
    const auto since = std::chrono::duration_cast<Millis>(clock_.now() - machine.attempt_started()).count();
    auto left = [&](std::int64_t ms) { return ms < 0 ? -1 : std::max<std::int64_t>(0, ms - since); };
    waiting_.missed(acq.holder, left(acq.holder_ttl_ms), machine.attempts(), machine.began(), clock_.now(),
                    left(acq.guard_wait_ms), acq.position, acq.line_length, quorum_answered(acq));
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

Runner::WaitEnd Runner::wait_until(Clock::time_point until, bool wake_on_release) {
  std::vector<pollfd> fds;
  for (;;) {
    if (stop_requested_) return WaitEnd::kShutdown;
    if (clock_.now() >= until) return WaitEnd::kTimer;
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
    for (std::size_t i = 0; i < subscribers_.size(); ++i) {
      auto& s = subscribers_[i];
      if (fds[i + 1].revents != 0) s->on_ready(fds[i + 1].revents);
      s->maintain(redis::SteadyClock::now());
      for (const auto& payload : s->take_payloads()) {
        if (!cfg_.redis.fair) {
          // Our own release (or any message naming us) says nothing about another holder.
          if (payload != opts_.holder) released = true;
        } else if (payload == "turn") {
          turn = true;
        } else if (auto window = next_message(payload)) {
          next = true;
          next_window_ = *window;
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
        if (s->last_fault() == redis::Fault::kAuth || s->last_fault() == redis::Fault::kReply) {
          subscribe_log_.failure(s->describe(), s->last_error() + " (standing by without wake-on-release)");
        }
      }
    }
    if (stop_requested_) return WaitEnd::kShutdown;
    if (turn) return WaitEnd::kTurn;
    if (released) return WaitEnd::kReleased;
    if (subscribed) return WaitEnd::kSubscribed;
    if (next) return WaitEnd::kNext;
  }
}

std::optional<Millis> Runner::next_message(const std::string& payload) {
  // "next <window ms>" (lock/scripts.h kLineFunctions); anything else is not ours to read.
  constexpr std::string_view kNext = "next ";
  if (payload.size() <= kNext.size() || payload.size() > kNext.size() + 9 || payload.compare(0, kNext.size(), kNext) != 0) {
    return std::nullopt;
  }
  std::int64_t ms = 0;
  for (std::size_t i = kNext.size(); i < payload.size(); ++i) {
    if (payload[i] < '0' || payload[i] > '9') return std::nullopt;
    ms = ms * 10 + (payload[i] - '0');
  }
  if (ms <= 0) return std::nullopt;
  return Millis(ms);
}

void Runner::note_line(const lock::Acquisition& acq) {
  if (cfg_.redis.fair) {
    metrics_.set_line_length(acq.line_length);
    metrics_.set_line_position(acq.position);
    return;
  }
  // fair = false beside daemons with the line: a freed lease goes to their line first.
  if (!warned_line_ && (lock::turn_of(acq.holder) || acq.line_length > 0)) {
    warned_line_ = true;
    log_->warn("key {} has a waiting line (daemons with fair = true wait their turn in it) but this daemon runs "
               "fair = false: a freed lease goes to the line first, so this daemon gets it only when nobody waits "
               "in line; set fair alike on every daemon of the key",
               cfg_.redis.key);
  }
}

int Runner::stopped_while_waiting() const {
  return cfg_.task.mode == config::Mode::kOneshot ? kExitTempFail : 0;
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

void Runner::report_standing(const lock::Acquisition& acq, bool giving_up) {
  const auto blocked = blocked_by(acq, backend_->node_count(), backend_->quorum());
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
  const auto pause = lock::pause_of(acq.holder);
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

void Runner::note_pause(const lock::Acquisition& acq, Clock::time_point sent) {
  if (lock::pause_of(acq.holder)) {
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
  if (!quorum_answered(acq) || (acq.guard_wait_ms >= 0 && acq.holder.empty())) return;
  pause_stop_heard_ = false;  // the pause that asked it to stop is gone already
  if (!pause_ends_) return;
  if (clock_.now() < *pause_ends_) metrics_.add_control_request("resume");
  pause_ends_.reset();
}

void Runner::report_never_expires(const lock::Acquisition& acq) {
  if (!acq.holder_never_expires || warned_never_expires_) return;
  if (lock::pause_of(acq.holder)) {
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
  for (const auto& e : errors) {
    // An error reply comes from a live server, and so does a refused AUTH (its own alert
    // says so); only a node that did not answer is down.
    if (!e.node.empty() && e.fault != redis::Fault::kReply && e.fault != redis::Fault::kAuth) {
      metrics_.set_node_up(e.node, false);
    }
  }
}

int Runner::give_up(const lock::Acquisition& acq, int attempts, bool timed_out) {
  // "after 3 attempt(s)", or with --wait-timeout "within the wait timeout of 30s (3 attempt(s))".
  const std::string tries =
      timed_out ? "within the wait timeout of " + format_duration(cfg_.task.wait_timeout.value_or(Millis(0))) + " (" +
                      std::to_string(attempts) + " attempt(s))"
                : "after " + std::to_string(attempts) + " attempt(s)";
  int unreachable = 0, refused = 0;
  std::string example;
  const lock::NodeError* refusal = nullptr;  // the first node that refused us (credentials, TLS)
  for (const auto& e : acq.errors) {
    if (e.node.empty()) continue;  // a failure of the round, not of a node
    (e.fault == redis::Fault::kReply || e.fault == redis::Fault::kAuth ? refused : unreachable) += 1;
    if (example.empty()) example = e.message;
    if (!refusal && redis::is_refusal(e.fault)) refusal = &e;
  }
  const bool auth = refusal != nullptr;
  const int answered = backend_->node_count() - unreachable - refused;
  // Refused by so many nodes that no quorum could grant us: a holder that the others name
  // does not make it "busy" (75, which a cron wrapper keeps quiet about); the fix is ours (77).
  int refusals = 0;
  for (const auto& e : acq.errors) refusals += !e.node.empty() && redis::is_refusal(e.fault) ? 1 : 0;
  const bool refused_out = refusals > backend_->node_count() - backend_->quorum();
  const int code = give_up_code(refused_out ? 0 : acq.busy, auth, answered, backend_->quorum());
  if (code == kExitTempFail && (acq.busy > 0 || acq.guarded.empty())) {
    // Busy is the normal outcome of a cron job on every host but one: info, not louder.
    const auto pause = lock::pause_of(acq.holder);
    log_->info("lease not acquired {}{}; giving up", tries,
               acq.holder.empty() ? ""
               : pause            ? " (the key is " + lock::describe_pause(*pause) + ")"
                                  : " (held by " + acq.holder + ")");
  } else if (code == kExitNoPerm) {
    // The refusal itself, not whichever node failed first (a timeout elsewhere read as the
    // cause); and a server that wants a password the config does not give is said so.
    const std::string& why = refusal ? refusal->message : example;
    const bool none = cfg_.redis.password.empty() &&
                      (why.find("NOAUTH") != std::string::npos || why.find("unauthenticated") != std::string::npos);
    const std::string seen = acq.holder.empty() || acq.holder_node.empty()
                                 ? ""
                                 : " (the key is held by " + lock::describe_holder(acq.holder) + ", as " +
                                       acq.holder_node + " says)";
    log_->error("lease not acquired {}: {} ({}){}{}; giving up", tries,
                !refusal                                 ? std::string("Redis refused our credentials")
                : refusal->fault == redis::Fault::kTls ? std::string("TLS verification failed")
                                                        : refused_what(*refusal, "our"),
                why,
                none ? " (the server requires a password and the config gives none: set password_credential, "
                       "password_file or password_env)"
                     : "",
                seen);
  } else if (code == kExitTempFail) {
    // Not a busy lease: a Redis node restarted and its guard holds the lease back. Nobody
    // runs the job until it opens, and a cron job that skips for that must say why.
    log_->warn("lease not acquired {}: {} started less than expire ago and grants nothing new for "
               "{} (restart guard); giving up",
               tries, acq.guarded.front().node, format_duration(Millis(acq.guarded.front().left_ms)));
  } else {
    log_->error("lease not acquired {}: no quorum of Redis nodes ({} unreachable, {} refused: {}); "
                "giving up",
                tries, unreachable, refused, example);
  }
  return code;
}

}  // namespace redisgo::daemon
