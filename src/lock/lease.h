#pragma once
/// The lease as the daemon sees it: acquire / renew / release / inspect over one or more
/// independent Redis nodes (SPEC.md invariants 2-4; issue 4 for N > 1).
///
/// Every ownership check runs inside Lua (redis/scripts.h): acquire is SET NX PX plus the
/// fence INCR in one script, renew is compare-and-PEXPIRE, release is compare-and-DEL
/// plus PUBLISH on the release channel.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "redis/connection.h"
#include "util/clock.h"

namespace redisgo::lock {

using Millis = std::chrono::milliseconds;

/// Names derived from the lock key. They share its Redis Cluster hash slot: the key's
/// {tag} if it has one, else the whole key becomes the tag ("{key}:fence").
struct LeaseKeys {
  std::string key;      ///< the lease itself (value = holder id)
  std::string fence;    ///< fencing counter
  std::string channel;  ///< release notifications (PUBLISH by the release script)
  static LeaseKeys derive(const std::string& key);
};

struct LeaseOptions {
  std::vector<redis::ConnectionOptions> nodes;  ///< 1 = single instance; N = Redlock, quorum N/2+1
  std::string key;
  std::string holder;                           ///< this holder's id (the value stored)
  Millis ttl{5000};
  double drift_factor = 0.01;                   ///< validity = ttl - elapsed - (ttl*drift_factor + drift_fixed)
  Millis drift_fixed{2};
  /// Time one operation may take on one node before it counts as a "no" vote. 0 = each
  /// connection's io_timeout. Kept well below ttl so one slow node cannot eat the lease.
  Millis node_timeout{0};
  /// A node that failed (refused, timed out, broken) is not contacted by acquire/renew
  /// again before its own retry time: node_retry_initial after the first failure,
  /// doubling up to node_retry_max, reset by a success. So a dead node costs the others'
  /// renewals nothing. Release and inspect still try every node.
  Millis node_retry_initial{100};
  Millis node_retry_max{2000};
  /// An fd that, when readable, cancels an acquisition in flight (the daemon passes its
  /// signalfd, so SIGTERM ends a wait on a hung node at once). -1 = none. Renew, release
  /// and inspect ignore it: they must finish.
  int cancel_fd = -1;
};

/// Outcome of one acquisition attempt.
struct Acquisition {
  bool acquired = false;
  std::uint64_t token = 0;              ///< fencing token (acquired only)
  Clock::time_point valid_until{};      ///< local lease deadline (acquired only)
  int votes = 0;                        ///< nodes that granted it
  /// Not acquired: the longest remaining TTL (ms) reported by a node where someone else
  /// holds the key, so a waiter need not poll faster than the lease can expire. -1 unknown.
  std::int64_t holder_ttl_ms = -1;
  std::string holder;                   ///< not acquired: current holder if a node told us
  std::vector<std::string> errors;      ///< per-node failures ("redis 127.0.0.1:7001: timeout")
  /// Per node, in LeaseOptions::nodes order: the token that node's acquire script
  /// returned (before the quorum raise), 0 where it did not grant. For diagnostics and
  /// for the test that shows why the plain per-node maximum is not enough.
  std::vector<std::uint64_t> node_tokens;
};

/// Outcome of one renewal round.
struct Renewal {
  bool confirmed = false;               ///< a quorum extended our lease
  /// A quorum can no longer be ours: enough nodes answered that the key is not ours
  /// (expired or taken) that fewer than a quorum could still confirm.
  bool lost = false;
  Clock::time_point valid_until{};      ///< confirmed only: new local deadline
  int votes = 0;
  std::vector<std::string> errors;
};

/// One node's view of the key (for `status`).
struct NodeView {
  std::string node;          ///< endpoint string
  bool reachable = false;
  std::string error;         ///< when unreachable
  bool held = false;
  std::string holder;
  std::int64_t pttl_ms = -2; ///< as PTTL: -2 no key, -1 no expiry
  std::uint64_t token = 0;   ///< current fence counter (0 = none)
};

/// The seam between the daemon and Redis (a fake implements it in daemon tests).
class LeaseBackend {
 public:
  virtual ~LeaseBackend() = default;
  virtual Acquisition acquire() = 0;
  virtual Renewal renew() = 0;
  /// Compare-and-delete on every node (also those that did not answer the acquire).
  /// Never throws; failures are logged by the caller from the returned count.
  virtual int release() noexcept = 0;
  virtual std::vector<NodeView> inspect() = 0;
  virtual int node_count() const = 0;
  int quorum() const { return node_count() / 2 + 1; }
};

/// The real backend: N >= 1 independent Redis nodes, operations sent to all nodes in
/// parallel (pipelined over non-blocking polls, one connection per node), each node
/// bounded by node_timeout. One node is the N = 1 case of the same code.
/// Not thread-safe; the renewal thread makes its own instance (own connections).
std::unique_ptr<LeaseBackend> make_redis_backend(const LeaseOptions& options,
                                                 const Clock& clock = SystemClock::instance());

}  // namespace redisgo::lock
