#include "daemon/status.h"

#include <map>

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

}  // namespace

int run_status(const config::Config& config, bool json, std::ostream& out) {
  auto backend = lock::make_redis_backend(lease_options(config, "status"));
  std::vector<lock::NodeView> nodes = backend->inspect();
  int reachable = 0;
  for (const auto& n : nodes) reachable += n.reachable ? 1 : 0;
  QuorumView q = quorum_view(nodes, backend->quorum());
  const bool quorum_reachable = reachable >= backend->quorum();

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
      out << "}";
    }
    out << "]}\n";
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
    }
  }
  return reachable > 0 ? 0 : kExitUnavailable;
}

}  // namespace redisgo::daemon
