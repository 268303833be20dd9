#include "wiring/servers.h"

#include <memory>

#include "log/logging.h"
#include "redis/credentials.h"
#include "redis/tls.h"
#include "util/error.h"
#include "util/strings.h"

namespace redisgo::wiring {
namespace {

/// TLS is one OpenSSL context per process (a context is made to be shared by threads;
/// every connection, in the main loop or the renewer, has its own SSL state).
std::shared_ptr<const redis::TransportFactory> transport(const config::RedisConfig& r) {
  if (!r.tls.enabled) return nullptr;
  redis::TlsOptions t;
  t.ca_file = r.tls.ca_file;
  t.cert_file = r.tls.cert_file;
  t.key_file = r.tls.key_file;
  t.server_name = r.tls.server_name;
  t.skip_verify = r.tls.skip_verify;
  return redis::make_tls(t);
}

/// A password that came from a file (password_file, password_credential) is read again when
/// Redis refuses it, so that rotating it (the file and Redis's, in either order) needs no
/// restart; one object for every connection that sends it (redis/credentials.h). Null for
/// a password from the environment or the config file, which cannot change.
std::shared_ptr<redis::Credentials> rereadable(const std::string& password, config::PasswordSource source,
                                              const std::string& path, const std::string& what) {
  if (password.empty() || (source != config::PasswordSource::kFile && source != config::PasswordSource::kCredential)) {
    return nullptr;
  }
  // Called under the Credentials' own lock, at most once a second: `said` needs no other.
  auto said = std::make_shared<std::string>();
  auto reread = [path, what, said](const std::string& current) -> std::optional<std::string> {
    auto log = log::get("redis");
    std::string why;
    auto fresh = config::read_password_file(path, why);
    if (!fresh) {
      // Once per reason: the refusals themselves are logged by whoever failed.
      if (why != *said) log->warn("Redis refused the {} and it cannot be read again: {}", what, why);
      *said = why;
      return std::nullopt;
    }
    said->clear();
    if (*fresh == current) {
      log->debug("Redis refused the {}; {} is unchanged", what, path);
      return std::nullopt;
    }
    log->info("the {} in {} changed and was re-read: new connections authenticate with it", what, path);
    return fresh;
  };
  return std::make_shared<redis::Credentials>(password, std::move(reread));
}

/// The nodes' password for connections: `password`, or `credentials` when it can be re-read.
struct NodeAuth {
  std::shared_ptr<redis::Credentials> nodes;
  std::shared_ptr<redis::Credentials> sentinels;
  static NodeAuth of(const config::RedisConfig& r) {
    return {rereadable(r.password, r.password_source, r.password_origin, "password"),
            rereadable(r.sentinel_password, r.sentinel_password_source, r.sentinel_password_origin,
                       "sentinels' password")};
  }
};

redis::ConnectionOptions connection(const config::RedisConfig& r, const std::string& address,
                                    std::shared_ptr<const redis::TransportFactory> tls,
                                    std::shared_ptr<redis::Credentials> credentials) {
  redis::ConnectionOptions c;
  std::string why;
  auto endpoint = redis::Endpoint::parse(address, &why);
  if (!endpoint) throw ConfigError("invalid address '" + address + "': " + why);
  c.endpoint = *endpoint;
  c.connect_timeout = r.connect_timeout;
  c.io_timeout = r.io_timeout;
  c.username = r.username;
  c.password = r.password;
  c.credentials = std::move(credentials);
  c.db = r.db;
  c.transport = std::move(tls);
  return c;
}

redis::SentinelOptions sentinels(const config::Config& config, std::shared_ptr<const redis::TransportFactory> tls,
                                 const NodeAuth& auth) {
  const auto& r = config.redis;
  redis::SentinelOptions s;
  for (const auto& address : r.sentinels) {
    auto c = connection(r, address, tls, auth.sentinels);
    c.username = r.sentinel_username;
    c.password = r.sentinel_password;
    c.db = 0;
    s.sentinels.push_back(std::move(c));
  }
  s.master = r.sentinel_master;
  s.requery_every = r.cron.count() > 0 ? r.cron : config::default_cron(r.expire);
  // A failover moves the lease's key to another server (and may lose it: replication is
  // asynchronous), so following one is said, once per change.
  s.on_failover = [master = r.sentinel_master](const redis::Endpoint& from, const redis::Endpoint& to,
                                               const std::string& how) {
    log::get("redis")->info("Sentinel failover: master {} moved from {} to {} (learnt by {})", master, from.str(),
                            to.str(), how);
  };
  return s;
}

redis::ClusterOptions cluster(const config::Config& config, std::shared_ptr<const redis::TransportFactory> tls,
                              const NodeAuth& auth) {
  const auto& r = config.redis;
  redis::ClusterOptions c;
  for (const auto& address : r.cluster_nodes) c.seeds.push_back(connection(r, address, tls, auth.nodes));
  c.key = r.key;
  return c;
}

}  // namespace

redis::SentinelOptions sentinel_options(const config::Config& config) {
  return sentinels(config, transport(config.redis), NodeAuth::of(config.redis));
}

redis::ClusterOptions cluster_options(const config::Config& config) {
  return cluster(config, transport(config.redis), NodeAuth::of(config.redis));
}

redis::ConnectionOptions pinned_options(const config::Config& config, const redis::Endpoint& at) {
  const auto& r = config.redis;
  redis::ConnectionOptions o = connection(r, r.topology == config::Topology::kSentinel ? r.sentinels.front()
                                             : r.topology == config::Topology::kCluster ? r.cluster_nodes.front()
                                                                                        : r.nodes.front(),
                                          transport(r), NodeAuth::of(r).nodes);
  o.endpoint = at;
  return o;
}

lock::LeaseOptions lease_settings(const config::Config& config, const std::string& holder) {
  lock::LeaseOptions o;
  const auto& r = config.redis;
  o.key = r.key;
  o.limit = config.task.limit;
  o.holder = holder;
  o.ttl = r.expire;
  o.drift_factor = r.drift_factor;
  o.drift_fixed = r.drift_fixed;
  o.restart_guard = r.restart_guard ? r.expire : Millis(0);
  o.fair = r.fair;
  o.turn_window = r.turn_window();
  // An acquisition that leaves less than this could not have its child stopped in time.
  o.min_validity = config.task.kill_grace + config::kill_margin(r.expire);
  return o;
}

lock::LeaseOptions lease_options(const config::Config& config, const std::string& holder) {
  lock::LeaseOptions o = lease_settings(config, holder);
  const auto& r = config.redis;
  auto tls = transport(r);
  const NodeAuth auth = NodeAuth::of(r);
  switch (r.topology) {
    case config::Topology::kSingle:
    case config::Topology::kRedlock:
      for (const auto& node : r.nodes) o.nodes.push_back(connection(r, node, tls, auth.nodes));
      break;
    case config::Topology::kSentinel: {
      redis::ConnectionOptions c = connection(r, r.sentinels.front(), tls, auth.nodes);
      c.endpoint = {};
      c.locator = redis::make_sentinel_locator(sentinels(config, tls, auth));
      o.nodes.push_back(std::move(c));
      o.wait_replicas = r.sentinel_wait_replicas;
      break;
    }
    case config::Topology::kCluster: {
      redis::ConnectionOptions c = connection(r, r.cluster_nodes.front(), tls, auth.nodes);
      c.endpoint = {};
      c.db = 0;
      c.locator = redis::make_cluster_locator(cluster(config, tls, auth));
      o.nodes.push_back(std::move(c));
      break;
    }
  }
  return o;
}

std::string describe_servers(const config::RedisConfig& r) {
  switch (r.topology) {
    case config::Topology::kSingle:
    case config::Topology::kRedlock: return "nodes=" + join(r.nodes, ",");
    case config::Topology::kSentinel: return "sentinels=" + join(r.sentinels, ",") + " master=" + r.sentinel_master;
    case config::Topology::kCluster:
      return "cluster_nodes=" + join(r.cluster_nodes, ",") + " slot=" + std::to_string(redis::hash_slot(r.key));
  }
  return "";
}

const char* redis_error_kind(redis::Fault fault) {
  using redis::Fault;
  // The metric's label is the fault's own name, but that a name lookup and a refused connect
  // are one kind to an operator: the node cannot be reached.
  if (fault == Fault::kNone || fault == Fault::kCancelled) return nullptr;
  if (fault == Fault::kResolve || fault == Fault::kConnect) return "unreachable";
  return redis::to_string(fault);
}

}  // namespace redisgo::wiring
