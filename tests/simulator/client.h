#pragma once
/// A simulated host running the daemon (docs/DESIGN.md "Simulation"). What decides is the real
/// code: the StandbyMachine and its verdicts (lock::classify), the lease backend
/// (lock::RedlockBackend: acquire, renew, release, the line, the fence), the RenewalMachine,
/// the LeaderMachine and the keeper's deadline rule, the wake messages' reading
/// (lock::read_wake). What is simulated is what carries out their actions, in place of the
/// drivers that own fds, threads and processes (daemon/standby_driver.cpp,
/// daemon/leader_driver.cpp, daemon/leader_loop.cpp, lock/renewer.cpp, process/keeper.cpp):
/// this file mirrors each of them step for step, minus the logging, the metrics and the
/// terminal, and decides nothing they do not.
///
/// Each host has three processes, frozen separately or together: the daemon (its main fiber
/// and, while it leads, the renewal fiber, which owns a backend of its own as the renewal
/// thread does), the keeper (its deadline timers) and the child (its planned exit). A oneshot
/// daemon that ends is followed by a new one (a new pid, a new holder id) after a pause, as cron
/// would start it again.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backoff/backoff.h"
#include "daemon/leader.h"
#include "daemon/standby.h"
#include "lock/lease.h"
#include "process/deadline_rule.h"
#include "simulator/checker.h"
#include "simulator/host_clock.h"
#include "simulator/subscription.h"

namespace redisgo::simulator {

class Sim;
class HostNetwork;

class SimClient {
 public:
  SimClient(Sim& sim, int index);
  ~SimClient();
  SimClient(const SimClient&) = delete;
  SimClient& operator=(const SimClient&) = delete;

  /// Starts the first daemon at `at`.
  void start(Time at);
  /// What the checker reads.
  HolderView view() const;
  const std::string& name() const { return name_; }
  /// SIGSTOP for `length`: the daemon alone (its keeper and child run on), or the whole host.
  void freeze(Time length, bool whole_host);
  /// The daemon is stopped now.
  bool stopped() const;
  /// While it leads: when its next renewal round goes out (kNever: none waiting).
  Time next_renewal() const;

 private:
  class Renewer;
  struct Daemon;
  struct Lease;

  // The daemon's life (client.cpp).
  void run_daemon();
  std::string new_holder();
  lock::LeaseOptions lease_options(const std::string& holder) const;
  // The standby phase (client.cpp): StandbyDriver's steps.
  std::variant<lock::Acquisition, int> contend();
  daemon::standby::Actions attempt();
  daemon::standby::WaitEnded wait_for(const daemon::standby::Wait& w);
  daemon::standby::WaitEnded wait_until(Clock::time_point until);
  std::optional<daemon::standby::WaitEnded> heard();
  void drain_subscriptions();
  // The leader phase (client_leader.cpp): LeaderDriver's steps.
  std::optional<int> lead(const lock::Acquisition& acquired);
  void run_leader();
  bool drive(const daemon::leader::Event& event);
  daemon::leader::ChildSeen child_seen() const;
  void wait_turn(const daemon::leader::ChildSeen& seen);
  void after_poll();
  std::optional<int> end_lease();
  void release_lease();
  daemon::LeaseView lease_view() const;
  // The child and its keeper (client_leader.cpp).
  daemon::leader::Event spawn_child(Clock::time_point kill_at);
  void signal_child(int sig, const char* by);
  void child_ended(int code);
  void keeper_take(const process::DeadlineMessage& m);
  void keeper_decide();
  // The renewal fiber tells the main one (the renewer's wake eventfd).
  void on_lease_moved(Clock::time_point old_until, Clock::time_point new_until);

  /// The main fiber waits until `t` (simulated), or until woken (a wake pending ends it at once).
  void main_wait(Time t);
  void wake_main();
  Time sim_time(Clock::time_point p) const;
  void trace(const std::string& what) const;

  Sim& sim_;
  int index_;
  std::string name_;
  HostClock clock_;
  Process daemon_proc_;
  Process keeper_proc_;
  Process child_proc_;
  int pid_ = 1000;
  std::uint64_t child_seq_ = 0;  // children started on this host: an event names the one it is for
  std::unique_ptr<Daemon> d_;   // the daemon process running, if any
  std::unique_ptr<Lease> lease_;  // its lease, while it leads
  Fiber* main_ = nullptr;
  bool main_woken_ = false;
};

}  // namespace redisgo::simulator
