#pragma once
/// Real Redis deployments for the Production Redis tests (issue 10), made on loopback
/// ports by the tests themselves: a Sentinel set (a master, a replica and three
/// sentinels) and a Cluster of three masters (`redis-cli --cluster create`).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/fault_proxy.h"
#include "support/redis_server.h"

namespace redisgo::testing {

class SentinelSet {
 public:
  static constexpr const char* kMaster = "mymaster";
  /// Starts the master and the replica, waits for the replication link, then three
  /// sentinels (quorum 2, down-after 1000 ms, failover-timeout 3000 ms) and waits until
  /// each knows the replica and the other sentinels. Fails the test if it cannot.
  SentinelSet();
  /// The same, with the replica's link to the master through a FaultProxy (replication_link()),
  /// so that a test can hold back or delay what the master sends it (failover-timeout is then
  /// 120 s: the sentinels would otherwise point the replica at the master's own address).
  struct Options {
    bool proxied_replication = false;
  };
  explicit SentinelSet(Options options);
  /// The proxy between the replica and the first master (proxied_replication only).
  FaultProxy& replication_link() { return *link_; }

  RedisServer& master() { return *servers_[master_]; }
  RedisServer& replica() { return *servers_[1 - master_]; }
  std::vector<std::string> sentinel_addresses() const;
  /// `sentinels = [...]` and `sentinel_master` lines for a config.
  std::string config_lines() const;
  /// The master the sentinels name now (first sentinel that answers).
  std::string named_master() const;
  /// SENTINEL FAILOVER through one sentinel; then waits (bounded) until every sentinel
  /// names the former replica and it says ROLE master. The roles swap.
  void failover();
  /// SIGKILLs the master; waits (bounded) until the sentinels have promoted the replica.
  /// The roles swap; the old master stays down.
  void kill_master();
  /// Sentinel i (0..2).
  RedisServer& sentinel(std::size_t i) { return *sentinels_[i]; }

 private:
  void wait_for_master(const std::string& address, std::chrono::milliseconds timeout);
  std::vector<std::unique_ptr<RedisServer>> servers_;   // [0] first master, [1] first replica
  std::vector<std::unique_ptr<RedisServer>> sentinels_;
  std::unique_ptr<FaultProxy> link_;
  int master_ = 0;
};

class ClusterSet {
 public:
  /// Three masters with cluster-enabled, joined by `redis-cli --cluster create` (no
  /// replicas); waits until CLUSTER INFO says ok on every node.
  ClusterSet();
  RedisServer& node(std::size_t i) { return *nodes_[i]; }
  std::size_t size() const { return nodes_.size(); }
  std::vector<std::string> addresses() const;
  /// The node (index) that owns `slot` now.
  std::size_t owner_of(int slot);
  /// Moves `slot` from its owner to node `to` the way redis-cli does: IMPORTING on the
  /// target, MIGRATING on the source, MIGRATE of its keys, then SETSLOT NODE on both.
  /// `between` runs after the keys of the slot have moved but before the slot itself has
  /// (the window in which the source answers ASK).
  void migrate(int slot, std::size_t to, const std::function<void()>& between = nullptr);
  /// Node ids, by index.
  std::string id_of(std::size_t i);

 private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace redisgo::testing
