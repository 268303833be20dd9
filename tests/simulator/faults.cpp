// The faults of a run (docs/DESIGN.md "Simulation", the fault model): drawn as the run goes,
// each at a random instant, of a kind drawn by the run's own weights, on a random host or node,
// for a random length; none starts after the scenario's faults_until.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "lock/lease.h"
#include "simulator/client.h"
#include "simulator/sim.h"

namespace redisgo::simulator {

void Sim::schedule_faults() {
  if (sc_.fault_rate <= 0) return;
  const Time mean = 10 * kSecond / sc_.fault_rate;
  world_.after(world_.rng().between(1, 2 * mean), nullptr, [this] { fault(); });
}

void Sim::fault() {
  Rng& rng = world_.rng();
  if (world_.now() >= sc_.faults_until) return;
  ++stats_.faults;
  const int total = std::accumulate(sc_.fault_weights.begin(), sc_.fault_weights.end(), 0);
  int pick = static_cast<int>(rng.below(static_cast<std::uint64_t>(total)));
  int kind = 0;
  while (pick >= sc_.fault_weights[static_cast<std::size_t>(kind)]) pick -= sc_.fault_weights[static_cast<std::size_t>(kind++)];
  // Many faults that hit a host hit one that leads: the holder is where the protocol is at stake.
  int host = static_cast<int>(rng.below(static_cast<std::uint64_t>(sc_.clients)));
  if (rng.percent(sc_.hit_leader)) {
    std::vector<int> leading;
    for (int i = 0; i < sc_.clients; ++i) {
      if (clients_[static_cast<std::size_t>(i)]->view().leading) leading.push_back(i);
    }
    if (!leading.empty()) host = leading[rng.below(leading.size())];
  }
  const int node = static_cast<int>(rng.below(static_cast<std::uint64_t>(sc_.nodes)));
  const Time length = rng.between(20 * kMs, rng.percent(70) ? 2 * kSecond : 6 * kSecond);
  apply(static_cast<FaultKind>(kind), host, node, length);
  schedule_faults();
}

void Sim::apply(FaultKind kind, int host, int node, Time length) {
  Rng& rng = world_.rng();
  const Time now = world_.now();
  const std::string h = "host" + std::to_string(host);
  const std::string n = "node" + std::to_string(node);
  auto say = [&](const std::string& what) { world_.trace("fault", what + " for " + format_time(length) + " s"); };
  switch (kind) {
    case FaultKind::kCrash:
      length = std::min(length, sc_.crash_downtime);
      say(n + " crashes, restarts empty");
      net_->crash(node, length);
      break;
    case FaultKind::kCut:
      say(h + " cut from " + n);
      net_->partition(host, node, now + length);
      break;
    case FaultKind::kIsolate:
      say(h + " cut from every node");
      for (int i = 0; i < sc_.nodes; ++i) net_->partition(host, i, now + length);
      break;
    case FaultKind::kSlow: {
      Link& l = net_->link(host, node);
      l.slow_until = now + length;
      l.slow_extra = rng.between(5 * kMs, rng.percent(50) ? 100 * kMs : 800 * kMs);
      say(h + " to " + n + " slow (up to " + format_time(l.slow_extra) + " s more)");
      break;
    }
    case FaultKind::kLossy: {
      Link& l = net_->link(host, node);
      l.lossy_until = now + length;
      l.loss_per_mille = static_cast<int>(rng.between(20, 300));
      say(h + " to " + n + " loses " + std::to_string(l.loss_per_mille) + "/1000 messages");
      break;
    }
    case FaultKind::kPause:
      clients_[static_cast<std::size_t>(host)]->freeze(length, false);
      break;
    case FaultKind::kFreeze:
      clients_[static_cast<std::size_t>(host)]->freeze(length, true);
      break;
    case FaultKind::kStall: {
      // A VM in trouble: its network goes for about a lease, it stops within an io_timeout of
      // that, and runs again a moment after its network is back (what it sent before it
      // stopped arrives late, and what came back waits for it).
      // Half the time it stops just after a renewal went out (a pause that follows a write, as a
      // GC or a VM's balloon does), which leaves that renewal in flight across the stop.
      const Time expire = sc_.cfg.redis.expire.count() * kMs;
      const Time io = sc_.cfg.redis.io_timeout.count() * kMs;
      SimClient& c = *clients_[static_cast<std::size_t>(host)];
      if (c.stopped()) return;  // one stop at a time
      const Time next = c.next_renewal();
      const Time sent = next != kNever && rng.percent(50) ? next - now : 0;
      const Time stop_after = sent + rng.between(0, io * 4 / 5);
      const Time cron = sc_.cfg.redis.cron.count() * kMs;
      length = sent + rng.between(expire - cron, expire);
      const Time stopped = std::max<Time>(length - stop_after, 0) + rng.between(0, 100 * kMs);
      world_.trace("fault", h + " stalls: cut from every node for " + format_time(length) + " s, stopped " +
                                format_time(stop_after) + " s in for " + format_time(stopped) + " s");
      for (int i = 0; i < sc_.nodes; ++i) net_->partition(host, i, now + length);
      world_.after(stop_after, nullptr, [this, host, stopped] { clients_[static_cast<std::size_t>(host)]->freeze(stopped, true); });
      break;
    }
    case FaultKind::kDelete: {
      // An operator's DEL, timed a moment before cron fires the other hosts' runs (the key is
      // then taken at once, and may be freed again before its holder renews). The holder's
      // next renewal must find it lost: the fence counter, which stays, proves a later grant.
      const Time period = sc_.cron_period;
      const Time at = period > 0 ? std::max<Time>((now / period + 1) * period - rng.between(0, 20 * kMs) - now, 0) : 0;
      std::vector<std::string> keys;
      const lock::LeaseKeys names = lock::LeaseKeys::derive(sc_.cfg.redis.key);
      for (int i = 0; i < sc_.limit; ++i) keys.push_back(names.slot(i));
      world_.after(at, nullptr, [this, node, keys, n] {
        for (const auto& lease : net_->operator_delete(node, keys)) {
          world_.trace("fault", "an operator deletes the key of lease " + lease + " on " + n);
          checker_->lease_deleted(lease);
        }
      });
      break;
    }
    case FaultKind::kCount: break;
  }
}

}  // namespace redisgo::simulator
