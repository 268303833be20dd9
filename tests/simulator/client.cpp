// SimClient: the daemon's life on a simulated host, and its standby phase (StandbyDriver's
// steps: daemon/standby_driver.cpp).
#include "simulator/client.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "lock/verdict.h"
#include "lock/wake.h"
#include "simulator/client_parts.h"
#include "simulator/sim.h"
#include "util/error.h"
#include "wiring/servers.h"

namespace redisgo::simulator {

using namespace daemon::standby;

SimClient::SimClient(Sim& sim, int index)
    : sim_(sim),
      index_(index),
      name_("host" + std::to_string(index)),
      clock_(sim.world(), sim.scenario().host_boot_offsets_us[static_cast<std::size_t>(index)],
             sim.scenario().host_wall_offsets_us[static_cast<std::size_t>(index)]),
      daemon_proc_(name_ + " daemon"),
      keeper_proc_(name_ + " keeper"),
      child_proc_(name_ + " child") {}

SimClient::~SimClient() = default;

void SimClient::trace(const std::string& what) const {
  if (sim_.world().tracing()) sim_.world().trace(d_ ? name_ + " " + d_->holder.substr(name_.size() + 1, 4) : name_, what);
}

Time SimClient::sim_time(Clock::time_point p) const {
  if (p == Clock::time_point::max()) return kNever;
  return clock_.when(p);
}

void SimClient::wake_main() {
  main_woken_ = true;
  sim_.world().notify(main_);
}

void SimClient::main_wait(Time t) {
  if (!main_woken_) sim_.world().wait(t);
  main_woken_ = false;
}

void SimClient::start(Time at) {
  sim_.world().at(at, &daemon_proc_, [this] {
    main_ = &sim_.world().spawn(&daemon_proc_, name_ + " main", [this] { run_daemon(); });
  });
}

void SimClient::freeze(Time length, bool whole_host) {
  World& w = sim_.world();
  auto procs = whole_host ? std::vector<Process*>{&daemon_proc_, &keeper_proc_, &child_proc_}
                          : std::vector<Process*>{&daemon_proc_};
  for (Process* p : procs) {
    if (p->frozen()) return;  // one stop at a time
  }
  trace(std::string("SIGSTOP ") + (whole_host ? "the whole host" : "the daemon") + " for " + format_time(length) + " s");
  for (Process* p : procs) w.freeze(*p);
  w.after(length, nullptr, [this, procs] {
    trace("SIGCONT");
    sim_.world().thaw(procs);
  });
}

HolderView SimClient::view() const {
  HolderView v;
  if (!lease_) return v;
  v.leading = true;
  v.holder = d_ ? d_->holder : std::string();
  v.token = lease_->acquired.token;
  v.lease = lease_->acquired.lease_id;
  v.slot = lease_->acquired.slot;
  v.child_alive = lease_->child_alive;
  v.deadline_valid = lease_->renewer && clock_.now() < lease_->renewer->valid_until();
  return v;
}

std::string SimClient::new_holder() {
  // "<host>:<pid>:<32 hex>" (wiring::default_holder_id), drawn from the run's Rng.
  char hex[33];
  Rng& rng = sim_.world().rng();
  std::snprintf(hex, sizeof hex, "%016" PRIx64 "%016" PRIx64, rng.next(), rng.next());
  return name_ + ":" + std::to_string(++pid_) + ":" + hex;
}

lock::LeaseOptions SimClient::lease_options(const std::string& holder) const {
  // As wiring::lease_options builds them from the config, on the simulated nodes.
  const config::Config& cfg = sim_.scenario().cfg;
  const auto& r = cfg.redis;
  lock::LeaseOptions o = wiring::lease_settings(cfg, holder);
  for (int i = 0; i < sim_.scenario().nodes; ++i) {
    redis::ConnectionOptions c;
    c.endpoint = endpoint_of(i);
    c.connect_timeout = r.connect_timeout;
    c.io_timeout = r.io_timeout;
    o.nodes.push_back(std::move(c));
  }
  o.attempts = std::make_shared<std::atomic<std::uint64_t>>(0);  // this simulated process's
  return o;
}

void SimClient::run_daemon() {
  config::Config cfg = sim_.scenario().cfg;
  cfg.task.mode = sim_.scenario().modes[static_cast<std::size_t>(index_)];
  d_ = std::make_unique<Daemon>(cfg);
  Daemon& d = *d_;
  d.holder = new_holder();
  trace("daemon starts (" + std::string(cfg.task.mode == config::Mode::kOneshot ? "oneshot" : "supervise") + ")");
  d.lease_opts = lease_options(d.holder);
  d.signal_fd = sim_.new_cancel_fd();
  d.net = std::make_unique<HostNetwork>(sim_, index_, &daemon_proc_, clock_);
  lock::LeaseOptions main_opts = d.lease_opts;
  main_opts.cancel_fd = d.signal_fd;
  d.backend = sim_.make_backend(main_opts, clock_, *d.net);
  d.backoff = backoff::make(cfg.backoff, sim_.world().rng().next());
  daemon::StandbySettings standby = daemon::StandbySettings::from(cfg, true);
  standby.nodes = static_cast<std::size_t>(d.backend->node_count());
  standby.quorum = static_cast<std::size_t>(d.backend->quorum());
  d.standby.emplace(std::move(standby), *d.backoff);
  for (int i = 0; i < sim_.scenario().nodes; ++i) {
    // Fair: each waiter listens on its own wake channel; otherwise on the shared release channel.
    d.subs.push_back(std::make_unique<SimSubscription>(
        sim_.net(), index_, i, &daemon_proc_,
        WireOptions{cfg.redis.connect_timeout.count() * kMs, cfg.redis.io_timeout.count() * kMs},
        cfg.redis.fair ? d.keys.wake(d.holder) : d.keys.channel));
  }
  std::optional<int> code;
  while (!code) {
    auto contended = contend();
    if (const auto* acquired = std::get_if<lock::Acquisition>(&contended)) {
      code = lead(*acquired);
    } else {
      code = std::get<int>(contended);
    }
  }
  d.backend->settle(Millis(200));
  trace("daemon exits " + std::to_string(*code));
  d_.reset();
  // cron starts the job again: at its next tick on every host at once (a few ms apart), or a
  // while later (a supervise daemon that ended, its unit).
  Rng& rng = sim_.world().rng();
  const Time period = sim_.scenario().cron_period;
  const Time now = sim_.world().now();
  const Time again = period > 0 ? (now / period + 1) * period + rng.between(0, 3 * kMs) - now
                                : rng.between(10 * kMs, 2 * kSecond);
  sim_.world().after(again, &daemon_proc_, [this] {
    main_ = &sim_.world().spawn(&daemon_proc_, name_ + " main", [this] { run_daemon(); });
  });
}

std::variant<lock::Acquisition, int> SimClient::contend() {
  Daemon& d = *d_;
  sim_.checker().waiting(index_, true);
  Actions actions = d.standby->step(Begin{}, clock_.now());
  std::optional<std::variant<lock::Acquisition, int>> out;
  while (!out) {
    Actions next;
    for (const Action& action : actions) {
      if (std::holds_alternative<Attempt>(action)) {
        next = attempt();
      } else if (const auto* w = std::get_if<Wait>(&action)) {
        const WaitEnded ended = wait_for(*w);
        next = d.standby->step(ended, clock_.now());
      } else if (const auto* l = std::get_if<Lead>(&action)) {
        out = l->acquisition;
        break;
      } else if (const auto* g = std::get_if<GiveUp>(&action)) {
        if (g->timed_out) {
          for (auto& s : d.subs) s->close();
        }
        trace("gives up: " + std::to_string(g->exit_status));
        out = g->exit_status;
        break;
      } else if (const auto* s = std::get_if<Stopped>(&action)) {
        out = s->exit_status;
        break;
      } else if (const auto* m = std::get_if<ShowMiss>(&action)) {
        trace("miss: holder " + lock::describe_holder(m->holder).substr(0, 40) + " ttl " +
              std::to_string(m->holder_ttl_ms) + " guard " + std::to_string(m->guard_wait_ms) + " place " +
              std::to_string(m->position));
      }
    }
    if (!out) actions = std::move(next);
  }
  sim_.checker().waiting(index_, false);
  // But for the lease, we leave the waiting line at once (StandbyDriver::contend's ClearLine).
  if (d.standby->state() != daemon::StandbyState::kLeading) d.backend->leave_line();
  return *out;
}

Actions SimClient::attempt() {
  Daemon& d = *d_;
  if (d.stop_requested) return d.standby->step(StopAsked{}, clock_.now());
  drain_subscriptions();  // messages from before this attempt are stale
  d.turned.assign(d.subs.size(), false);  // StandbyDriver::attempt's turned_
  if (sim_.scenario().cfg.redis.fair) {
    std::vector<bool> listening;
    for (const auto& s : d.subs) listening.push_back(s->active());
    d.backend->line_listening(listening);
  }
  Attempted a;
  a.started = clock_.now();
  d.backend->bound_attempts(d.standby->give_up_at().value_or(Clock::time_point::max()));
  ++sim_.stats().acquires;
  try {
    a.acquisition = d.backend->acquire();
  } catch (const Error& e) {
    a.acquisition.errors.push_back(lock::round_failure(e.what()));
  }
  const lock::Verdict verdict = lock::classify(a.acquisition, d.backend->node_count(), d.backend->quorum());
  d.backend->bound_attempts(Clock::time_point::max());
  a.stop = d.stop_requested;
  a.subscribed = std::any_of(d.subs.begin(), d.subs.end(), [](const auto& s) { return s->active(); });
  if (sim_.world().tracing()) {
    static const char* const kinds[] = {"granted", "no quorum", "paused", "turn", "busy", "guarded", "split"};
    std::string what = "attempt: " + std::string(kinds[static_cast<int>(verdict.kind)]) + ", " +
                       std::to_string(a.acquisition.votes) + " vote(s)";
    if (a.acquisition.acquired) {
      what += ", token " + std::to_string(a.acquisition.token) + " slot " + std::to_string(a.acquisition.slot);
    }
    for (const auto& e : a.acquisition.errors) what += "; " + e.message;
    trace(what);
  }
  return d.standby->step(a, clock_.now());
}

WaitEnded SimClient::wait_for(const Wait& w) {
  if (!w.wake_on_release) {
    while (!d_->stop_requested && clock_.now() < w.until) main_wait(sim_time(w.until));
    return {d_->stop_requested ? End::kShutdown : End::kTimer};
  }
  return wait_until(w.until);
}

void SimClient::drain_subscriptions() {
  for (auto& s : d_->subs) {
    s->maintain();
    s->take_payloads();
  }
}

WaitEnded SimClient::wait_until(Clock::time_point until) {
  Daemon& d = *d_;
  for (;;) {
    if (d.stop_requested) return {End::kShutdown};
    if (clock_.now() >= until) return {End::kTimer};
    Time next = sim_time(until);
    for (auto& s : d.subs) {
      s->maintain();
      s->set_listener(main_);
      next = std::min(next, s->next_wakeup());
    }
    main_wait(next);
    for (auto& s : d.subs) s->set_listener(nullptr);
    if (auto ended = heard()) return *ended;
  }
}

std::optional<WaitEnded> SimClient::heard() {
  Daemon& d = *d_;
  const bool fair = sim_.scenario().cfg.redis.fair;
  bool released = false, subscribed = false, turn = false, next = false;
  Millis window{0};
  for (std::size_t i = 0; i < d.subs.size(); ++i) {
    auto& s = d.subs[i];
    s->maintain();
    for (const auto& payload : s->take_payloads()) {
      const lock::Wake wake = lock::read_wake(payload, fair, d.holder);
      released |= wake.kind == lock::Wake::Kind::kReleased;
      if (wake.kind == lock::Wake::Kind::kTurn) {
        turn = true;
        if (i < d.turned.size()) d.turned[i] = true;
      }
      if (wake.kind == lock::Wake::Kind::kNext) {
        next = true;
        window = wake.window;
      }
    }
    subscribed |= s->take_became_active();
  }
  if (d.stop_requested) return WaitEnded{End::kShutdown};
  if (turn) {
    trace("heard: turn");
    return WaitEnded{End::kTurn, Millis(0), static_cast<int>(std::count(d.turned.begin(), d.turned.end(), true))};
  }
  if (released) return WaitEnded{End::kReleased};
  if (subscribed) return WaitEnded{End::kSubscribed};
  if (next) return WaitEnded{End::kNext, window};
  return std::nullopt;
}

}  // namespace redisgo::simulator
