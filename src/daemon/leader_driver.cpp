#include "daemon/leader_driver.h"

#include <algorithm>
#include <utility>

#include "daemon/leading.h"
#include "log/logging.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/exit_status.h"
#include "util/error.h"

namespace redisgo::daemon {

LeaseView view(const lock::Renewer& r) {
  LeaseView v;
  v.valid_until = r.valid_until();
  v.renewed_at = r.renewed_at();  // after valid_until: its stamp or a later one
  v.lost = r.lost();
  if (v.lost) v.lost_reason = r.lost_reason();
  v.refused = r.refused();
  return v;
}

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
    auto make = [this, base = lock::Renewer::backend_options(ctx_.lease_opts, acquired, ctx_.cfg.redis.cron)](
                    int cancel_fd) {
      lock::LeaseOptions o = base;
      o.cancel_fd = cancel_fd;
      once_.add_to(o);
      return ctx_.deps.make_backend(o, ctx_.clock);
    };
    // Its thread starts once the child has (run_leader): until the first renewal is due
    // (a cron after the acquisition was sent) it has nothing to do, and starting it first
    // put a thread's creation and first run before the keeper's fork.
    return std::make_unique<lock::Renewer>(make, ctx_.cfg.redis.cron, acquired.started, acquired.valid_until,
                                           renewer_wake_, ctx_.clock,
                                           [this](const lock::Renewal& r) { notices_.renewal(r); },
                                           lock::Renewer::Start::kLater);
  } catch (const std::exception& e) {
    // No renewal means no safe child: release first, then report the bug (exit 70, redisgo_task(1), EXIT STATUS).
    ctx_.log->error("cannot start the renewal thread: {}; releasing", e.what());
    notices_.log_release(ctx_.backend->release());
    return nullptr;
  }
}

std::optional<int> LeaderDriver::end_lease(Leading& l) {
  if (l.child && l.child->running()) l.child->terminate_group(SIGKILL, Millis(0));  // never outlive the lease phase
  l.health.disarm();
  if (l.renewer.lost()) {
    notices_.lease_lost(l.renewer.lost_reason(), l.renewer.lost_by_deadline());
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
    if (outcome.lease_ended) notices_.ended_with_lease(outcome.exit_code);
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

void LeaderDriver::release_lease(lock::Renewer& renewer) {
  // Once a renewal round has gone out, the release follows it on the same connections:
  // a round still queued at a slow node then runs before the DEL, never after it (where
  // it would set the key again for a holder that has gone). Those connections are also
  // the freshest (the main ones may have idled for hours). Before any round, the main
  // ones that just acquired: the renewer's may not even be open (a short job costs no
  // reconnect). No round begins once the release is decided (Renewer::stop_and_release).
  notices_.log_release(renewer.stop_and_release(*ctx_.backend));
  ctx_.backend->released_elsewhere();
}

}  // namespace redisgo::daemon
