// What a seed draws before its run: the topology, the clients and their modes, the timings
// within what `validate` accepts, the clocks' offsets within the drift a lease allows, and
// how stormy the run is. A run first draws its family, which leans the rest one way (as
// FoundationDB's test specs do), so that each kind of trouble comes often enough to be met:
//   mixed     anything goes;
//   restarts  nodes that crash and come back empty, under semaphores too;
//   herd      three nodes, semaphores, oneshots that cron starts on every host at once over a
//             jittery network: acquisitions that cross each other;
//   stalls    one node, one slot, hosts that stop and lose their network, slow links;
//   deletes   one node, one slot, an operator who DELs the lease key under its holder while
//             the others' cron fires (drawn only when asked for: --family deletes).
#include <algorithm>
#include <csignal>

#include "simulator/sim.h"

namespace redisgo::simulator {

namespace {

std::vector<int> weights(Rng& rng, std::initializer_list<std::pair<FaultKind, int>> lean) {
  // Each run leans its own way: a kind of fault is left out of a run one time in four; a
  // family's kinds weigh more.
  // An operator's DEL weighs nothing unless the family leans on it: the kinds drawn before it
  // existed draw as they did, and every seed replays the run it did then.
  std::vector<int> w;
  for (int k = 0; k < static_cast<int>(FaultKind::kDelete); ++k) {
    w.push_back(rng.percent(25) ? 0 : static_cast<int>(rng.between(1, 10)));
  }
  w.push_back(0);
  for (const auto& [kind, weight] : lean) w[static_cast<std::size_t>(kind)] += weight;
  if (std::all_of(w.begin(), w.end(), [](int x) { return x == 0; })) w[0] = 1;
  return w;
}

}  // namespace

const std::vector<std::string>& families() {
  static const std::vector<std::string> all{"mixed", "restarts", "herd", "stalls", "deletes"};
  return all;
}

Scenario draw_scenario(Rng& rng, const std::string& family_wanted) {
  Scenario sc;
  const std::uint64_t family = rng.below(5);  // drawn either way: a seed's other draws do not move
  sc.family = !family_wanted.empty() ? family_wanted
              : family < 2           ? "mixed"
              : family == 2          ? "restarts"
              : family == 3          ? "herd"
                                     : "stalls";
  const bool mixed = sc.family == "mixed";
  const bool restarts = sc.family == "restarts";
  const bool deletes = sc.family == "deletes";
  const bool lone = sc.family == "stalls" || deletes;  // one node, one slot
  sc.nodes = sc.family == "herd" ? 3 : lone ? 1 : rng.percent(restarts ? 80 : 50) ? 1 : 3;
  sc.limit = lone ? 1
             : sc.family == "herd" || (restarts && rng.percent(80)) || (mixed && rng.percent(40))
                 ? static_cast<int>(restarts && rng.percent(70) ? 3 : rng.between(2, 3))
                 : 1;
  // Waiters in line: a stall needs one other host at most; a restart under a semaphore, several.
  sc.clients = lone ? (rng.percent(70) ? 2 : 3)
                                     : static_cast<int>(rng.between(sc.limit + 1, sc.limit + (restarts ? 4 : 3)));
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
  // All supervise, all oneshot, or mixed; a herd is mostly oneshots, and so are the hosts that
  // meet restarts (a oneshot releases as its child ends: releases right after a restart).
  const int mix = (sc.family == "herd" || restarts || deletes) && rng.percent(70) ? 1 : static_cast<int>(rng.below(3));
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
  if (rng.percent(sc.family == "herd" ? 80 : 40)) {
    sc.network.transit_min = 100;
    sc.network.transit_max = rng.between(2, 15) * kMs;
  }
  sc.cron_period = rng.percent(sc.family == "herd" || deletes ? 90 : 50) ? rng.between(1, 5) * kSecond : 0;
  sc.brief_children = static_cast<int>(lone ? rng.between(30, 50)
                                       : restarts       ? rng.between(40, 50)
                                                        : rng.between(0, 50));
  sc.crash_downtime = restarts && rng.percent(70) ? 300 * kMs : 2 * kSecond;
  sc.hit_leader = lone ? 90 : 50;
  sc.fault_rate = mixed && rng.percent(10) ? 0 : static_cast<int>(rng.between(mixed ? 2 : 8, lone ? 30 : 20));
  using K = FaultKind;
  if (restarts) {
    sc.fault_weights = weights(rng, {{K::kCrash, 40}});
  } else if (deletes) {
    sc.fault_weights = weights(rng, {{K::kDelete, 30}, {K::kSlow, 5}});
    sc.fault_weights[static_cast<std::size_t>(K::kCrash)] = 0;
  } else if (sc.family == "stalls") {
    sc.fault_weights = weights(rng, {{K::kStall, 20}, {K::kFreeze, 5}, {K::kSlow, 5}});
    sc.fault_weights[static_cast<std::size_t>(K::kCrash)] = 0;
  } else {
    sc.fault_weights = weights(rng, {});
  }
  sc.faults_until = rng.between(10, 30) * kSecond;
  sc.quiet_for = rng.between(15, 25) * kSecond;
  return sc;
}

std::string Scenario::describe() const {
  const auto& r = cfg.redis;
  std::string modes_text;
  for (auto m : modes) modes_text += m == config::Mode::kSupervise ? 's' : 'o';
  return family + ": " + std::to_string(nodes) + " node(s), " + std::to_string(clients) + " clients (" + modes_text + "), limit " +
         std::to_string(limit) + ", expire " + std::to_string(r.expire.count()) + " ms, cron " +
         std::to_string(r.cron.count()) + " ms, kill_grace " + std::to_string(cfg.task.kill_grace.count()) +
         " ms, io_timeout " + std::to_string(r.io_timeout.count()) + " ms, backoff max " +
         std::to_string(cfg.backoff.max.count()) + " ms, transit " + std::to_string(network.transit_min) + "-" +
         std::to_string(network.transit_max) + " us, " +
         (cron_period > 0 ? "oneshots every " + format_time(cron_period) + " s, " : std::string()) +
         std::to_string(fault_rate) + " faults/10 s until " + format_time(faults_until) + " s";
}

}  // namespace redisgo::simulator
