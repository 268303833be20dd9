#include "simulator/sim.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "lock/scripts.h"
#include "simulator/client.h"
#include "simulator/seam.h"

namespace redisgo::simulator {
Stats& Stats::operator+=(const Stats& o) {
  acquires += o.acquires;
  renewals += o.renewals;
  releases += o.releases;
  leases += o.leases;
  children += o.children;
  faults += o.faults;
  commands += o.commands;
  events += o.events;
  simulated += o.simulated;
  return *this;
}

Sim::Sim(std::uint64_t seed, const RunOptions& options) : world_(seed), options_(options) {
  world_.set_tracing(options.trace);
  sc_ = draw_scenario(world_.rng(), options.family);
  net_ = std::make_unique<Network>(world_, sc_.clients, sc_.node_offsets_us, sc_.network);
  if (options.mutant) {
    for (const auto& e : options.mutant->edits) {
      bool applied = false;
      for (const redis::Script* s : lock::kLeaseScripts) {
        std::string text(s->source);
        const auto at = text.find(e.from);
        if (at == std::string::npos) continue;
        text.replace(at, e.from.size(), e.to);
        net_->rewrite_script(std::string(s->source), text);
        applied = true;
      }
      if (!applied) throw std::runtime_error("mutant " + options.mutant->name + ": no script holds its text for " + e.script);
    }
  }
  checker_ = std::make_unique<Checker>(world_, sc_.limit);
  for (int i = 0; i < sc_.clients; ++i) {
    clients_.push_back(std::make_unique<SimClient>(*this, i));
    SimClient* c = clients_.back().get();
    checker_->add_client(c->name(), [c] { return c->view(); });
  }
}

Sim::~Sim() {
  // Fibers first (their stacks hold the clients' backends and machines), then the clients.
  world_.unwind_fibers();
  clients_.clear();
}

int Sim::new_cancel_fd() { return next_fd_++; }

void Sim::raise_cancel(int fd) {
  raised_.insert(fd);
  auto it = watchers_.find(fd);
  if (it != watchers_.end() && it->second != nullptr) world_.notify(it->second);
}

void Sim::clear_cancel(int fd) { raised_.erase(fd); }

void Sim::watch_cancel(int fd, Fiber* f) {
  if (fd < 0) return;
  if (f == nullptr) {
    watchers_.erase(fd);
  } else {
    watchers_[fd] = f;
  }
}

std::unique_ptr<lock::LeaseBackend> Sim::make_backend(const lock::LeaseOptions& options, const Clock& clock,
                                                      HostNetwork& net) {
  lock::LeaseOptions o = options;
  o.network = &net;
  return lock::make_redis_backend(o, clock);
}

void Sim::liveness_tick() {
  checker_->check_liveness();
  if (world_.now() + 100 * kMs < end_) world_.after(100 * kMs, nullptr, [this] { liveness_tick(); });
}

RunResult Sim::run() {
  for (auto& c : clients_) c->start(world_.rng().between(0, 500 * kMs));
  schedule_faults();
  const auto& r = sc_.cfg.redis;
  // The liveness bound (docs/DESIGN.md "Simulation"): expire (a lease left by a holder that
  // could not release), one backoff maximum, the restart guard's wait (expire + 1 s) when a
  // node restarted, and two turn windows and a second of slack for a line whose head was a
  // subscription the faults left half-open.
  const Time bound = (r.expire.count() + sc_.cfg.backoff.max.count() + r.expire.count() + 1000 +
                      2 * r.turn_window().count() + 1000) * kMs;
  const Time quiet_from = sc_.faults_until + kLongestFault;
  end_ = quiet_from + sc_.quiet_for;
  checker_->quiet_from(quiet_from, bound);
  world_.at(quiet_from, nullptr, [this] {
    world_.trace("sim", "every fault has ended; liveness is checked from now on");
    liveness_tick();
  });
  world_.run_until(end_);
  stats_.commands = net_->commands();
  stats_.events = world_.events();
  stats_.simulated = world_.now();
  RunResult out;
  out.seed = world_.seed();
  out.violation = checker_->violation();
  if (!out.violation && world_.spinning()) {
    out.violation = "at " + format_time(world_.now()) + ": no storms: the simulated time stood still for " +
                    std::to_string(World::kSpinEvents) + " events (a loop that waits on nothing)";
  }
  out.scenario = sc_.describe();
  out.trace = world_.trace_text();
  out.stats = stats_;
  return out;
}

RunResult run_seed(std::uint64_t seed, const RunOptions& options) {
  Sim sim(seed, options);
  return sim.run();
}

Catch hunt(const Mutant& mutant, std::uint64_t first, std::uint64_t budget, const std::string& family) {
  const auto began = std::chrono::steady_clock::now();
  Catch out;
  RunOptions plain;
  plain.family = family;
  RunOptions mutated = plain;
  mutated.mutant = &mutant;
  for (std::uint64_t s = first; s < first + budget; ++s) {
    const RunResult r = run_seed(s, mutated);
    ++out.runs;
    out.stats += r.stats;
    if (r.violation && !run_seed(s, plain).violation) {
      out.seed = s;
      out.violation = r.violation;
      break;
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return out;
}

}  // namespace redisgo::simulator
