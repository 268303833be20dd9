#pragma once
/// The simulated network: redis::Network and redis::Link (src/redis/link.h, docs/DESIGN.md
/// "The seam") over sim::Nodes, on a simulated clock, in one thread. The lock layer's real
/// RedlockBackend runs over it unchanged (LeaseOptions::network, and clock() as its Clock).
///
/// The model, as close to a socket as the lease can tell:
///  - a command travels `latency` to its node, runs there at once (a script atomically), and
///    its reply travels `latency` back; commands on one link are run and answered in order;
///  - a link's first command opens a connection on the node (no AUTH/SELECT: the nodes have
///    neither); its deadline is connect_timeout + io_timeout, a later one's io_timeout (plus
///    what a WAIT blocks), from when it was sent, as AsyncConnection counts them;
///  - a deadline that passes while its link is driven (drive(), poll_once()) fails every
///    call of the link as Fault::kTimeout, "no reply within N ms", and closes it; what was
///    sent still runs on the node (it was on the wire), and the node then drops the client;
///  - a node that is down refuses a new connection (kConnect) and resets an open one
///    (kClosed); a node that crashed (crash()) answers an open connection's next command by
///    closing it (kClosed), and poll_once() notices an idle link's connection gone at once
///    (a socket would see the FIN after `latency`);
///  - scripts go as EVAL until one ran on the connection, then as EVALSHA;
///  - replies are encoded as RESP and parsed by hiredis (redis::ReplyReader), as on a socket.
/// Not modelled: cancel_fd and the heartbeat (drive() ignores both), locators (Sentinel,
/// Cluster), AUTH, TLS, partial writes (unsent() is always false), a reply lost on the way.
///
/// Time moves only inside drive() (to the next delivery or deadline) and advance(). Every
/// delivery is written to trace(): the same inputs give the same trace, byte for byte.
/// Links must not outlive their network.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis/link.h"
#include "sim/node.h"
#include "util/clock.h"

namespace redisgo::sim {

class Network final : public redis::Network {
 public:
  /// The wall clock starts at `start_us` (µs since the epoch); the steady clock and clock()
  /// start 1000 s after their zero (so that a zero time_point is never "now").
  explicit Network(std::int64_t start_us);
  ~Network() override;
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  /// `node` serves `at` (ConnectionOptions::endpoint), `latency` each way.
  void serve(const redis::Endpoint& at, Node& node, redis::Millis latency = redis::Millis(1));
  /// For what is sent from now on.
  void set_latency(const redis::Endpoint& at, redis::Millis latency);
  /// Down: refuses connections and resets open ones, until up again.
  void set_down(const redis::Endpoint& at, bool down);
  /// The node at `at` restarts empty now (sim::Node::crash at the simulated time).
  void crash(const redis::Endpoint& at);

  std::int64_t now_us() const noexcept;
  /// Moves time on by `d`, delivering what falls due on the way (no link's deadline is
  /// judged: nobody drives them meanwhile).
  void advance(redis::Millis d);
  /// The lease's Clock (RedlockBackend's `clock`) on the simulated time.
  const Clock& clock() const noexcept;
  /// One line per command run, reply delivered, call failed or note(), in order.
  const std::vector<std::string>& trace() const noexcept;
  /// Adds a line of the caller's to the trace (an outcome it wants compared).
  void note(const std::string& line);

  std::unique_ptr<redis::Link> link(redis::ConnectionOptions options) override;
  redis::DriveEnd drive(const std::vector<redis::Link*>& links, const std::function<bool()>& done,
                        const redis::DriveOptions& options) override;
  void poll_once(const std::vector<redis::Link*>& links) noexcept override;
  redis::SteadyClock::time_point now() const noexcept override;
  std::int64_t wall_us() const noexcept override;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace redisgo::sim
