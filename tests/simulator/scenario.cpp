// What a seed draws before its run: the topology, the clients and their modes, the timings
// within what `validate` accepts, the clocks' offsets within the drift a lease allows, and
// how stormy the run is.
#include <algorithm>
#include <csignal>

#include "simulator/sim.h"

namespace redisgo::simulator {

Scenario draw_scenario(Rng& rng) {
  Scenario sc;
  sc.nodes = rng.percent(50) ? 1 : 3;
  sc.limit = rng.percent(60) ? 1 : static_cast<int>(rng.between(2, 3));
  sc.clients = static_cast<int>(rng.between(sc.limit + 1, sc.limit + 3));
  config::Config& cfg = sc.cfg;
  auto& r = cfg.redis;
  r.topology = sc.nodes == 1 ? config::Topology::kSingle : config::Topology::kRedlock;
  for (int i = 0; i < sc.nodes; ++i) r.nodes.push_back("node" + std::to_string(i) + ":6379");
  r.key = "job";
  r.expire = Millis(rng.between(10, 40) * 100);
  r.cron = Millis(r.expire.count() / rng.between(3, 5));
  r.io_timeout = Millis(rng.between(100, 500));
  r.connect_timeout = Millis(rng.between(100, 500));
  r.restart_guard = true;
  r.fair = true;
  r.monitor_try_all = true;
  cfg.backoff.max = Millis(rng.between(2, 20) * 100);
  cfg.backoff.initial = Millis(30);
  auto& t = cfg.task;
  t.limit = sc.limit;
  t.command = {"/bin/true"};
  t.kill_signal = SIGTERM;
  // validate's rule: cron + kill_grace < expire.
  t.kill_grace = Millis(rng.between(r.expire.count() / 10, r.expire.count() - r.cron.count() - 50));
  t.restart = rng.percent(50) ? config::Restart::kAlways : config::Restart::kOnFailure;
  t.restart_delay = Millis(rng.between(0, 10) * 100);
  const int mix = static_cast<int>(rng.below(3));  // all supervise, all oneshot, or mixed
  for (int i = 0; i < sc.clients; ++i) {
    const bool supervise = mix == 0 || (mix == 2 && rng.percent(50));
    sc.modes.push_back(supervise ? config::Mode::kSupervise : config::Mode::kOneshot);
  }
  // Wall clocks within the drift a lease allows of each other; boot clocks anywhere.
  const std::int64_t drift_us =
      static_cast<std::int64_t>(static_cast<double>(r.expire.count()) * r.drift_factor * 1000) + r.drift_fixed.count() * 1000;
  for (int i = 0; i < sc.nodes; ++i) sc.node_offsets_us.push_back(rng.between(-drift_us / 2, drift_us / 2));
  for (int i = 0; i < sc.clients; ++i) {
    sc.host_wall_offsets_us.push_back(rng.between(-drift_us / 2, drift_us / 2));
    sc.host_boot_offsets_us.push_back(rng.between(1, 1'000'000) * kSecond);
  }
  if (rng.percent(40)) {
    sc.network.transit_min = 100;
    sc.network.transit_max = rng.between(2, 15) * kMs;
  }
  sc.cron_period = rng.percent(50) ? rng.between(1, 5) * kSecond : 0;
  sc.fault_rate = rng.percent(10) ? 0 : static_cast<int>(rng.between(2, 20));
  // Each run leans its own way: a kind of fault is left out of a run one time in four.
  for (int k = 0; k < static_cast<int>(FaultKind::kCount); ++k) {
    sc.fault_weights.push_back(rng.percent(25) ? 0 : static_cast<int>(rng.between(1, 10)));
  }
  if (std::all_of(sc.fault_weights.begin(), sc.fault_weights.end(), [](int w) { return w == 0; })) sc.fault_weights[0] = 1;
  sc.faults_until = rng.between(10, 30) * kSecond;
  sc.quiet_for = rng.between(15, 25) * kSecond;
  return sc;
}

std::string Scenario::describe() const {
  const auto& r = cfg.redis;
  std::string modes_text;
  for (auto m : modes) modes_text += m == config::Mode::kSupervise ? 's' : 'o';
  return std::to_string(nodes) + " node(s), " + std::to_string(clients) + " clients (" + modes_text + "), limit " +
         std::to_string(limit) + ", expire " + std::to_string(r.expire.count()) + " ms, cron " +
         std::to_string(r.cron.count()) + " ms, kill_grace " + std::to_string(cfg.task.kill_grace.count()) +
         " ms, io_timeout " + std::to_string(r.io_timeout.count()) + " ms, backoff max " +
         std::to_string(cfg.backoff.max.count()) + " ms, transit " + std::to_string(network.transit_min) + "-" +
         std::to_string(network.transit_max) + " us, " +
         (cron_period > 0 ? "oneshots every " + format_time(cron_period) + " s, " : std::string()) +
         std::to_string(fault_rate) + " faults/10 s until " + format_time(faults_until) + " s";
}

}  // namespace redisgo::simulator
