#pragma once
/// One simulated run (docs/DESIGN.md "Simulation"): a seed draws the scenario (nodes, clients,
/// limit, modes, timings, clock offsets) and, as the run goes, its faults; the clients run the
/// real lock layer and phase machines against the simulated nodes; the checker watches the
/// invariants. A violation halts the run and names the seed; run_seed() with tracing on replays
/// the same run and returns its trace.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "lock/lease.h"
#include "simulator/checker.h"
#include "simulator/network.h"
#include "simulator/world.h"

namespace redisgo::simulator {

class SimClient;
class HostNetwork;

/// No fault lasts longer than this, so the last one has ended by faults_until + kLongestFault.
inline constexpr Time kLongestFault = 8 * kSecond;

/// The faults a run draws from (faults.cpp).
enum class FaultKind {
  kCrash,      ///< a node crashes and restarts empty
  kCut,        ///< a host is cut from one node
  kIsolate,    ///< a host is cut from every node
  kSlow,       ///< a host's messages to one node are slow
  kLossy,      ///< a host loses messages to one node (each is late past io_timeout)
  kPause,      ///< SIGSTOP of a daemon (its keeper and child run on)
  kFreeze,     ///< the whole host stops (a paused VM)
  kStall,      ///< a host loses its network, then stops, then runs again just after it is back
  /// An operator DELs the lease key (and slot keys) on a node; the fence counter stays. Only the
  /// `deletes` family draws it (scenario.cpp), so that the other families' seeds do not move.
  kDelete,
  kCount
};

/// What a seed draws before the run starts.
struct Scenario {
  std::string family;  ///< which way the run leans (scenario.cpp)
  int nodes = 1;
  int clients = 3;
  int limit = 1;
  config::Config cfg;                    ///< what every client runs with (but its mode)
  std::vector<config::Mode> modes;       ///< per client
  std::vector<std::int64_t> node_offsets_us;
  std::vector<std::int64_t> host_wall_offsets_us;
  std::vector<std::int64_t> host_boot_offsets_us;
  /// How messages travel (µs, one way): a LAN, or a jittery network where two clients' requests
  /// often reach two nodes in opposite orders.
  NetworkSettings network;
  /// A oneshot host's next run: at the next multiple of this (cron fires every host at the same
  /// second, give or take a few ms), or 0: a while after the last one ended.
  Time cron_period = 0;
  /// Percent of children that end within 100 ms (the rest: up to 500 ms, 5 s, 20 s).
  int brief_children = 20;
  /// The longest a crashed node stays down before it restarts empty.
  Time crash_downtime = 2 * kSecond;
  /// Percent of the faults that hit a host which hit one that leads at that moment.
  int hit_leader = 50;
  int fault_rate = 0;                    ///< faults per 10 simulated seconds (0: none)
  /// The faults' relative weights, by kind (FaultKind): each run leans its own way.
  std::vector<int> fault_weights;
  Time faults_until = 0;                 ///< no fault starts after this
  Time quiet_for = 0;                    ///< how long the run goes on after the last fault ends
  std::string describe() const;
};

/// Counters of a run.
struct Stats {
  std::uint64_t acquires = 0;   ///< acquisition attempts
  std::uint64_t renewals = 0;   ///< renewal rounds
  std::uint64_t releases = 0;
  std::uint64_t leases = 0;     ///< acquisitions that won
  std::uint64_t children = 0;   ///< children started
  std::uint64_t faults = 0;
  std::uint64_t commands = 0;   ///< commands run on the nodes
  std::uint64_t events = 0;
  Time simulated = 0;
  /// Lease operations: acquisition attempts, renewal rounds and releases.
  std::uint64_t operations() const { return acquires + renewals + releases; }
  Stats& operator+=(const Stats& o);
};

/// A historic defect brought back (docs/DESIGN.md "Simulation", mutants): a script's text
/// changed on its way to the simulated nodes.
struct Mutant {
  std::string name;
  std::string what;  ///< the defect, in words
  struct Edit {
    std::string script;  ///< the file under src/lock/lua/ whose text is changed
    std::string from;    ///< exact text in the embedded (comment-free) script
    std::string to;
  };
  std::vector<Edit> edits;
};
const std::vector<Mutant>& mutants();
const Mutant* find_mutant(const std::string& name);

struct RunOptions {
  bool trace = false;
  const Mutant* mutant = nullptr;
  /// The scenario family every run draws ("" = each run draws its own): mixed, restarts, herd,
  /// stalls.
  std::string family;
};

/// The families a scenario can lean towards (scenario.cpp).
const std::vector<std::string>& families();

struct RunResult {
  std::uint64_t seed = 0;
  std::optional<std::string> violation;
  std::string scenario;
  std::string trace;  ///< with RunOptions::trace
  Stats stats;
};

/// One run of `seed`.
RunResult run_seed(std::uint64_t seed, const RunOptions& options = {});

/// A mutant hunted from a starting seed.
struct Catch {
  std::optional<std::uint64_t> seed;  ///< the first seed whose verdict the mutant changed
  std::optional<std::string> violation;
  std::uint64_t runs = 0;             ///< seeds run with the mutant
  double seconds = 0;                 ///< wall time, unmutated re-runs included
  Stats stats;
};
/// Runs `mutant` on seeds first, first + 1, ... (at most `budget` of them) until one violates
/// an invariant that the same seed without the mutant keeps: a seed that fails unmutated too
/// (a defect of today's code) proves nothing about the mutant and is passed over.
Catch hunt(const Mutant& mutant, std::uint64_t first, std::uint64_t budget, const std::string& family = "");

/// The run's shared context: what the clients and the fault schedule work through.
class Sim {
 public:
  Sim(std::uint64_t seed, const RunOptions& options);
  ~Sim();
  Sim(const Sim&) = delete;
  Sim& operator=(const Sim&) = delete;

  RunResult run();

  World& world() { return world_; }
  Network& net() { return *net_; }
  Checker& checker() { return *checker_; }
  const Scenario& scenario() const { return sc_; }
  Stats& stats() { return stats_; }

  /// Cancel fds (what the daemon's signalfd and the renewer's stop fd are to the lock layer):
  /// numbers of the simulator's own, readable once raised until cleared.
  int new_cancel_fd();
  void raise_cancel(int fd);
  void clear_cancel(int fd);
  bool cancelled(int fd) const { return fd >= 0 && raised_.count(fd) > 0; }
  /// The fiber to notify when `fd` is raised (the one waiting on it); null: none.
  void watch_cancel(int fd, Fiber* f);

  /// The real lease backend (lock::make_redis_backend) over `net`'s simulated links.
  std::unique_ptr<lock::LeaseBackend> make_backend(const lock::LeaseOptions& options, const Clock& clock,
                                                   HostNetwork& net);

 private:
  void schedule_faults();
  void fault();
  void apply(FaultKind kind, int host, int node, Time length);
  void heal_and_quiet();
  void liveness_tick();

  World world_;
  RunOptions options_;
  Scenario sc_;
  std::unique_ptr<Network> net_;
  std::unique_ptr<Checker> checker_;
  std::vector<std::unique_ptr<SimClient>> clients_;
  Stats stats_;
  int next_fd_ = 1000;
  std::set<int> raised_;
  std::map<int, Fiber*> watchers_;
  Time end_ = 0;
};

/// Draws a scenario from the run's Rng (of `family` when it is not "").
Scenario draw_scenario(Rng& rng, const std::string& family = "");

}  // namespace redisgo::simulator
