#include "daemon/leader_driver.h"

#include <algorithm>
#include <utility>

#include "daemon/health.h"
#include "log/logging.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/error.h"

namespace redisgo::daemon {
namespace {

LeaseView view(const lock::Renewer& r) {
  LeaseView v;
  v.valid_until = r.valid_until();
  v.renewed_at = r.renewed_at();  // after valid_until: its stamp or a later one
  v.lost = r.lost();
  if (v.lost) v.lost_reason = r.lost_reason();
  v.refused = r.refused();
  return v;
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

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

/// The leader phase's live objects: its machine and what the driver acts through.
struct LeaderDriver::Leading {
  Leading(LeaderSettings s, RestartTracker& restarts, lock::Renewer& r, process::SpawnOptions spawn,
          const config::TaskConfig& task, const Clock& clock)
      : machine(std::move(s), restarts), renewer(r), spawn_base(std::move(spawn)),
        health(task, log::get("health"), clock) {}
  LeaderMachine machine;
  lock::Renewer& renewer;
  const process::SpawnOptions spawn_base;
  HealthCheck health;
  std::unique_ptr<process::Job> child;
  /// supervise: a handover (a control message naming this holder, or "any") is heard on
  /// every node's control channel while this lease lasts.
  std::vector<std::unique_ptr<redis::Subscription>> control;
  std::vector<int> control_failures;
  std::uint64_t renewals_seen = 0;
};

std::optional<int> LeaderDriver::lead(const lock::Acquisition& acquired) {
  notices_.acquired(acquired);
  // Whatever way this lease ends, the gauges say so.
  struct NotLeader {
    metrics::Metrics& m;
    ~NotLeader() {
      m.set_lease_deadline(std::nullopt);
      if (m.state() == metrics::State::kLeader) m.set_state(metrics::State::kStandby);
    }
  } not_leader{ctx_.metrics};
  renewer_wake_.clear();
  notices_.warn_larger_limit();
  std::unique_ptr<lock::Renewer> renewer = start_renewer(acquired);
  if (!renewer) return kExitSoftware;
  // A stop that arrived while acquiring (between the last look and now) starts no child.
  loop_.read_signals();
  if (loop_.stop_requested()) {
    release_lease(*renewer);
    return ctx_.stopped_while_waiting();
  }
  if (auto unclaimed = once_.claim(acquired)) {
    release_lease(*renewer);
    loop_.read_signals();
    if (loop_.stop_requested()) return ctx_.stopped_while_waiting();
    return once_.not_run(*unclaimed);
  }
  const auto& cfg = ctx_.cfg;
  loop_.say_status("leader token=" + std::to_string(acquired.token) +
                   (cfg.task.limit > 1 ? " slot=" + std::to_string(acquired.slot) : std::string()));
  LeaderSettings settings = LeaderSettings::from(cfg);
  settings.token = acquired.token;
  process::SpawnOptions spawn = spawn_options(cfg);
  add_task_env(spawn, cfg, ctx_.opts.holder, acquired.token, acquired.slot);
  Leading l(std::move(settings), ctx_.restarts, *renewer, std::move(spawn), cfg.task, ctx_.clock);
  if (cfg.task.mode == config::Mode::kSupervise) {
    for (const auto& node : ctx_.lease_opts.nodes) l.control.push_back(ctx_.deps.make_subscriber(node, ctx_.keys.control));
  }
  l.control_failures.assign(l.control.size(), 0);
  run_leader(l);
  return end_lease(l);
}

std::unique_ptr<lock::Renewer> LeaderDriver::start_renewer(const lock::Acquisition& acquired) {
  try {
    auto make = [this, slot = acquired.slot, token = acquired.token, granted = acquired.granted](int cancel_fd) {
      lock::LeaseOptions o = ctx_.lease_opts;
      o.cancel_fd = cancel_fd;
      o.slot = slot;
      o.token = token;
      o.granted_on = granted;
      once_.add_to(o);
      // A node that failed is tried again at the renewer's own retry pace, not after the
      // node's doubling backoff: a Redis back from a restart within a second must get the
      // next renewal, or the child is stopped for nothing (the pace is still >= 100 ms).
      o.node_retry_max = std::min(o.node_retry_max, lock::Renewer::retry_interval(ctx_.cfg.redis.cron));
      o.node_retry_initial = std::min(o.node_retry_initial, o.node_retry_max);
      return ctx_.deps.make_backend(o, ctx_.clock);
    };
    return std::make_unique<lock::Renewer>(make, ctx_.cfg.redis.cron, acquired.started, acquired.valid_until,
                                           renewer_wake_, ctx_.clock,
                                           [this](const lock::Renewal& r) { notices_.renewal(r); });
  } catch (const std::exception& e) {
    // No renewal means no safe child: release first, then report the bug (exit 70, redisgo_task(1), EXIT STATUS).
    ctx_.log->error("cannot start the renewal thread: {}; releasing", e.what());
    notices_.log_release(ctx_.backend->release());
    return nullptr;
  }
}

bool LeaderDriver::drive(Leading& l, const leader::Event& event) {
  using namespace leader;
  bool spawned = false;
  for (const Action& action : l.machine.step(event, ctx_.clock.now(), view(l.renewer))) {
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

std::optional<int> LeaderDriver::end_lease(Leading& l) {
  if (l.child && l.child->running()) l.child->terminate_group(SIGKILL, Millis(0));  // never outlive the lease phase
  l.health.disarm();
  if (l.renewer.lost()) {
    notices_.lease_lost(l.renewer.lost_reason());
  } else if (l.machine.cause() == StopCause::kDeadline) {
    notices_.lease_past_deadline();
  }
  const LeaderOutcome outcome = *l.machine.outcome();
  // once_per: the claim records how the run ended (before the release, so that whoever
  // takes the lease next finds it complete).
  if (outcome.kind == AfterExit::Kind::kExit) once_.finish(outcome.exit_code);
  release_lease(l.renewer);
  ctx_.metrics.set_lease_deadline(std::nullopt);
  ctx_.metrics.set_state(metrics::State::kStandby);
  if (outcome.kind == AfterExit::Kind::kExit) {
    if (outcome.exit_code == kExitNoPerm && l.renewer.refused()) hold_.say_refused_at_exit(l.renewer.refusal());
    return outcome.exit_code;
  }
  if (outcome.cause != StepDown::kNone) {
    ctx_.metrics.add_step_down(to_string(outcome.cause));
    if (outcome.cause == StepDown::kRenewalRefused) return hold_.while_refused(l.renewer.refusal(), outcome.step_down);
    return hold_.after_step_down(outcome.step_down, planned(outcome.cause));
  }
  loop_.say_status("standby");
  ctx_.log->info("contending again in {}", format_duration(outcome.delay));
  if (!loop_.sleep_until(ctx_.clock.now() + outcome.delay)) return ctx_.stopped_while_waiting();
  return std::nullopt;
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

void LeaderDriver::release_lease(lock::Renewer& renewer) {
  // Once a renewal round has gone out, the release follows it on the same connections:
  // a round still queued at a slow node then runs before the DEL, never after it (where
  // it would set the key again for a holder that has gone). Those connections are also
  // the freshest (the main ones may have idled for hours). Before any round, the main
  // ones that just acquired: the renewer's may not even be open (a short job costs no
  // reconnect).
  renewer.stop();  // joined: no round begins after this
  notices_.log_release(renewer.rounds() > 0 ? renewer.stop_and_release() : ctx_.backend->release());
  ctx_.backend->released_elsewhere();
}

}  // namespace redisgo::daemon
