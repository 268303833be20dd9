#pragma once
/// SimClient's parts (internal to client.cpp and client_leader.cpp): the daemon process that
/// runs, its lease while it leads, and the renewal fiber.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/leader.h"
#include "daemon/rules.h"
#include "daemon/standby.h"
#include "lock/renewal_machine.h"
#include "simulator/client.h"
#include "simulator/seam.h"

namespace redisgo::simulator {

/// One run of `redisgo_task task` on the host.
struct SimClient::Daemon {
  config::Config cfg;  // the scenario's, with this host's mode
  std::string holder;
  lock::LeaseOptions lease_opts;
  lock::LeaseKeys keys;
  int signal_fd = -1;  // the signalfd the main backend's acquisitions watch
  bool stop_requested = false;
  std::unique_ptr<HostNetwork> net;
  std::unique_ptr<lock::LeaseBackend> backend;
  std::unique_ptr<backoff::Backoff> backoff;
  std::optional<daemon::StandbyMachine> standby;
  daemon::RestartTracker restarts;
  std::vector<std::unique_ptr<SimSubscription>> subs;
  std::vector<bool> turned;  ///< the nodes that woke us with a turn since our last attempt
  bool waiting = false;  // in the standby phase (the checker's live waiter)

  explicit Daemon(const config::Config& c)
      : cfg(c),
        keys(lock::LeaseKeys::derive(cfg.redis.key)),
        restarts(cfg.task.restart_limit, cfg.task.restart_window, cfg.task.restart_delay) {}
};

/// The renewal thread (lock/renewer.cpp) as a fiber: it waits, sends the rounds of its
/// RenewalMachine through its own backend, and publishes what the machine holds.
class SimClient::Renewer {
 public:
  Renewer(SimClient& client, std::unique_ptr<lock::LeaseBackend> backend, int stop_fd, Millis interval,
          Clock::time_point lease_start, Clock::time_point initial);
  ~Renewer();

  Clock::time_point valid_until() const { return valid_until_; }
  Clock::time_point renewed_at() const { return renewed_at_; }
  bool lost() const { return lost_; }
  bool refused() const { return refused_; }
  const std::string& lost_reason() const { return lost_reason_; }
  std::uint64_t renewals() const { return renewals_; }
  std::uint64_t rounds() const { return rounds_; }
  /// When the next round goes out (the wait it is in), or time_point::max().
  Clock::time_point next_round() const { return next_round_; }
  /// Stops renewing (idempotent) and waits for the fiber to end (the thread's join).
  void stop();
  lock::Release stop_and_release();

 private:
  void run();
  lock::Renewal send_round();
  void publish(const lock::RenewalMachine::Step& step);

  SimClient& client_;
  std::unique_ptr<lock::LeaseBackend> backend_;
  int stop_fd_;
  lock::RenewalMachine machine_;
  Clock::time_point valid_until_;
  Clock::time_point renewed_at_;
  bool lost_ = false;
  bool refused_ = false;
  std::string lost_reason_;
  std::uint64_t renewals_ = 0;
  std::uint64_t rounds_ = 0;
  bool stopped_ = false;
  Clock::time_point next_round_ = Clock::time_point::max();
  Fiber* fiber_ = nullptr;
  Fiber* joiner_ = nullptr;
};

/// The leader phase's live objects (daemon/leading.h).
struct SimClient::Lease {
  lock::Acquisition acquired;
  std::unique_ptr<Renewer> renewer;
  std::optional<daemon::LeaderMachine> machine;
  // The child, as its keeper and the daemon know it.
  bool child_alive = false;
  bool child_reaped = true;       // its end was fed to the machine (ChildExited)
  int child_code = 0;
  std::uint64_t child_gen = 0;    // one per child: events of an older one are stale
  // The keeper: the rule's state and what it did on its own.
  process::DeadlineState keeper;
  process::DeadlineSettings keeper_settings;
  std::uint64_t keeper_timer = 0;
  int keeper_signal = 0;
  Clock::time_point keeper_at{};
};

}  // namespace redisgo::simulator
