// SimClient's leader phase (LeaderDriver's steps: daemon/leader_driver.cpp, leader_loop.cpp),
// its renewal fiber (lock/renewer.cpp) and its child with the keeper (process/keeper.cpp's
// loop around process/deadline_rule.h).
#include <algorithm>
#include <csignal>

#include "lock/renewer.h"
#include "simulator/client.h"
#include "simulator/client_parts.h"
#include "simulator/sim.h"
#include "util/overloaded.h"

namespace redisgo::simulator {

namespace {

std::int64_t ns_of(Clock::time_point t) { return t.time_since_epoch().count(); }

}  // namespace

// ---- the renewal fiber ----

SimClient::Renewer::Renewer(SimClient& client, std::unique_ptr<lock::LeaseBackend> backend, int stop_fd,
                            Millis interval, Clock::time_point lease_start, Clock::time_point initial)
    : client_(client),
      backend_(std::move(backend)),
      stop_fd_(stop_fd),
      machine_(interval, lease_start, initial),
      valid_until_(initial),
      renewed_at_(lease_start) {
  fiber_ = &client_.sim_.world().spawn(&client_.daemon_proc_, client_.name_ + " renewer", [this] { run(); });
}

SimClient::Renewer::~Renewer() = default;

void SimClient::Renewer::run() {
  using Kind = lock::RenewalMachine::Step::Kind;
  World& world = client_.sim_.world();
  lock::RenewalMachine::Step step = machine_.start();
  for (;;) {
    if (step.kind == Kind::kWait) {
      client_.sim_.watch_cancel(stop_fd_, fiber_);
      next_round_ = step.until;
      while (!stopped_ && client_.clock_.now() < step.until) world.wait(client_.sim_time(step.until));
      next_round_ = Clock::time_point::max();
      client_.sim_.watch_cancel(stop_fd_, nullptr);
      if (stopped_) break;
      step = machine_.due(client_.clock_.now());
      if (step.kind == Kind::kLost) publish(step);
    } else if (step.kind == Kind::kRenew) {
      rounds_ = machine_.rounds();
      const Time sent = world.now();
      const lock::Renewal r = send_round();
      if (stopped_) break;
      step = machine_.renewed(r, client_.clock_.now());
      publish(step);
      if (r.confirmed && !machine_.lost()) client_.sim_.checker().renewal_confirmed(client_.index_, sent);
    } else {
      break;
    }
  }
  if (joiner_ != nullptr) world.notify(joiner_);
}

lock::Renewal SimClient::Renewer::send_round() {
  ++client_.sim_.stats().renewals;
  try {
    lock::Renewal r = backend_->renew();
    if (client_.sim_.world().tracing()) {
      std::string what = "renewal: " + std::string(r.confirmed ? "confirmed" : r.lost ? "lost" : "not confirmed") +
                         ", " + std::to_string(r.votes) + " vote(s)";
      for (const auto& e : r.errors) what += "; " + e.message;
      client_.trace(what);
    }
    return r;
  } catch (const std::exception& e) {
    lock::Renewal r;
    r.errors.push_back({"", redis::Fault::kNone, e.what()});
    return r;
  }
}

void SimClient::Renewer::publish(const lock::RenewalMachine::Step& step) {
  const Clock::time_point old = valid_until_;
  refused_ = machine_.refused();
  if (machine_.lost()) lost_reason_ = machine_.lost_reason();
  renewed_at_ = machine_.renewed_at();
  valid_until_ = machine_.valid_until();
  renewals_ = machine_.renewals();
  if (machine_.lost()) {
    lost_ = true;
    client_.trace("lease lost: " + lost_reason_);
  }
  if (valid_until_ != old) client_.on_lease_moved(old, valid_until_);
  if (step.wake) client_.wake_main();
}

void SimClient::Renewer::stop() {
  stopped_ = true;
  client_.sim_.raise_cancel(stop_fd_);
  World& world = client_.sim_.world();
  while (!fiber_->done()) {
    joiner_ = world.current();
    world.notify(fiber_);
    world.wait(kNever);
  }
  joiner_ = nullptr;
}

lock::Release SimClient::Renewer::stop_and_release() {
  stop();
  return backend_->release();
}

Time SimClient::next_renewal() const {
  if (!lease_ || !lease_->renewer) return kNever;
  return sim_time(lease_->renewer->next_round());
}

bool SimClient::stopped() const { return daemon_proc_.frozen(); }

void SimClient::on_lease_moved(Clock::time_point old_until, Clock::time_point new_until) {
  // A deadline that had passed, moved forward again while the child runs: the client holds
  // again from now on (a renewal confirmed late), and the checker counts it as a new holding.
  const auto now = clock_.now();
  if (lease_ && lease_->child_alive && old_until <= now && new_until > now) {
    trace("lease deadline passed, then moved forward again while the child runs");
    sim_.checker().holding_began(index_);
  }
}

// ---- the leader phase ----

daemon::LeaseView SimClient::lease_view() const {
  daemon::LeaseView v;
  const Renewer& r = *lease_->renewer;
  v.valid_until = r.valid_until();
  v.renewed_at = r.renewed_at();
  v.lost = r.lost();
  if (v.lost) v.lost_reason = r.lost_reason();
  v.refused = r.refused();
  return v;
}

std::optional<int> SimClient::lead(const lock::Acquisition& acquired) {
  Daemon& d = *d_;
  ++sim_.stats().leases;
  sim_.checker().acquired(index_);
  trace("acquired: token " + std::to_string(acquired.token) + " slot " + std::to_string(acquired.slot));
  lease_ = std::make_unique<Lease>();
  Lease& l = *lease_;
  l.acquired = acquired;
  {
    // LeaderDriver::start_renewer: the renewal thread's own backend, told the lease.
    lock::LeaseOptions o = lock::Renewer::backend_options(d.lease_opts, acquired, d.cfg.redis.cron);
    const int stop_fd = sim_.new_cancel_fd();
    o.cancel_fd = stop_fd;
    l.renewer = std::make_unique<Renewer>(*this, sim_.make_backend(o, clock_, *d.net), stop_fd, d.cfg.redis.cron,
                                          acquired.started, acquired.valid_until);
  }
  if (d.stop_requested) {
    release_lease();
    lease_.reset();
    return daemon::stopped_status(d.cfg.task.mode);
  }
  daemon::LeaderSettings settings = daemon::LeaderSettings::from(d.cfg);
  settings.token = acquired.token;
  l.machine.emplace(settings, d.restarts);
  l.keeper_settings.kill_grace_ns = std::chrono::nanoseconds(d.cfg.task.kill_grace).count();
  l.keeper_settings.silence_ns = std::chrono::nanoseconds(settings.tick).count();
  l.keeper_settings.kill_signal = d.cfg.task.kill_signal;
  run_leader();
  auto code = end_lease();
  lease_.reset();
  return code;
}

bool SimClient::drive(const daemon::leader::Event& event) {
  using namespace daemon::leader;
  Lease& l = *lease_;
  bool spawned = false;
  for (const Action& action : l.machine->step(event, clock_.now(), lease_view())) {
    std::visit(Overloaded{
                   [&](const Spawn& a) {
                     drive(spawn_child(a.kill_at));
                     spawned = true;
                   },
                   [&](const SignalGroup& a) { signal_child(a.sig, "daemon"); },
                   [&](const ForceKill&) { signal_child(SIGKILL, "daemon (force)"); },
                   [&](const MoveDeadline& a) {
                     // The keeper hears it through its pipe (frozen with its process).
                     const process::DeadlineMessage m{ns_of(a.kill_at), ns_of(a.decided), ns_of(clock_.now())};
                     sim_.world().at(
                         sim_.world().now(), &keeper_proc_,
                         [this, gen = l.child_gen, m] {
                           if (lease_ && lease_->child_gen == gen) keeper_take(m);
                         },
                         EventKind::kArrival);
                   },
                   [&](const FrozenPastLease&) { trace("frozen past its lease with the child alive"); },
                   [&](const ArmHealth&) {},
                   [&](const DisarmHealth&) {},
                   [&](const Say& a) {
                     if (a.level != Level::kDebug) trace(a.text);
                   },
                   [&](const Status&) {},
               },
               action);
  }
  return spawned;
}

daemon::leader::ChildSeen SimClient::child_seen() const {
  daemon::leader::ChildSeen seen;
  const Lease& l = *lease_;
  if (!l.machine->running() || l.child_alive || l.child_reaped) return seen;
  seen.ended = true;
  seen.keeper_signal = l.keeper_signal;
  seen.keeper_at = l.keeper_at;
  return seen;
}

void SimClient::run_leader() {
  drive(daemon::leader::Start{});
  while (!lease_->machine->done()) {
    const daemon::leader::ChildSeen seen = child_seen();
    if (drive(daemon::leader::Tick{seen})) continue;
    if (lease_->machine->done()) break;
    wait_turn(seen);
    after_poll();
  }
}

void SimClient::wait_turn(const daemon::leader::ChildSeen& seen) {
  Lease& l = *lease_;
  const daemon::LeaseView lease = lease_view();
  Time next = std::min(sim_time(l.machine->next_wakeup(lease)), sim_time(l.machine->keeper_due()));
  const Time now = sim_.world().now();
  if (l.machine->running() && l.machine->killing()) next = std::min(next, now + 50 * kMs);
  if (seen.ended) next = now;
  if (next > now) main_wait(next);
}

void SimClient::after_poll() {
  Lease& l = *lease_;
  drive(daemon::leader::Woke{child_seen()});
  drive(daemon::leader::Signals{{}, d_->stop_requested, SIGTERM});
  if (l.machine->running() && !l.child_alive && !l.child_reaped) {
    l.child_reaped = true;
    drive(daemon::leader::ChildExited{l.child_code, 0});
  }
}

std::optional<int> SimClient::end_lease() {
  Lease& l = *lease_;
  Daemon& d = *d_;
  if (l.child_alive) signal_child(SIGKILL, "daemon (lease phase over)");
  const daemon::LeaderOutcome outcome = *l.machine->outcome();
  release_lease();
  if (outcome.kind == daemon::AfterExit::Kind::kExit) return outcome.exit_code;
  Millis hold = outcome.delay;
  if (outcome.cause != daemon::StepDown::kNone) {
    const Millis configured = config::effective_step_down_hold(d.cfg);
    hold = daemon::planned(outcome.cause) ? std::max(configured, d.cfg.redis.expire)
                                          : d.restarts.on_step_down(configured, d.cfg.redis.expire);
    trace("stepped down: " + outcome.step_down);
  }
  const auto until = clock_.now() + hold;
  while (!d.stop_requested && clock_.now() < until) main_wait(sim_time(until));
  if (d.stop_requested) return daemon::stopped_status(d.cfg.task.mode);
  return std::nullopt;
}

void SimClient::release_lease() {
  Lease& l = *lease_;
  l.renewer->stop();
  ++sim_.stats().releases;
  const lock::Release r = l.renewer->rounds() > 0 ? l.renewer->stop_and_release() : d_->backend->release();
  trace("released on " + std::to_string(r.released) + " node(s)" +
        (r.taken.empty() ? std::string() : ", taken by " + r.taken.front().holder));
  d_->backend->released_elsewhere();
}

// ---- the child and its keeper ----

daemon::leader::Event SimClient::spawn_child(Clock::time_point kill_at) {
  Lease& l = *lease_;
  const auto now = clock_.now();
  // The keeper starts the job only while the lease can still be stopped in time.
  if (!process::may_start(ns_of(kill_at), ns_of(now))) {
    return daemon::leader::SpawnFailed{75, "the lease ended before the child could start"};
  }
  l.child_gen = ++child_seq_;
  l.child_alive = true;
  l.child_reaped = false;
  l.child_code = 0;
  l.keeper_signal = 0;
  l.keeper = process::started(ns_of(kill_at), ns_of(now));
  ++sim_.stats().children;
  // The child exits at a moment of its own: most soon, some after many renewals.
  Rng& rng = sim_.world().rng();
  const int pick = static_cast<int>(rng.below(100));
  const int brief = sim_.scenario().brief_children;
  const Time runs = pick < brief ? rng.between(1 * kMs, 100 * kMs)
                  : pick < 50 ? rng.between(100 * kMs, 500 * kMs)
                  : pick < 90 ? rng.between(500 * kMs, 5 * kSecond)
                              : rng.between(5 * kSecond, 20 * kSecond);
  const int code = rng.percent(70) ? 0 : 1;
  trace("child starts with token " + std::to_string(l.acquired.token) + ", exits in " + format_time(runs) + " s");
  sim_.world().after(runs, &child_proc_, [this, gen = l.child_gen, code] {
    if (lease_ && lease_->child_gen == gen && lease_->child_alive) child_ended(code);
  });
  sim_.checker().holding_began(index_);
  keeper_decide();
  return daemon::leader::Spawned{static_cast<pid_t>(20000 + l.child_gen), static_cast<pid_t>(30000 + l.child_gen)};
}

void SimClient::child_ended(int code) {
  Lease& l = *lease_;
  l.child_alive = false;
  l.child_code = code;
  trace("child ends with " + std::to_string(code));
  wake_main();  // the keeper's exit fd
}

void SimClient::signal_child(int sig, const char* by) {
  Lease& l = *lease_;
  if (!l.child_alive) return;
  if (sig == SIGKILL) {
    trace(std::string("SIGKILL to the child by the ") + by);
    child_ended(128 + SIGKILL);
    return;
  }
  if (sig == SIGCONT) return;
  // kill_signal: most children stop within a moment, some ignore it (SIGKILL follows).
  Rng& rng = sim_.world().rng();
  trace(std::string("signal ") + std::to_string(sig) + " to the child by the " + by);
  if (rng.percent(25)) return;
  sim_.world().after(rng.between(0, 300 * kMs), &child_proc_, [this, gen = l.child_gen, sig] {
    if (lease_ && lease_->child_gen == gen && lease_->child_alive) child_ended(128 + sig);
  });
}

void SimClient::keeper_take(const process::DeadlineMessage& m) {
  lease_->keeper = process::take(lease_->keeper, m);
  keeper_decide();
}

void SimClient::keeper_decide() {
  Lease& l = *lease_;
  for (;;) {
    if (!l.child_alive) return;
    const auto move = process::decide(l.keeper, ns_of(clock_.now()), l.keeper_settings);
    if (move.kind == process::DeadlineMove::Kind::kWait) {
      if (move.until_ns <= 0) return;
      const Time at = clock_.when(Clock::time_point(Clock::duration(move.until_ns)));
      sim_.world().at(at, &keeper_proc_, [this, gen = l.child_gen, timer = ++l.keeper_timer] {
        if (lease_ && lease_->child_gen == gen && lease_->keeper_timer == timer) keeper_decide();
      });
      return;
    }
    const int sig = move.kind == process::DeadlineMove::Kind::kKill ? SIGKILL : l.keeper_settings.kill_signal;
    if (l.keeper_signal == 0) {
      l.keeper_signal = sig;
      l.keeper_at = clock_.now();
    }
    if (move.kind == process::DeadlineMove::Kind::kKill) {
      signal_child(SIGKILL, "keeper");
      return;
    }
    signal_child(sig, "keeper");
    l.keeper = process::signalled(l.keeper);
  }
}

}  // namespace redisgo::simulator
