#pragma once
/// From the [redis] section to the redis and lock modules' options: the nodes of each
/// mode (redisgo_task(1), PRODUCTION REDIS), TLS, and the locators that find a Sentinel master or
/// a Cluster slot owner. One place, so `task`, `status` and `check` reach the same servers.

#include <string>

#include "config/config.h"
#include "lock/lease.h"
#include "redis/topology.h"

namespace redisgo::wiring {

/// The lock module's options. With sentinels or cluster_nodes, the one logical node
/// carries a locator (started on first use). Throws ConfigError when a TLS file does
/// not load (it passed validation, but its content is not what OpenSSL needs).
lock::LeaseOptions lease_options(const config::Config& config, const std::string& holder);
/// The same without the nodes: the key, the holder and what the config says of the lease.
/// For a caller that brings its own nodes (the simulator's).
lock::LeaseOptions lease_settings(const config::Config& config, const std::string& holder);

/// The sentinels' connections and master name (their own AUTH, the nodes' TLS).
redis::SentinelOptions sentinel_options(const config::Config& config);
/// The cluster seeds' connections (the nodes' AUTH and TLS) and the key.
redis::ClusterOptions cluster_options(const config::Config& config);

/// One server found by Sentinel or Cluster (or listed), with the nodes' AUTH, db and TLS as
/// `task` uses them, pinned to `at` instead of following a locator (`check`, `list`).
redis::ConnectionOptions pinned_options(const config::Config& config, const redis::Endpoint& at);

/// redisgo_task_redis_errors_total's kind of a fault (one of metrics::kRedisErrorKinds);
/// nullptr for kNone and kCancelled, which are no failure of the server.
const char* redis_error_kind(redis::Fault fault);

/// For the start line: "nodes=a:1,b:2", "sentinels=a:26379,b:26379 master=mymaster",
/// "cluster_nodes=a:7000 slot=1234".
std::string describe_servers(const config::RedisConfig& redis);

}  // namespace redisgo::wiring
