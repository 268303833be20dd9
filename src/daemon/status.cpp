#include "daemon/status.h"

#include <map>
#include <optional>

#include "daemon/daemon.h"
#include "daemon/servers.h"
#include "daemon/state_machine.h"
#include "log/logging.h"
#include "util/error.h"

namespace redisgo::daemon {
namespace {

/// A JSON string literal.
std::string json_quote(const std::string& s) {
  std::string out = "\"";
  log::append_json_escaped(s, out);
  return out + "\"";
}

/// The holder that a quorum of nodes agrees on, if any.
struct QuorumView {
  bool held = false;
  std::string holder;
  int votes = 0;
  std::int64_t ttl_ms = -2;
  std::uint64_t token = 0;
};

QuorumView quorum_view(const std::vector<lock::NodeView>& nodes, int quorum) {
  std::map<std::string, int> votes;
  for (const auto& n : nodes) {
    if (n.reachable && n.held) ++votes[n.holder];
  }
  QuorumView q;
  for (const auto& [holder, count] : votes) {
    if (count >= quorum) {
      q.held = true;
      q.holder = holder;
      q.votes = count;
    }
  }
  // TTL: the smallest among the agreeing nodes (when the lease certainly still stands);
  // token: the highest counter seen anywhere.
  for (const auto& n : nodes) {
    if (!n.reachable) continue;
    q.token = std::max(q.token, n.token);
    if (q.held && n.held && n.holder == q.holder && (q.ttl_ms < 0 || n.pttl_ms < q.ttl_ms)) q.ttl_ms = n.pttl_ms;
  }
  return q;
}

/// What Sentinel or Cluster says about where the key lives (nothing for host/nodes).
struct TopologyView {
  std::optional<redis::SentinelReport> sentinel;
  std::optional<redis::ClusterReport> cluster;
};

TopologyView inspect_topology(const config::Config& config) {
  TopologyView t;
  if (config.redis.topology == config::Topology::kSentinel) t.sentinel = redis::inspect_sentinels(sentinel_options(config));
  if (config.redis.topology == config::Topology::kCluster) t.cluster = redis::inspect_cluster(cluster_options(config));
  return t;
}

std::string json_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + json_quote(v[i]);
  return out + "]";
}

void write_topology_json(const TopologyView& t, std::ostream& out) {
  if (t.sentinel) {
    out << ",\"sentinels\":[";
    for (std::size_t i = 0; i < t.sentinel->answers.size(); ++i) {
      const auto& a = t.sentinel->answers[i];
      out << (i ? "," : "") << "{\"sentinel\":" << json_quote(a.sentinel)
          << ",\"reachable\":" << (a.reachable ? "true" : "false")
          << ",\"master\":" << (a.master ? json_quote(a.master->str()) : "null")
          << ",\"replicas\":" << json_strings(a.replicas);
      if (!a.error.empty()) out << ",\"error\":" << json_quote(a.error);
      out << "}";
    }
    out << "]";
  }
  if (t.cluster) {
    const auto& c = *t.cluster;
    out << ",\"cluster\":{\"slot\":" << c.slot << ",\"owner\":" << (c.owner ? json_quote(c.owner->str()) : "null")
        << ",\"owner_id\":" << (c.owner_id.empty() ? "null" : json_quote(c.owner_id))
        << ",\"replicas\":" << json_strings(c.replicas) << ",\"answered_by\":" << json_quote(c.answered_by)
        << ",\"errors\":" << json_strings(c.errors) << "}";
  }
}

void write_topology_text(const TopologyView& t, std::ostream& out) {
  if (t.sentinel) {
    for (const auto& a : t.sentinel->answers) {
      out << "sentinel " << a.sentinel << ": ";
      if (a.master) {
        out << "master " << a.master->str();
        if (!a.replicas.empty()) {
          out << ", replicas ";
          for (std::size_t i = 0; i < a.replicas.size(); ++i) out << (i ? ", " : "") << a.replicas[i];
        }
      } else {
        out << (a.reachable ? "" : "unreachable: ") << a.error;
      }
      out << "\n";
    }
  }
  if (t.cluster) {
    const auto& c = *t.cluster;
    out << "cluster: slot " << c.slot;
    if (c.owner) {
      out << " served by " << c.owner->str() << " (" << c.owner_id << ")";
      if (!c.replicas.empty()) {
        out << ", replicas ";
        for (std::size_t i = 0; i < c.replicas.size(); ++i) out << (i ? ", " : "") << c.replicas[i];
      }
      out << ", map from " << c.answered_by;
    } else {
      out << ": no seed named its owner";
    }
    out << "\n";
    for (const auto& e : c.errors) out << "  seed " << e << "\n";
  }
}

}  // namespace

int run_status(const config::Config& config, bool json, std::ostream& out) {
  auto backend = lock::make_redis_backend(lease_options(config, "status"));
  std::vector<lock::NodeView> nodes = backend->inspect();
  int reachable = 0;
  for (const auto& n : nodes) reachable += n.reachable ? 1 : 0;
  QuorumView q = quorum_view(nodes, backend->quorum());
  const bool quorum_reachable = reachable >= backend->quorum();
  const TopologyView topology = inspect_topology(config);

  if (json) {
    out << "{\"key\":" << json_quote(config.redis.key) << ",\"held\":" << (q.held ? "true" : "false")
        << ",\"holder\":" << (q.held ? json_quote(q.holder) : "null") << ",\"ttl_ms\":" << (q.held ? q.ttl_ms : -2)
        << ",\"token\":" << q.token << ",\"quorum\":" << backend->quorum()
        << ",\"quorum_reachable\":" << (quorum_reachable ? "true" : "false") << ",\"nodes\":[";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto& n = nodes[i];
      if (i) out << ",";
      out << "{\"node\":" << json_quote(n.node) << ",\"reachable\":" << (n.reachable ? "true" : "false");
      if (n.reachable) {
        out << ",\"held\":" << (n.held ? "true" : "false") << ",\"holder\":" << (n.held ? json_quote(n.holder) : "null")
            << ",\"ttl_ms\":" << n.pttl_ms << ",\"token\":" << n.token;
      } else {
        out << ",\"error\":" << json_quote(n.error);
      }
      if (!n.server.empty()) out << ",\"server\":" << json_quote(n.server);
      if (!n.peer.empty()) out << ",\"tls\":" << json_quote(n.peer);
      out << "}";
    }
    out << "]";
    write_topology_json(topology, out);
    out << "}\n";
  } else {
    out << "key:    " << config.redis.key << "\n";
    if (q.held) {
      out << "state:  held by " << q.holder << " (" << q.votes << "/" << nodes.size() << " nodes, quorum "
          << backend->quorum() << "), ttl " << q.ttl_ms << " ms\n";
    } else if (!quorum_reachable) {
      out << "state:  unknown (" << reachable << "/" << nodes.size() << " nodes reachable, quorum " << backend->quorum()
          << ")\n";
    } else {
      out << "state:  free\n";
    }
    out << "token:  " << q.token << "\n";
    for (const auto& n : nodes) {
      out << "node " << n.node << ": ";
      if (!n.reachable) {
        out << "unreachable: " << n.error << "\n";
      } else if (n.held) {
        out << "held by " << n.holder << ", ttl " << n.pttl_ms << " ms, token " << n.token << "\n";
      } else {
        out << "free, token " << n.token << "\n";
      }
      if (!n.server.empty()) out << "  server " << n.server << "\n";
      if (!n.peer.empty()) out << "  " << n.peer << "\n";
    }
    write_topology_text(topology, out);
  }
  return reachable > 0 ? 0 : kExitUnavailable;
}

}  // namespace redisgo::daemon
