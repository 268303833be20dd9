#include <algorithm>
#include <utility>

#include "daemon/health.h"
#include "daemon/runner.h"
#include "log/logging.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/exit_status.h"

namespace redisgo::daemon {
namespace {

using config::Mode;

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

}  // namespace

/// The leader phase's live objects: its machine and what the driver acts through.
struct Runner::Leading {
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
  std::vector<std::unique_ptr<redis::Subscriber>> control;
  std::vector<int> control_failures;
  /// A handover or a pause --stop was counted in redisgo_task_control_requests_total: every
  /// node carries the request, and it counts once.
  bool handover_counted = false;
  bool pause_counted = false;
  std::uint64_t renewals_seen = 0;
};

static_assert(lock::kMaxSlots == config::kMaxLimit);

void Runner::warn_larger_limit() {
  // One EXISTS of the slot keys beyond our limit: slots there mean a daemon of a larger limit
  // holds this key too, so more than `limit` children run, which this daemon cannot prevent.
  // Asked at the first miss while waiting, or else before the first child, and then before
  // a child starts at most every kLimitCheckEvery (never while it runs: a round on a slow
  // node must not hold up the leader's loop). Not at every acquisition: it would cost each
  // handover a round trip and two commands in the second after a release, when the herd of
  // standbys is busiest; mixed limits are a deployment's lasting state, which one look every
  // few minutes finds, and `status` and `check` show at once.
  if (cfg_.task.limit >= config::kMaxLimit) return;
  const auto now = clock_.now();
  if (limit_checked_ && now - *limit_checked_ < kLimitCheckEvery) return;
  limit_checked_ = now;
  const int beyond = backend_->slots_beyond_limit();
  if (beyond <= 0) return;
  log_->error("key {}: {} slot(s) beyond this daemon's limit = {} are held: a daemon of this key runs a larger limit, "
              "so more than {} job(s) run at once; set one limit on every daemon of this key (`status` and `check` "
              "show it)",
              cfg_.redis.key, beyond, cfg_.task.limit, cfg_.task.limit);
}

std::optional<int> Runner::lead(const lock::Acquisition& acquired) {
  log_->info("acquired key={} token={}{} valid for {}", cfg_.redis.key, acquired.token,
             cfg_.task.limit > 1 ? " slot=" + std::to_string(acquired.slot) : std::string(),
             format_duration(until(acquired.valid_until, clock_.now())));
  metrics_.add_acquisition();
  metrics_.set_token(acquired.token);
  metrics_.set_state(metrics::State::kLeader);
  metrics_.set_line_position(0);  // out of the line: the lease is ours
  metrics_.set_lease_deadline(acquired.valid_until);
  // Whatever way this lease ends, the gauges say so.
  struct NotLeader {
    metrics::Metrics& m;
    ~NotLeader() {
      m.set_lease_deadline(std::nullopt);
      if (m.state() == metrics::State::kLeader) m.set_state(metrics::State::kStandby);
    }
  } not_leader{metrics_};
  renewer_wake_.clear();
  lease_loss_counted_ = false;
  warn_larger_limit();
  std::unique_ptr<lock::Renewer> renewer = start_renewer(acquired);
  if (!renewer) return kExitSoftware;
  // A stop that arrived while acquiring (between the last look and now) starts no child.
  read_signals();
  if (stop_requested_) {
    release_lease(*renewer);
    return stopped_while_waiting();
  }
  if (auto code = claim_slot(acquired, *renewer)) return *code;
  say_status("leader token=" + std::to_string(acquired.token) +
                   (cfg_.task.limit > 1 ? " slot=" + std::to_string(acquired.slot) : std::string()));
  LeaderSettings settings = LeaderSettings::from(cfg_);
  settings.token = acquired.token;
  Leading l(std::move(settings), restarts_, *renewer, child_spawn(acquired), cfg_.task, clock_);
  if (cfg_.task.mode == Mode::kSupervise) {
    for (const auto& node : lease_opts_.nodes) {
      l.control.push_back(std::make_unique<redis::Subscriber>(node, keys_.control));
    }
  }
  l.control_failures.assign(l.control.size(), 0);
  run_leader(l);
  return end_lease(l);
}

std::unique_ptr<lock::Renewer> Runner::start_renewer(const lock::Acquisition& acquired) {
  claim_made_ = std::make_shared<std::atomic<bool>>(false);  // set by claim_slot
  try {
    auto make = [this, slot = acquired.slot, token = acquired.token, granted = acquired.granted](int cancel_fd) {
      lock::LeaseOptions o = lease_opts_;
      o.cancel_fd = cancel_fd;
      o.slot = slot;
      o.token = token;
      o.granted_on = granted;
      if (once_key_) {
        o.claim_key = *once_key_;
        o.claim_ttl = claim_ttl();
        o.claim_start_ms = started_ms_;
        o.claim_made = claim_made_;
      }
      // A node that failed is tried again at the renewer's own retry pace, not after the
      // node's doubling backoff: a Redis back from a restart within a second must get the
      // next renewal, or the child is stopped for nothing (the pace is still >= 100 ms).
      o.node_retry_max = std::min(o.node_retry_max, lock::Renewer::retry_interval(cfg_.redis.cron));
      o.node_retry_initial = std::min(o.node_retry_initial, o.node_retry_max);
      return deps_.make_backend(o, clock_);
    };
    // A node that fails while we lead is reported once per cause, then summarised, across
    // leads too: a minority node's lasting fault is not news at each lead.
    auto observe = [this](const lock::Renewal& r) {
      for (const auto& node : r.answered) renew_log_.success(node);
      for (const auto& e : r.errors) {
        if (!e.node.empty()) renew_log_.failure(cause_key(e), e.message);
      }
      note_nodes(r.answered, r.errors);
      metrics_.add_renewal(r.confirmed ? "confirmed" : r.lost ? "lost" : "failed",
                           std::chrono::duration<double>(r.took).count());
      if (r.confirmed) metrics_.set_lease_deadline(r.valid_until);
    };
    return std::make_unique<lock::Renewer>(make, cfg_.redis.cron, acquired.started, acquired.valid_until,
                                           renewer_wake_, clock_, observe);
  } catch (const std::exception& e) {
    // No renewal means no safe child: release first, then report the bug (exit 70, redisgo_task(1), EXIT STATUS).
    log_->error("cannot start the renewal thread: {}; releasing", e.what());
    log_release(backend_->release());
    return nullptr;
  }
}

bool Runner::drive(Leading& l, const leader::Event& event) {
  using namespace leader;
  bool spawned = false;
  for (const Action& action : l.machine.step(event, clock_.now(), view(l.renewer))) {
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
                   [&](const FrozenPastLease&) { metrics_.add_freeze_past_lease(); },
                   [&](const ArmHealth& a) { l.health.arm(l.spawn_base, a.kill_at.time_since_epoch().count()); },
                   [&](const DisarmHealth&) { l.health.disarm(); },
                   [&](const Say& a) {
                     switch (a.level) {
                       case Level::kDebug: log_->debug("{}", a.text); break;
                       case Level::kInfo: log_->info("{}", a.text); break;
                       case Level::kWarn: log_->warn("{}", a.text); break;
                       case Level::kError: log_->error("{}", a.text); break;
                     }
                   },
                   [&](const Status& a) { say_status(a.text); },
               },
               action);
  }
  return spawned;
}

leader::ChildSeen Runner::child_seen(Leading& l) {
  leader::ChildSeen seen;
  // Reaped without blocking (and again, with the same answer, for ChildExited).
  if (!l.machine.running() || !l.child || !l.child->try_wait()) return seen;
  seen.ended = true;
  const process::KeeperAct act = l.child->keeper_act();
  seen.keeper_signal = act.signal;
  seen.keeper_at = Clock::time_point(Clock::duration(act.at_ns));
  return seen;
}

void Runner::run_leader(Leading& l) {
  drive(l, leader::Start{});
  std::vector<pollfd> fds;
  while (!l.machine.done()) {
    const leader::ChildSeen seen = child_seen(l);
    if (drive(l, leader::Tick{seen})) continue;  // a restart started the child: the turn again
    if (l.machine.done()) break;
    const LeaseView lease = view(l.renewer);
    if (l.renewer.renewals() != l.renewals_seen) {
      l.renewals_seen = l.renewer.renewals();
      log_->debug("lease renewed ({}); valid for {}", l.renewals_seen,
                  format_duration(until(lease.valid_until, clock_.now())));
    }
    // Sleep until the next thing that could need doing (boot-time timer: a host suspend
    // does not postpone the lease deadline), the keeper's next word included.
    auto next = std::min(l.machine.next_wakeup(lease), l.machine.keeper_due());
    if (l.machine.serving()) next = std::min(next, l.health.next_wakeup());
    const bool running = l.machine.running();
    std::optional<Millis> cap;
    if (running && (l.machine.killing() || l.child->exit_fd() < 0)) cap = Millis(50);  // re-check reaping
    if (seen.ended) cap = Millis(0);  // the rest of this turn takes the child's end
    fds.assign({{signals_.fd(), POLLIN, 0}, {renewer_wake_.fd(), POLLIN, 0}});
    if (running && l.child->exit_fd() >= 0) fds.push_back({l.child->exit_fd(), POLLIN, 0});
    l.health.append_fds(fds);
    const std::size_t first_control = fds.size();
    const auto steady_now = redis::SteadyClock::now();
    for (auto& c : l.control) {
      c->maintain(steady_now);
      fds.push_back({c->fd(), c->events(), 0});
      if (auto at = c->next_wakeup(); at != redis::SteadyClock::time_point::max()) {
        const auto ms = std::max(Millis(0), std::chrono::ceil<Millis>(at - steady_now));
        cap = cap ? std::min(*cap, ms) : ms;
      }
    }
    poll_until(fds, next, cap);
    after_poll(l, fds, first_control);
  }
}

void Runner::after_poll(Leading& l, const std::vector<pollfd>& fds, std::size_t first_control) {
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
  drive(l, leader::Signals{read_signals(), stop_requested_, stop_signal_});
  if (l.machine.running()) {
    if (auto code = l.child->try_wait()) {
      metrics_.set_child_exit(*code);
      if (*code == 0) metrics_.set_last_success(wall_seconds());
      drive(l, leader::ChildExited{*code, l.child->keeper_killed_by()});
    }
  }
}

void Runner::service_control(Leading& l, const std::vector<pollfd>& fds, std::size_t first) {
  for (std::size_t i = 0; i < l.control.size(); ++i) {
    auto& c = l.control[i];
    if (fds[first + i].revents != 0) c->on_ready(fds[first + i].revents);
    c->maintain(redis::SteadyClock::now());
    if (c->failures() > l.control_failures[i]) {
      // A leader that cannot hear handover requests (an ACL user without the control
      // channel) says so once; nothing else depends on it.
      l.control_failures[i] = c->failures();
      if (lock::server_answered(c->last_fault())) {
        subscribe_log_.failure(c->describe() + " control", c->last_error() + " (handover requests are not heard)");
      }
    }
    for (const auto& message : c->take_payloads()) {
      switch (lock::read_control(message, opts_.holder)) {
        case lock::Control::kHandover:
          if (!std::exchange(l.handover_counted, true)) metrics_.add_control_request("handover");
          drive(l, leader::HandoverAsked{});
          break;
        case lock::Control::kPauseStop:
          if (!std::exchange(l.pause_counted, true)) {
            metrics_.add_control_request("pause");
            pause_stop_heard_ = true;
          }
          drive(l, leader::HandoverAsked{true});
          break;
        case lock::Control::kNone: break;
      }
    }
  }
}

std::optional<int> Runner::end_lease(Leading& l) {
  if (l.child && l.child->running()) l.child->terminate_group(SIGKILL, Millis(0));  // never outlive the lease phase
  l.health.disarm();
  if (l.renewer.lost()) {
    log_->warn("lease lost: {}", l.renewer.lost_reason());
    metrics_.add_lease_loss("lost");
    lease_loss_counted_ = true;
  } else if (l.machine.cause() == StopCause::kDeadline) {
    metrics_.add_lease_loss("deadline");
    lease_loss_counted_ = true;
  }
  const LeaderOutcome outcome = *l.machine.outcome();
  // once_per: the claim records how the run ended (before the release, so that whoever
  // takes the lease next finds it complete).
  if (once_key_ && outcome.kind == AfterExit::Kind::kExit) {
    backend_->finish_claim(*once_key_, std::to_string(outcome.exit_code));
  }
  release_lease(l.renewer);
  metrics_.set_lease_deadline(std::nullopt);
  metrics_.set_state(metrics::State::kStandby);
  if (outcome.kind == AfterExit::Kind::kExit) {
    if (outcome.exit_code == kExitNoPerm && l.renewer.refused()) say_refused_at_exit(l.renewer.refusal());
    return outcome.exit_code;
  }
  if (outcome.cause != StepDown::kNone) {
    metrics_.add_step_down(to_string(outcome.cause));
    if (outcome.cause == StepDown::kRenewalRefused) return hold_while_refused(l.renewer.refusal(), outcome.step_down);
    return hold_after_step_down(outcome.step_down, planned(outcome.cause));
  }
  say_status("standby");
  log_->info("contending again in {}", format_duration(outcome.delay));
  if (wait_until(clock_.now() + outcome.delay, false).end == standby::End::kShutdown) return stopped_while_waiting();
  return std::nullopt;
}

process::SpawnOptions Runner::child_spawn(const lock::Acquisition& lease) const {
  process::SpawnOptions spawn = spawn_options(cfg_);
  add_task_env(spawn, cfg_, opts_.holder, lease.token, lease.slot);
  return spawn;
}

leader::Event Runner::spawn_child(Leading& l, Clock::time_point kill_at) {
  process::SpawnOptions spawn = l.spawn_base;
  spawn.deadline_ns = kill_at.time_since_epoch().count();
  std::string error;
  int code = 0;
  try {
    l.child = deps_.spawner->spawn(spawn);
    metrics_.add_child_start();
    metrics_.set_last_start(wall_seconds());
    log_->info("child started pid={} token={}{}", l.child->pid(), spawn.env["REDISGO_TASK_TOKEN"],
               cfg_.task.limit > 1 ? " slot=" + spawn.env["REDISGO_TASK_SLOT"] : std::string());
    return leader::Spawned{l.child->pid(), l.child->keeper_pid()};
  } catch (const process::SpawnError& e) {
    error = e.what();
    switch (e.cause()) {
      case process::SpawnError::Cause::kNotFound: code = exit_status(Outcome::kNotFound); break;
      case process::SpawnError::Cause::kCannotRun: code = exit_status(Outcome::kCannotRun); break;
      case process::SpawnError::Cause::kTooLate: code = exit_status(Outcome::kLeaseLost); break;
    }
  } catch (const Error& e) {
    error = e.what();
    code = exit_status(Outcome::kCannotRun);
  }
  if (code == kExitTempFail) {
    log_->warn("{}", error);  // the lease ran out before the keeper could start the child
  } else {
    log_->error("cannot start the child: {}", error);
  }
  return leader::SpawnFailed{code, error};
}

void Runner::release_lease(lock::Renewer& renewer) {
  // Once a renewal round has gone out, the release follows it on the same connections:
  // a round still queued at a slow node then runs before the DEL, never after it (where
  // it would set the key again for a holder that has gone). Those connections are also
  // the freshest (the main ones may have idled for hours). Before any round, the main
  // ones that just acquired: the renewer's may not even be open (a short job costs no
  // reconnect).
  renewer.stop();  // joined: no round begins after this
  log_release(renewer.rounds() > 0 ? renewer.stop_and_release() : backend_->release());
  backend_->released_elsewhere();
}

void Runner::report_taken(const lock::Release& r) {
  // Nothing had said that the lease was lost, or the child would have been stopped: it ran
  // on while another holder's child could run. The child's exit status stands (it ran to its
  // end), but this must not be a quiet line: error, a lease loss of its own cause, and the
  // cron wrapper mails it.
  std::string where;
  for (const auto& t : r.taken) {
    where += (where.empty() ? "" : "; ") + t.node + ": holder " + t.holder +
             (t.fence.empty() ? std::string() : " (the key's fence counter is at token " + t.fence + ")");
  }
  log_->error("key {}: at release the lease was another holder's ({}): ours was lost while the child ran (the key "
              "deleted, evicted or expired, or a node restarted empty) and granted again, so two children may have run "
              "at once",
              cfg_.redis.key, where);
  if (!lease_loss_counted_) metrics_.add_lease_loss("taken");
  lease_loss_counted_ = true;
}

void Runner::log_release(const lock::Release& r) {
  // Counts the nodes where a lease of ours was deleted; elsewhere it had expired, was
  // taken, or the node did not answer (then it expires by its TTL).
  if (!r.taken.empty()) report_taken(r);
  if (r.released > 0) {
    log_->info("released key={} on {} of {} node(s){}", cfg_.redis.key, r.released, backend_->node_count(),
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
                keys_.line, keys_.line, keys_.line);
  }
  if (r.unpublished > 0 && !warned_unpublished_) {
    // Once: it is a setting, not an event.
    log_->warn("Redis refused the release message on {} (ACL: the user lacks +publish or the channel); standbys are not "
               "woken and take over only when they next try. Grant it with ACL SETUSER <user> &{}{}",
               cfg_.redis.fair ? keys_.channel + " or the waiting line's wake channels" : keys_.channel,
               keys_.channel, cfg_.redis.fair ? " &" + keys_.base + ":wake:*" : "");
    warned_unpublished_ = true;
  }
}

std::optional<int> Runner::hold_after_step_down(const std::string& why, bool planned) {
  // At least one TTL, and longer with every step-down until the child runs stably again:
  // a host that keeps failing must not keep taking the lease back (RestartTracker). A
  // handover is no failure: step_down_hold as configured, but at least one TTL, or a
  // step_down_hold of 0 would take the lease straight back from the standby it was for.
  const Millis hold = planned ? std::max(config::effective_step_down_hold(cfg_), cfg_.redis.expire)
                              : restarts_.on_step_down(config::effective_step_down_hold(cfg_), cfg_.redis.expire);
  // A planned step-down (handover, pause --stop) is no warning: a paused key would otherwise
  // page through every warning filter and cron mail.
  log_->log(planned ? spdlog::level::info : spdlog::level::warn, "stepped down: {}; not contending for {}", why,
            format_duration(hold));
  return hold_back("stepped down: " + why, hold);
}

std::optional<int> Runner::hold_back(const std::string& status, Millis hold) {
  say_status(status);
  metrics_.set_state(metrics::State::kSteppedDown);
  if (wait_until(clock_.now() + hold, false).end == standby::End::kShutdown) return stopped_while_waiting();
  say_status("standby");
  metrics_.set_state(metrics::State::kStandby);
  return std::nullopt;
}

}  // namespace redisgo::daemon
