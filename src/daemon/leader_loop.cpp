// The leader machine's loop (leader_driver.h): each turn feeds LeaderMachine what the event
// loop saw (a tick, the wake-up, the control channels, the health check, signals, the child's
// end) and carries out its actions: the child's start and signals, its keeper's deadline, the
// health check, the log and STATUS=.
#include <algorithm>
#include <utility>

#include "daemon/leader_driver.h"
#include "daemon/leading.h"
#include "log/logging.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/exit_status.h"
#include "util/error.h"
#include "util/overloaded.h"

namespace redisgo::daemon {
namespace {

/// The exit status of a child that could not be started (redisgo_task(1), EXIT STATUS).
int spawn_failure_status(process::SpawnError::Cause cause) {
  switch (cause) {
    case process::SpawnError::Cause::kNotFound: return exit_status(Outcome::kNotFound);
    case process::SpawnError::Cause::kCannotRun: return exit_status(Outcome::kCannotRun);
    case process::SpawnError::Cause::kTooLate: return exit_status(Outcome::kLeaseLost);
  }
  return exit_status(Outcome::kCannotRun);
}

}  // namespace

bool LeaderDriver::drive(Leading& l, const leader::Event& event) {
  using namespace leader;
  bool spawned = false;
  for (const leader::Action& action : l.machine.step(event, ctx_.clock.now(), view(l.renewer))) {
    std::visit(Overloaded{
                   [&](const Spawn& a) {
                     drive(l, spawn_child(l, a.kill_at));
                     spawned = true;
                   },
                   [&](const SignalGroup& a) { l.child->signal_group(a.sig); },
                   [&](const ForceKill&) { l.child->force_kill(); },
                   [&](const MoveDeadline& a) {
                     const auto kill_at = a.kill_at.time_since_epoch().count();
                     const auto decided = a.decided.time_since_epoch().count();
                     l.child->set_deadline(kill_at, decided);
                     l.health.set_deadline(kill_at, decided);
                   },
                   [&](const FrozenPastLease&) { ctx_.metrics.add_freeze_past_lease(); },
                   [&](const ArmHealth& a) { l.health.arm(l.spawn_base, a.kill_at.time_since_epoch().count()); },
                   [&](const DisarmHealth&) { l.health.disarm(); },
                   [&](const Say& a) { notices_.say(a.level, a.text); },
                   [&](const Status& a) { loop_.say_status(a.text); },
               },
               action);
  }
  return spawned;
}

leader::ChildSeen LeaderDriver::child_seen(Leading& l) {
  leader::ChildSeen seen;
  // Reaped without blocking (and again, with the same answer, for ChildExited).
  if (!l.machine.running() || !l.child || !l.child->try_wait()) return seen;
  seen.ended = true;
  const process::KeeperAct act = l.child->keeper_act();
  seen.keeper_signal = act.signal;
  seen.keeper_at = Clock::time_point(Clock::duration(act.at_ns));
  return seen;
}

void LeaderDriver::run_leader(Leading& l) {
  drive(l, leader::Start{});
  // After the child's start (or its failure): the first renewal is due a cron after the
  // acquisition was sent however late the thread starts, and the lease's deadline holds
  // without it (only a confirmed renewal moves it). A lease that ended with the start
  // (a oneshot whose child could not run) needs no thread.
  if (!l.machine.done()) l.renewer.start();
  std::vector<pollfd> fds;
  while (!l.machine.done()) {
    const leader::ChildSeen seen = child_seen(l);
    if (drive(l, leader::Tick{seen})) continue;  // a restart started the child: the turn again
    if (l.machine.done()) break;
    std::size_t first_control = 0;
    wait_turn(l, seen, fds, first_control);
    after_poll(l, fds, first_control);
  }
}

void LeaderDriver::wait_turn(Leading& l, const leader::ChildSeen& seen, std::vector<pollfd>& fds,
                             std::size_t& first_control) {
  const LeaseView lease = view(l.renewer);
  if (l.renewer.renewals() != l.renewals_seen) {
    l.renewals_seen = l.renewer.renewals();
    ctx_.log->debug("lease renewed ({}); valid for {}", l.renewals_seen,
                    format_duration(until(lease.valid_until, ctx_.clock.now())));
  }
  // Sleep until the next thing that could need doing (boot-time timer: a host suspend
  // does not postpone the lease deadline), the keeper's next word included.
  auto next = std::min(l.machine.next_wakeup(lease), l.machine.keeper_due());
  if (l.machine.serving()) next = std::min(next, l.health.next_wakeup());
  const bool running = l.machine.running();
  std::optional<Millis> cap;
  if (running && (l.machine.killing() || l.child->exit_fd() < 0)) cap = Millis(50);  // re-check reaping
  if (seen.ended) cap = Millis(0);  // the rest of this turn takes the child's end
  fds.assign({{loop_.signal_fd(), POLLIN, 0}, {renewer_wake_.fd(), POLLIN, 0}});
  if (running && l.child->exit_fd() >= 0) fds.push_back({l.child->exit_fd(), POLLIN, 0});
  l.health.append_fds(fds);
  first_control = fds.size();
  const auto steady_now = redis::SteadyClock::now();
  for (auto& c : l.control) {
    c->maintain(steady_now);
    fds.push_back({c->fd(), c->events(), 0});
    if (auto at = c->next_wakeup(); at != redis::SteadyClock::time_point::max()) {
      const auto ms = std::max(Millis(0), std::chrono::ceil<Millis>(at - steady_now));
      cap = cap ? std::min(*cap, ms) : ms;
    }
  }
  loop_.poll_until(fds, next, cap);
}

void LeaderDriver::after_poll(Leading& l, const std::vector<pollfd>& fds, std::size_t first_control) {
  if (fds[1].revents & POLLIN) renewer_wake_.clear();
  // The lease before anything else after a wake-up (a pause included): a child alive past
  // the deadline is killed before a health check could start or a message be taken.
  drive(l, leader::Woke{child_seen(l)});
  service_control(l, fds, first_control);
  if (l.machine.serving()) {
    if (auto why = l.health.service(fds)) drive(l, leader::HealthFailed{*why});
  } else {
    l.health.disarm();
  }
  drive(l, leader::Signals{loop_.read_signals(), loop_.stop_requested(), loop_.stop_signal()});
  if (l.machine.running()) {
    if (auto code = l.child->try_wait()) {
      ctx_.metrics.set_child_exit(*code);
      if (*code == 0) ctx_.metrics.set_last_success(wall_seconds());
      drive(l, leader::ChildExited{*code, l.child->keeper_killed_by()});
    }
  }
}

void LeaderDriver::service_control(Leading& l, const std::vector<pollfd>& fds, std::size_t first) {
  for (std::size_t i = 0; i < l.control.size(); ++i) {
    auto& c = l.control[i];
    if (fds[first + i].revents != 0) c->on_ready(fds[first + i].revents);
    c->maintain(redis::SteadyClock::now());
    if (c->failures() > l.control_failures[i]) {
      // A leader that cannot hear handover requests (an ACL user without the control
      // channel) says so once; nothing else depends on it.
      l.control_failures[i] = c->failures();
      if (lock::server_answered(c->last_fault())) {
        notices_.subscribe_failed(c->describe() + " control", c->last_error(), "handover requests are not heard");
      }
    }
    for (const auto& message : c->take_payloads()) {
      const lock::Control heard = lock::read_control(message, ctx_.opts.holder);
      if (heard == lock::Control::kNone) continue;
      notices_.control_heard(heard);
      drive(l, leader::HandoverAsked{heard == lock::Control::kPauseStop});
    }
  }
}

leader::Event LeaderDriver::spawn_child(Leading& l, Clock::time_point kill_at) {
  process::SpawnOptions spawn = l.spawn_base;
  spawn.deadline_ns = kill_at.time_since_epoch().count();
  std::string error;
  int code = 0;
  try {
    l.child = ctx_.deps.spawner->spawn(spawn);
    ctx_.metrics.add_child_start();
    ctx_.metrics.set_last_start(wall_seconds());
    ctx_.log->info("child started pid={} token={}{}", l.child->pid(), spawn.env["REDISGO_TASK_TOKEN"],
                   ctx_.cfg.task.limit > 1 ? " slot=" + spawn.env["REDISGO_TASK_SLOT"] : std::string());
    return leader::Spawned{l.child->pid(), l.child->keeper_pid()};
  } catch (const process::SpawnError& e) {
    error = e.what();
    code = spawn_failure_status(e.cause());
  } catch (const Error& e) {
    error = e.what();
    code = exit_status(Outcome::kCannotRun);
  }
  if (code == kExitTempFail) {
    ctx_.log->warn("{}", error);  // the lease ran out before the keeper could start the child
  } else {
    ctx_.log->error("cannot start the child: {}", error);
  }
  return leader::SpawnFailed{code, error};
}

}  // namespace redisgo::daemon
