#pragma once
/// Where the key lives (redisgo_task(1), PRODUCTION REDIS): a fixed node
/// needs nothing here (ConnectionOptions::endpoint); a Sentinel-managed master and the
/// Cluster master that owns the key's hash slot are found by a Locator, which every
/// connection of the process asks at connect time (ConnectionOptions::locator).
///
/// A locator answers from what it knows at once and learns on its own thread: the
/// sentinels' `SENTINEL get-master-addr-by-name` and their `+switch-master` messages, or
/// the cluster's `CLUSTER SLOTS` and the `MOVED` replies that connections pass on. Every
/// change of answer bumps generation(): a connection made under an older one reconnects
/// before its next command, so a failover moves the renewals within one `cron`. The
/// thread does all its I/O through non-blocking connections and a poll() that also
/// watches a stop fd: destroying a locator never waits on a hung sentinel.
///
/// Queries are paced (a failure doubles the delay, 100 ms up to 2 s), so connections that
/// keep reporting a dead master cost the sentinels or seeds one query per delay, never a
/// storm (docs/DESIGN.md, invariant 7).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.h"

namespace redisgo::redis {

class Locator {
 public:
  virtual ~Locator() = default;
  /// Starts finding the server: done at once when it is known, else settled (or failed)
  /// by the locator's thread. The connection's connect_timeout bounds the wait.
  virtual std::shared_ptr<Resolution> locate() = 0;
  /// Changes whenever the answer changes.
  virtual std::uint64_t generation() const noexcept = 0;
  /// A connection to `at` failed in a way that may mean the server moved (refused, timed
  /// out, closed, ROLE says replica, READONLY): ask again (paced).
  virtual void wrong(const Endpoint& at, const std::string& why) noexcept = 0;
  /// Cluster: a server answered MOVED <slot> `to`.
  virtual void moved(const Endpoint& to) noexcept { (void)to; }
  /// Sentinel: confirm every new connection with ROLE (a demoted master is refused).
  virtual bool confirm_master() const noexcept { return false; }
  /// "master 'mymaster'" / "slot 1234's master": names the node in messages.
  virtual std::string name() const = 0;
  /// The server it would name now, if it knows one.
  virtual std::optional<Endpoint> known() const = 0;
};

struct SentinelOptions {
  /// One per sentinel, with the sentinels' own AUTH and the TLS of the nodes.
  std::vector<ConnectionOptions> sentinels;
  std::string master;                ///< sentinel_master
  /// Ask again this often even when nothing failed (a missed +switch-master message must
  /// not keep a holder on a demoted master for long). The daemon passes `cron`.
  Millis requery_every{1000};
  /// Called on the locator's thread when the master changes from one it had found before
  /// (a failover now followed): once per change, whether +switch-master or a re-query
  /// told it first (`how`: "+switch-master" or "re-query"). Null: nobody is told.
  std::function<void(const Endpoint& from, const Endpoint& to, const std::string& how)> on_failover;
};
std::shared_ptr<Locator> make_sentinel_locator(SentinelOptions options);

struct ClusterOptions {
  /// The seeds (cluster_nodes), with the nodes' AUTH and TLS. The slot owner's
  /// connections copy these settings.
  std::vector<ConnectionOptions> seeds;
  std::string key;                   ///< its hash slot is the one that matters
};
std::shared_ptr<Locator> make_cluster_locator(ClusterOptions options);

/// Redis Cluster's hash slot of a key: CRC16 (XMODEM) of the key, or of the part between
/// the first '{' and the next '}' when that is non-empty, modulo 16384.
std::uint16_t hash_slot(std::string_view key);

/// What `status` and `check` show of a Sentinel deployment.
struct SentinelReport {
  struct Answer {
    std::string sentinel;            ///< "10.0.0.1:26379"
    bool reachable = false;
    std::string error;               ///< when not reachable or it does not know the master
    std::optional<Endpoint> master;  ///< what it names
    std::vector<std::string> replicas;  ///< "ip:port (flags)"
    std::string replicas_error;         ///< SENTINEL REPLICAS failed (refused, unknown): why
  };
  std::vector<Answer> answers;
};
/// Asks every sentinel at once (bounded by their timeouts; cancel_fd ends it).
SentinelReport inspect_sentinels(const SentinelOptions& options, int cancel_fd = -1);

/// What `status` and `check` show of a cluster: the key's slot and its owner.
struct ClusterReport {
  std::uint16_t slot = 0;
  std::optional<Endpoint> owner;     ///< the master serving the slot
  std::string owner_id;              ///< its node id
  std::vector<std::string> replicas; ///< "ip:port"
  std::string answered_by;           ///< the seed whose CLUSTER SLOTS was used
  std::vector<std::string> errors;   ///< seeds that failed, with why
};
ClusterReport inspect_cluster(const ClusterOptions& options, int cancel_fd = -1);

/// Every master of the cluster (`list` scans them all), from the first seed whose CLUSTER
/// SLOTS answers; `errors` gets the seeds that failed. Empty when none answered.
std::vector<Endpoint> cluster_masters(const ClusterOptions& options, std::vector<std::string>& errors);

}  // namespace redisgo::redis
