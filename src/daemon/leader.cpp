#include "daemon/leader.h"

#include <algorithm>
#include <utility>

#include "lock/lease.h"
#include "util/duration.h"
#include "util/exit_status.h"

namespace redisgo::daemon {

using config::Mode;
using namespace leader;

namespace {

/// Appends an action (built in place: GCC 12 warns of a variant moved from a temporary).
template <class T>
void emit(Actions& out, T action) {
  out.emplace_back(std::in_place_type<T>, std::move(action));
}

}  // namespace

LeaderSettings LeaderSettings::from(const config::Config& config) {
  const auto& t = config.task;
  LeaderSettings s;
  s.mode = t.mode;
  s.restart = t.restart;
  s.restart_delay = t.restart_delay;
  s.restart_window = t.restart_window;
  s.restart_limit = t.restart_limit;
  s.kill_grace = t.kill_grace;
  s.ttl = config.redis.expire;
  s.tick = config.redis.cron.count() > 0 ? config.redis.cron : config::default_cron(config.redis.expire);
  s.kill_signal = t.kill_signal;
  s.timeout = t.timeout;
  s.control_channel = lock::LeaseKeys::derive(config.redis.key).control;
  return s;
}

const char* to_string(LeaderState s) {
  switch (s) {
    case LeaderState::kStarting: return "starting";
    case LeaderState::kRunning: return "running";
    case LeaderState::kStopping: return "stopping";
    case LeaderState::kKilling: return "killing";
    case LeaderState::kForced: return "forced";
    case LeaderState::kRestarting: return "restarting";
    case LeaderState::kDone: return "done";
  }
  return "?";
}

LeaderMachine::LeaderMachine(LeaderSettings settings, RestartTracker& restarts)
    : s_(std::move(settings)), restarts_(restarts) {}

bool LeaderMachine::running() const {
  return state_ == LeaderState::kRunning || state_ == LeaderState::kStopping || state_ == LeaderState::kKilling ||
         state_ == LeaderState::kForced;
}

Actions LeaderMachine::step(const Event& event, Clock::time_point now, const LeaseView& lease) {
  Actions out;
  if (done()) return out;
  gap_ = last_step_ == Clock::time_point{} ? Clock::duration::zero() : now - last_step_;
  last_step_ = now;
  std::visit([&](const auto& e) { on(e, now, lease, out); }, event);
  return out;
}

Clock::time_point LeaderMachine::next_wakeup(const LeaseView& lease) const {
  const auto sched = stop_schedule(lease.valid_until, s_.kill_grace, s_.ttl);
  auto next = Clock::time_point::max();
  switch (state_) {
    case LeaderState::kRunning:
      next = sched.term_at;
      if (timeout_at_) next = std::min(next, *timeout_at_);
      break;
    case LeaderState::kStopping: next = std::min(stop_kill_at_, sched.kill_at); break;
    case LeaderState::kRestarting: next = std::min(*restart_at_, sched.term_at); break;
    default: break;
  }
  return next;
}

Clock::time_point LeaderMachine::keeper_due() const {
  if (state_ != LeaderState::kRunning && state_ != LeaderState::kStopping) return Clock::time_point::max();
  return keeper_told_ + s_.tick / 2;
}

void LeaderMachine::finish(LeaderOutcome o) {
  outcome_ = std::move(o);
  state_ = LeaderState::kDone;
}

LeaderOutcome LeaderMachine::lease_gone() const {
  return s_.mode == Mode::kOneshot ? LeaderOutcome{AfterExit::Kind::kExit, kExitTempFail, Millis(0), "", {}}
                                   : LeaderOutcome{AfterExit::Kind::kRecontend, 0, s_.restart_delay, "", {}};
}

LeaderOutcome LeaderMachine::step_down() const {
  return LeaderOutcome{AfterExit::Kind::kRecontend, 0, Millis(0), step_down_reason_, step_down_cause_};
}

void LeaderMachine::start(Clock::time_point now, const LeaseView& lease, Actions& out) {
  cause_ = StopCause::kNone;
  restart_at_.reset();
  // The deadline first, every time (the first start too): a pause between the
  // acquisition and here may have let the lease run out, and another host may hold it.
  if (lease.lost || !can_start_child(now, lease.valid_until, s_.kill_grace, s_.ttl)) {
    emit<Say>(out, {Level::kWarn, "not starting the child: " +
                                        (lease.lost ? lease.lost_reason
                                                    : std::string("too little of the lease is left to stop it in time"))});
    emit<Status>(out, {"lease lost before the child started"});
    finish(lease_gone());
    return;
  }
  keeper_deadline_ = stop_schedule(lease.valid_until, s_.kill_grace, s_.ttl).kill_at;
  keeper_decided_ = lease.renewed_at;
  keeper_told_ = now;
  child_gone_ = false;
  state_ = LeaderState::kStarting;
  emit<Spawn>(out, {keeper_deadline_});
}

void LeaderMachine::on(const Start&, Clock::time_point now, const LeaseView& lease, Actions& out) {
  start(now, lease, out);
}

void LeaderMachine::on(const Spawned& e, Clock::time_point now, const LeaseView&, Actions& out) {
  if (state_ != LeaderState::kStarting) return;
  pid_ = e.pid;
  keeper_ = e.keeper;
  state_ = LeaderState::kRunning;
  restarts_.on_start(now);
  emit<ArmHealth>(out, {keeper_deadline_});
  if (s_.timeout && s_.mode == Mode::kOneshot) timeout_at_ = now + *s_.timeout;
}

void LeaderMachine::on(const SpawnFailed& e, Clock::time_point, const LeaseView&, Actions&) {
  if (state_ != LeaderState::kStarting) return;
  if (e.code == kExitTempFail) {  // the keeper saw the lease could have ended
    finish(lease_gone());
  } else if (s_.mode == Mode::kOneshot) {
    // A command that cannot be started: oneshot reports it (127/126).
    finish(LeaderOutcome{AfterExit::Kind::kExit, e.code, Millis(0), "", {}});
  } else {
    // A supervise leader steps down, so a host that cannot run the service does not keep
    // it from the others.
    finish(LeaderOutcome{AfterExit::Kind::kRecontend, 0, Millis(0), "cannot start the command: " + e.error,
                         StepDown::kCannotStart});
  }
}

void LeaderMachine::begin_stop(StopCause why, int sig, Clock::time_point kill_at, const std::string& reason,
                               Clock::time_point now, Actions& out) {
  if (cause_ != StopCause::kNone || state_ != LeaderState::kRunning) return;
  cause_ = why;
  stop_kill_at_ = kill_at;
  stop_began_ = now;
  state_ = LeaderState::kStopping;
  if (child_gone_) return;  // the cause names how the run ended; there is nothing to stop
  if (kill_at < keeper_deadline_) {
    // A cut, decided now: the keeper holds it first, should this daemon stop running at
    // any point after (docs/DESIGN.md, invariant 2).
    keeper_deadline_ = kill_at;
    keeper_decided_ = now;
    keeper_told_ = now;
    emit<MoveDeadline>(out, {keeper_deadline_, keeper_decided_});
  }
  // A planned stop (shutdown, handover, pause --stop) is no warning; a stop forced by the lease, a
  // timeout or a failing host is.
  const bool asked = why == StopCause::kShutdown || (why == StopCause::kStepDown && planned(step_down_cause_));
  emit<Say>(out, {asked ? Level::kInfo : Level::kWarn, "stopping child pid=" + std::to_string(pid_) + " with " +
                                                                config::signal_name(sig) + ": " + reason});
  if (why == StopCause::kLeaseLost || why == StopCause::kDeadline) emit<Status>(out, {"lease lost: " + reason});
  emit<SignalGroup>(out, {sig});
  if (sig != SIGCONT && sig != SIGKILL) emit<SignalGroup>(out, {SIGCONT});
}

void LeaderMachine::tell_keeper(Clock::time_point now, const LeaseView& lease, Actions& out) {
  if (state_ != LeaderState::kRunning && state_ != LeaderState::kStopping) return;
  auto kill_at = stop_schedule(lease.valid_until, s_.kill_grace, s_.ttl).kill_at;
  auto decided = lease.renewed_at;
  if (state_ == LeaderState::kStopping && stop_kill_at_ < kill_at) {
    kill_at = stop_kill_at_;
    decided = stop_began_;
  }
  if (kill_at != keeper_deadline_) {
    // The keeper kills the tree at the same instant on its own, should the driver be
    // stopped or wedged (SIGSTOP of the daemon alone).
    keeper_deadline_ = kill_at;
    keeper_decided_ = decided;
  } else if (now < keeper_due()) {
    return;
  }
  // Unchanged, it is said again every half tick: a keeper that hears nothing for a tick
  // takes the daemon as unable to stop its child, and sends kill_signal itself.
  keeper_told_ = now;
  emit<MoveDeadline>(out, {keeper_deadline_, keeper_decided_});
}

void LeaderMachine::after_pause(const ChildSeen& child, Clock::time_point now, const LeaseView& lease,
                                Actions& out) {
  if (!running() || child_gone_) return;  // a tree already seen gone was said once
  if (state_ != LeaderState::kRunning && state_ != LeaderState::kStopping) return;
  // Past the deadline by more than the kill margin: the SIGKILL due a margin before it, by
  // this daemon and by the keeper, has not ended the tree in time.
  const auto late_after = lease.valid_until + kill_margin(s_.ttl);
  const bool alive_past = !child.ended && now > late_after;
  const bool killed_late = child.ended && child.keeper_signal != 0 && child.keeper_at > late_after;
  if (alive_past || killed_late) {
    const auto past = std::chrono::duration_cast<Millis>((alive_past ? now : child.keeper_at) - lease.valid_until);
    emit<Say>(out, {Level::kError, "this host was frozen " + format_duration(past) +
                                         " past its lease (SIGSTOP, a paused VM, a stalled host): child pid=" +
                                         std::to_string(pid_) + " with token " + std::to_string(s_.token) +
                                         " may have overlapped the next holder; " +
                                         (alive_past ? std::string("killing it now")
                                                     : "its keeper killed it only as it ran again")});
    emit<FrozenPastLease>(out, {});
    emit<Status>(out, {"lease lost: frozen past the lease"});
    if (cause_ == StopCause::kNone) cause_ = StopCause::kDeadline;
  }
  if (alive_past) {
    if (state_ == LeaderState::kRunning) stop_began_ = now;
    state_ = LeaderState::kKilling;
    sigkill_at_ = now;
    emit<SignalGroup>(out, {SIGKILL});
    return;
  }
  if (!child.ended) return;
  // A daemon that had no turn for more than a tick (it takes one every half tick) could
  // not run: the child's end is for it to explain. One that ran on time explains only what
  // its keeper did (the same deadline, at the same instant); an end of the child's own is
  // taken the usual way.
  const bool paused = gap_ > s_.tick;
  if (!killed_late && !paused && child.keeper_signal == 0) return;
  child_gone_ = true;
  if (!killed_late) say_gone(child, now, lease, paused, out);
}

void LeaderMachine::say_gone(const ChildSeen& child, Clock::time_point now, const LeaseView& lease, bool paused,
                             Actions& out) {
  const auto sched = stop_schedule(lease.valid_until, s_.kill_grace, s_.ttl);
  const auto stop_at = state_ == LeaderState::kStopping ? std::min(stop_kill_at_, sched.kill_at) : sched.term_at;
  const std::string child_pid = "child pid=" + std::to_string(pid_);
  if (child.keeper_signal == SIGKILL && state_ == LeaderState::kStopping && !paused) {
    // As this daemon's own escalation says it (the keeper holds the stop's kill time too).
    const int asked = cause_ == StopCause::kShutdown && s_.mode == Mode::kOneshot ? stop_signal_ : s_.kill_signal;
    emit<Say>(out, {Level::kWarn, child_pid + " still running " +
                                        format_duration(std::chrono::duration_cast<Millis>(child.keeper_at - stop_began_)) +
                                        " after " + config::signal_name(asked) +
                                        "; its keeper sent SIGKILL to its tree"});
  } else if (child.keeper_signal != 0) {
    emit<Say>(out, {Level::kWarn, child_pid + " was stopped by its keeper with " +
                                        config::signal_name(child.keeper_signal) + " " +
                                        format_duration(std::chrono::duration_cast<Millis>(now - child.keeper_at)) +
                                        " ago, at the lease's stop time" +
                                        (paused ? ", while this daemon could not run (SIGSTOP, a paused VM?)" : "")});
  } else if (now < stop_at) {
    return;  // it ended by itself before anything was due: ChildExited says the rest
  } else if (cause_ == StopCause::kNone) {
    emit<Say>(out, {Level::kWarn, child_pid + " had ended when this daemon ran again, " +
                                        format_duration(std::chrono::duration_cast<Millis>(now - stop_at)) +
                                        " past the lease's stop time: the run counts as lost to the deadline"});
  }
  if (cause_ == StopCause::kNone) {
    cause_ = StopCause::kDeadline;
    emit<Status>(out, {"lease lost: the child's stop time passed"});
  }
}

void LeaderMachine::check_lease(Clock::time_point now, const LeaseView& lease, Actions& out) {
  if (state_ != LeaderState::kRunning) return;
  const auto sched = stop_schedule(lease.valid_until, s_.kill_grace, s_.ttl);
  const auto soon = std::min(sched.kill_at, now + s_.kill_grace);
  if (lease.lost) {
    begin_stop(StopCause::kLeaseLost, s_.kill_signal, soon, lease.lost_reason, now, out);
  } else if (now >= sched.term_at) {
    begin_stop(StopCause::kDeadline, s_.kill_signal, sched.kill_at,
               std::string(lease.refused ? "Redis refuses the renewal" : "no confirmed renewal") + "; lease deadline in " +
                   format_duration(until(lease.valid_until, now)),
               now, out);
  } else if (timeout_at_ && now >= *timeout_at_) {
    begin_stop(StopCause::kTimeout, s_.kill_signal, soon, "ran past timeout " + format_duration(*s_.timeout), now,
               out);
  } else if (!step_down_reason_.empty()) {
    begin_stop(StopCause::kStepDown, s_.kill_signal, soon, "stepping down: " + step_down_reason_, now, out);
  }
}

void LeaderMachine::on(const Tick& e, Clock::time_point now, const LeaseView& lease, Actions& out) {
  const auto sched = stop_schedule(lease.valid_until, s_.kill_grace, s_.ttl);
  after_pause(e.child, now, lease, out);
  check_lease(now, lease, out);
  if (!child_gone_) tell_keeper(now, lease, out);
  if (state_ == LeaderState::kStopping && !child_gone_ && now >= std::min(stop_kill_at_, sched.kill_at)) {
    const int asked = cause_ == StopCause::kShutdown && s_.mode == Mode::kOneshot ? stop_signal_ : s_.kill_signal;
    emit<Say>(out, {Level::kWarn, "child pid=" + std::to_string(pid_) + " still running " +
                                        format_duration(std::chrono::duration_cast<Millis>(now - stop_began_)) +
                                        " after " + config::signal_name(asked) + "; sending SIGKILL to its tree"});
    emit<SignalGroup>(out, {SIGKILL});
    state_ = LeaderState::kKilling;
    sigkill_at_ = now;
  }
  if (state_ == LeaderState::kKilling && now - sigkill_at_ >= kForceKillAfter) {
    // The tree did not die from a SIGKILL: the keeper is stopped or wedged. Kill it and
    // the job from here; the orphans come to the daemon and are killed on reaping.
    emit<Say>(out, {Level::kError, "child pid=" + std::to_string(pid_) + " survived SIGKILL for " +
                                         format_duration(kForceKillAfter) + "; killing its keeper pid=" +
                                         std::to_string(keeper_) + " from the daemon"});
    emit<ForceKill>(out, {});
    state_ = LeaderState::kForced;
  }
  if (state_ != LeaderState::kRestarting) return;
  if (!step_down_reason_.empty() && s_.mode == Mode::kSupervise) {
    // Asked to step down between two runs of the child (a handover during restart_delay).
    finish(step_down());
  } else if (stop_requested_) {
    finish(LeaderOutcome{AfterExit::Kind::kExit, 0, Millis(0), "", {}});
  } else if (lease.lost || !can_start_child(now, lease.valid_until, s_.kill_grace, s_.ttl)) {
    emit<Status>(out, {"lease lost: " + (lease.lost ? lease.lost_reason : std::string("deadline before restart"))});
    finish(LeaderOutcome{AfterExit::Kind::kRecontend, 0, s_.restart_delay, "", {}});
  } else if (now >= *restart_at_) {
    start(now, lease, out);
  }
}

void LeaderMachine::on(const Woke& e, Clock::time_point now, const LeaseView& lease, Actions& out) {
  // After any wake-up, a pause included (SIGSTOP, a VM freeze), the deadline is checked
  // before anything else: a child that ended while the lease ran out did not run to its
  // end under the lease.
  after_pause(e.child, now, lease, out);
  check_lease(now, lease, out);
}

void LeaderMachine::on(const HandoverAsked& e, Clock::time_point, const LeaseView&, Actions& out) {
  if (!step_down_reason_.empty()) return;
  if (e.pause) {
    // Said for what it is: an operator paused the key and asked the job to stop now. The
    // leader steps down like a handover and then waits for the pause like every host.
    emit<Say>(out, {Level::kInfo, "stop requested by `pause --stop` (a control message on " + s_.control_channel +
                                        "): the key is paused; stepping down"});
    step_down_reason_ = "stopped by `pause --stop`: the key is paused";
    step_down_cause_ = StepDown::kPause;
    return;
  }
  emit<Say>(out, {Level::kInfo, "handover requested (a control message on " + s_.control_channel + "); stepping down"});
  step_down_reason_ = "handover requested";
  step_down_cause_ = StepDown::kHandover;
}

void LeaderMachine::on(const HealthFailed& e, Clock::time_point, const LeaseView&, Actions&) {
  if (!step_down_reason_.empty() || state_ != LeaderState::kRunning) return;
  step_down_reason_ = e.why;
  step_down_cause_ = StepDown::kHealth;
}

void LeaderMachine::on(const Signals& e, Clock::time_point now, const LeaseView& lease, Actions& out) {
  for (int sig : e.forward) {
    if (!running() || child_gone_) continue;  // nothing left to forward to
    // Every one is forwarded; each signal is said at most once per kForwardSummary, with how many
    // went unsaid since (invariant 7: a terminal resized in a loop sends SIGWINCH by the
    // thousand).
    Forwarded& f = forwarded_[sig];
    if (f.said == Clock::time_point{} || now - f.said >= kForwardSummary) {
      std::string line = std::string("forwarding ") + config::signal_name(sig) + " to child pid=" + std::to_string(pid_);
      if (f.unsaid > 0) {
        line += " (and " + std::to_string(f.unsaid) + " more forwarded since the last line)";
      }
      emit<Say>(out, {Level::kInfo, std::move(line)});
      f = Forwarded{now, 0};
    } else {
      ++f.unsaid;
    }
    emit<SignalGroup>(out, {sig});
  }
  if (!e.stop) return;
  if (!stop_requested_) stop_signal_ = e.stop_signal;
  stop_requested_ = true;
  if (state_ != LeaderState::kRunning) return;
  // supervise stops its child the configured way; oneshot forwards the signal received.
  const int sig = s_.mode == Mode::kSupervise ? s_.kill_signal : stop_signal_;
  const auto sched = stop_schedule(lease.valid_until, s_.kill_grace, s_.ttl);
  begin_stop(StopCause::kShutdown, sig, std::min(sched.kill_at, now + s_.kill_grace), "shutdown requested", now, out);
}

void LeaderMachine::on(const ChildExited& e, Clock::time_point now, const LeaseView& lease, Actions& out) {
  if (!running()) return;
  state_ = LeaderState::kRestarting;  // until after_child decides
  child_gone_ = false;
  emit<DisarmHealth>(out, {});
  if (e.keeper_killed_by != 0) {
    // The job died of its death signal with the keeper, or was killed by the daemon as its
    // orphan: its own status is unknown (redisgo_task(1), EXIT STATUS: 71).
    emit<Say>(out, {Level::kError,
                    "the keeper process pid=" + std::to_string(keeper_) + " was killed from outside" +
                        (e.keeper_killed_by > 0 ? " by " + config::signal_name(e.keeper_killed_by) : std::string()) +
                        " (the OOM killer?): the job was killed with it"});
  }
  emit<Say>(out, {e.code == 0 || cause_ != StopCause::kNone ? Level::kInfo : Level::kWarn,
                    "child exited status=" + std::to_string(e.code)});
  after_child(e.code, now, lease, out);
}

void LeaderMachine::after_child(int code, Clock::time_point now, const LeaseView& lease, Actions& out) {
  // Whether the renewals were refused is the renewal thread's to say (LeaseView::refused): it
  // keeps its last round's answer once the lease is lost.
  ExitContext ec{s_.mode, s_.restart, s_.restart_delay, code, cause_, lease.refused};
  ec.stop_requested = stop_requested_;
  ec.lease_lost = lease.lost;
  ec.step_down = step_down_cause_;
  ec.step_down_reason = step_down_reason_;
  ec.restart_window = s_.restart_window;
  ec.restart_limit = s_.restart_limit;
  const AfterExit next = after_exit(ec, &restarts_, now);
  if (next.kind == AfterExit::Kind::kRestart) {
    emit<Say>(out, {Level::kInfo, "restarting child in " + format_duration(next.delay) +
                                        " (restart=" + config::to_string(s_.restart) + ")"});
    restart_at_ = now + next.delay;
    state_ = LeaderState::kRestarting;
    return;
  }
  finish(LeaderOutcome{next.kind, next.exit_code, next.delay, next.step_down, next.cause, next.lease_ended});
}

}  // namespace redisgo::daemon
