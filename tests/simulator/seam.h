#pragma once
/// The lock layer's seam (redis/link.h) on the simulated network: a SimLink per node is a Wire
/// that completes redis::Calls, and a HostNetwork per simulated process makes the links, is
/// the process's steady and wall clocks, and drives links by parking the calling fiber until
/// its calls are answered, its deadline passes on the simulated clock or its cancel fd is
/// raised. So RedlockBackend runs unmodified: its drive() returns when the real one would.

#include <memory>
#include <string>
#include <vector>

#include "redis/link.h"
#include "simulator/host_clock.h"
#include "simulator/network.h"

namespace redisgo::simulator {

class Sim;

/// A server's reply as hiredis would have parsed it.
redis::Reply to_reply(const sim::Resp& r);

class HostNetwork final : public redis::Network {
 public:
  /// The links of `process` on host `host`, timed by `clock`.
  HostNetwork(Sim& sim, int host, Process* process, const HostClock& clock);
  ~HostNetwork() override;

  std::unique_ptr<redis::Link> link(redis::ConnectionOptions options) override;
  redis::DriveEnd drive(const std::vector<redis::Link*>& links, const std::function<bool()>& done,
                        const redis::DriveOptions& options) override;
  void poll_once(const std::vector<redis::Link*>& links) noexcept override;
  redis::SteadyClock::time_point now() const noexcept override;
  std::int64_t wall_us() const noexcept override { return clock_.wall_us(); }

  /// The simulated instant at which the steady clock reads `t`.
  Time when(redis::SteadyClock::time_point t) const;

 private:
  Sim& sim_;
  int host_;
  Process* process_;
  const HostClock& clock_;
};

/// The node a simulated endpoint names ("node2:6379" is node 2), or -1.
int node_of(const redis::Endpoint& endpoint);
/// The endpoint of node `i`.
redis::Endpoint endpoint_of(int node);

}  // namespace redisgo::simulator
