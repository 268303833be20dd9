#pragma once
/// The real LeaseBackend: N >= 1 independent Redis nodes, quorum N/2 + 1 (issue 4). One
/// node is the N = 1 case of the same code.
///
/// Every operation is one round: the script is sent to every node without waiting
/// (Connection::send_eval), then all sockets are poll()ed together until each node has
/// answered or node_timeout has passed since its own send. So a slow or hung connected
/// node costs a round at most node_timeout, not the sum over nodes, and cannot eat the
/// lease. Connected nodes are sent to first; a node that must (re)connect does so
/// synchronously, each blocking step bounded by node_timeout (its connect/io timeouts are
/// capped to it), and only when its retry time has come.
///
/// A node that comes back empty (restarted without persistence) cannot break exclusion
/// if it returns no sooner than one TTL after it went down: by then every lease it had
/// granted has expired on the clock of every holder too (validity subtracts the drift),
/// so granting again is what it would have done anyway. Sooner, it could give a second
/// holder a quorum; that restart delay is the operator's side of the Redlock contract.
/// Its fence counter restarts from its TIME floor (lock/fencing.h).
/// A node that throws, times out or cannot be reached is a "no" vote; its connection is
/// dropped (a late reply must never be read as the answer to a later command) and it is
/// left alone until its own retry time (LeaseOptions::node_retry_*), so while it is down
/// the other nodes' renewals do not pay for reconnect attempts.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lock/lease.h"
#include "redis/connection.h"

namespace redisgo::lock {

/// The local lease deadline of an operation sent at `start`:
/// start + ttl - (ttl * drift_factor + drift_fixed). (Elapsed time is accounted for by
/// the caller comparing it with the clock after the replies.)
Clock::time_point validity_deadline(Clock::time_point start, Millis ttl, double drift_factor, Millis drift_fixed);

/// Per-node retry schedule after failures: initial, doubling, capped at max.
Millis next_node_backoff(Millis previous, Millis initial, Millis max);

class RedlockBackend final : public LeaseBackend {
 public:
  /// Throws std::invalid_argument for no nodes or a non-positive ttl. Does not connect.
  RedlockBackend(LeaseOptions options, const Clock& clock);

  /// Quorum acquire + fencing raise (lock/fencing.h). On failure releases on every node.
  Acquisition acquire() override;
  /// Quorum compare-and-PEXPIRE. confirmed moves the deadline from the send time.
  Renewal renew() override;
  int release() noexcept override;
  std::vector<NodeView> inspect() override;
  int node_count() const override { return static_cast<int>(nodes_.size()); }

  const LeaseKeys& keys() const { return keys_; }
  /// The effective per-round timeout (node_timeout, else io_timeout, else ttl / 4).
  Millis node_timeout() const { return node_timeout_; }

 private:
  struct Node {
    explicit Node(redis::ConnectionOptions options) : conn(std::move(options)) {}
    redis::Connection conn;
    Clock::time_point retry_at{};  // acquire/renew skip the node until then
    Millis backoff{0};             // 0 = healthy
    std::string last_error;
  };
  /// One node's outcome in a round.
  struct NodeReply {
    enum class Status { kReply, kSkipped, kFailed };
    Status status = Status::kSkipped;
    redis::Reply reply;
    std::string error;
  };

  /// Runs `script` on the nodes selected by `only` (all when null), in parallel.
  /// `respect_backoff`: skip nodes before their retry time (acquire/renew); release and
  /// inspect try every node. Never throws for a node's failure. `cancellable`: stop waiting
  /// as soon as LeaseOptions::cancel_fd is readable (the nodes still pending are dropped
  /// and count as "no", without a retry backoff).
  std::vector<NodeReply> round(const redis::Script& script, const std::vector<std::string>& keys,
                               const std::vector<std::string>& args, const std::vector<bool>* only,
                               bool respect_backoff, bool cancellable = false);
  void node_failed(Node& node, std::string error) noexcept;
  void node_ok(Node& node) noexcept;
  /// Release on the selected nodes (all when null), ignoring their retry backoff;
  /// returns how many deleted a key that was ours.
  int release_on(const std::vector<bool>* only, bool cancellable = false) noexcept;

  LeaseOptions options_;
  const Clock& clock_;
  LeaseKeys keys_;
  Millis node_timeout_;
  std::string ttl_arg_;
  std::vector<Node> nodes_;
};

}  // namespace redisgo::lock
