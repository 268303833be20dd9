#include "commands/status.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "commands/quorum_view.h"
#include "commands/waiting_line.h"
#include "log/logging.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/exit_status.h"
#include "wiring/holder.h"
#include "wiring/servers.h"

namespace redisgo::commands {

using wiring::lease_options;
using wiring::sentinel_options;
using wiring::cluster_options;
using wiring::holder_head;
using Millis = std::chrono::milliseconds;

namespace {

/// "ttl 3398 ms", or for a key without expiry (PTTL -1: no lease of ours, set by hand)
/// what that means.
std::string ttl_text(std::int64_t ttl_ms) {
  return ttl_ms == -1 ? std::string("no expiry (not a lease of ours: set by hand?)") : "ttl " + std::to_string(ttl_ms) + " ms";
}

/// The text status prints for a node it could not read.
const char* unreachable_why(redis::Fault fault) {
  switch (fault) {
    case redis::Fault::kAuth: return "credentials refused";
    case redis::Fault::kTls: return "TLS failed";
    case redis::Fault::kProtocol: return "not answering as Redis";
    case redis::Fault::kReply: return "error reply";
    default: return "unreachable";
  }
}

/// A node's fence counter in the text report: the number, or what it holds instead.
std::string node_token_text(const lock::NodeView& n) {
  if (n.bad_fence.empty()) return "token " + std::to_string(n.token);
  return "token unreadable (the fence counter holds " + log::printable(n.bad_fence) + ")";
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
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + log::json_quoted(v[i]);
  return out + "]";
}

void write_topology_json(const TopologyView& t, std::ostream& out) {
  if (t.sentinel) {
    out << ",\"sentinels\":[";
    for (std::size_t i = 0; i < t.sentinel->answers.size(); ++i) {
      const auto& a = t.sentinel->answers[i];
      out << (i ? "," : "") << "{\"sentinel\":" << log::json_quoted(a.sentinel)
          << ",\"reachable\":" << (a.reachable ? "true" : "false")
          << ",\"master\":" << (a.master ? log::json_quoted(a.master->str()) : "null")
          << ",\"replicas\":" << json_strings(a.replicas);
      if (!a.error.empty()) out << ",\"error\":" << log::json_quoted(a.error);
      out << "}";
    }
    out << "]";
  }
  if (t.cluster) {
    const auto& c = *t.cluster;
    out << ",\"cluster\":{\"slot\":" << c.slot << ",\"owner\":" << (c.owner ? log::json_quoted(c.owner->str()) : "null")
        << ",\"owner_id\":" << (c.owner_id.empty() ? "null" : log::json_quoted(c.owner_id))
        << ",\"replicas\":" << json_strings(c.replicas) << ",\"answered_by\":" << log::json_quoted(c.answered_by)
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
          for (std::size_t i = 0; i < a.replicas.size(); ++i) out << (i ? ", " : "") << log::printable(a.replicas[i]);
        }
      } else {
        out << (a.reachable ? "" : "unreachable: ") << log::printable(a.error);
      }
      out << "\n";
    }
  }
  if (t.cluster) {
    const auto& c = *t.cluster;
    out << "cluster: slot " << c.slot;
    if (c.owner) {
      out << " served by " << c.owner->str() << " (" << log::printable(c.owner_id) << ")";
      if (!c.replicas.empty()) {
        out << ", replicas ";
        for (std::size_t i = 0; i < c.replicas.size(); ++i) out << (i ? ", " : "") << log::printable(c.replicas[i]);
      }
      out << ", map from " << c.answered_by;
    } else {
      out << ": no seed named its owner";
    }
    out << "\n";
    for (const auto& e : c.errors) out << "  seed " << log::printable(e) << "\n";
  }
}

/// A number as JSON: the digits when the text is one, else null.
std::string json_number(const std::string& text) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return "null";
  return text;
}

/// The semaphore's other slots (limit > 1; slot 0 is the key itself, shown above them).
/// Each slot's view (limit > 1; empty otherwise). Slot 0 is `first`, already read.
std::vector<QuorumView> slot_views(lock::LeaseAdmin& backend, const config::Config& config, const QuorumView& first) {
  std::vector<QuorumView> views;
  if (config.task.limit <= 1) return views;
  views.push_back(first);
  for (int i = 1; i < config.task.limit; ++i) {
    backend.select_slot(i);
    views.push_back(quorum_view(backend.inspect(), backend.quorum()));
  }
  backend.select_slot(0);
  return views;
}

/// A semaphore as a whole: held while any slot is held (by the lowest held slot's holder),
/// free when every slot is free, else unknown.
QuorumView overall(const std::vector<QuorumView>& slots, QuorumView first) {
  if (slots.empty()) return first;
  QuorumView q = first;
  q.state = State::kFree;
  for (const auto& s : slots) {
    if (s.state == State::kHeld) {
      if (q.state != State::kHeld) {
        q.state = State::kHeld;
        q.holder = s.holder;
        q.votes = s.votes;
        q.ttl_ms = s.ttl_ms;
      }
    } else if (s.state == State::kUnknown && q.state == State::kFree) {
      q.state = State::kUnknown;
    }
  }
  return q;
}

void write_slots(const std::vector<QuorumView>& views, const config::Config& config, bool json, std::ostream& out) {
  if (views.empty()) return;
  if (json) out << ",\"limit\":" << config.task.limit << ",\"slots\":[";
  if (!json) {
    const auto held = std::count_if(views.begin(), views.end(), [](const QuorumView& v) { return v.state == State::kHeld; });
    out << "limit:  " << config.task.limit << " slots, " << held << " held\n";
  }
  for (int i = 0; i < static_cast<int>(views.size()); ++i) {
    const QuorumView& q = views[static_cast<std::size_t>(i)];
    if (json) {
      out << (i ? "," : "") << "{\"slot\":" << i << ",\"state\":\"" << to_string(q.state) << "\",\"holder\":"
          << (q.state == State::kHeld ? log::json_quoted(q.holder) : "null")
          << ",\"ttl_ms\":" << (q.state == State::kHeld ? std::to_string(q.ttl_ms) : "null") << "}";
    } else {
      out << "slot " << i << ": ";
      if (q.state == State::kHeld) {
        out << "held by " << log::printable(q.holder) << ", " << ttl_text(q.ttl_ms) << "\n";
      } else {
        // Unknown says why: a slot key of another type (a hash written over it) is named.
        out << to_string(q.state) << (q.why.empty() ? "" : " (" + log::printable(q.why) + ")") << "\n";
      }
    }
  }
  if (json) out << "]";
}

/// once_per: the last `adopt` any node records (who declared which slot unclaimed, when) and
/// the highest witness (lock/once_scripts.h).
void write_adoption(lock::LeaseAdmin& backend, const lock::LeaseKeys& keys, bool json, std::ostream& out) {
  std::vector<lock::OnceNode> nodes;
  try {
    nodes = backend.read_once(keys.witness(), {});
  } catch (const Error&) {
    // Unreadable: nothing shown; the nodes' own lines say why.
  }
  const lock::OnceNode* last = nullptr;
  for (const auto& n : nodes) {
    if (n.reachable && n.adopted > 0 && (!last || n.adopted_ms > last->adopted_ms)) last = &n;
  }
  const std::int64_t witness = lock::highest_witness(nodes);
  if (json) {
    out << ",\"witness\":" << (witness > 0 ? log::json_quoted(utc_text(witness)) : "null") << ",\"adopted\":";
    if (last) {
      out << "{\"slot\":" << log::json_quoted(utc_text(last->adopted)) << ",\"by\":" << log::json_quoted(last->adopted_by)
          << ",\"at_ms\":" << last->adopted_ms << ",\"count\":" << last->adopts << "}";
    } else {
      out << "null";
    }
    return;
  }
  if (last) {
    out << "adopt: the slot of " << utc_text(last->adopted) << " was declared unclaimed by " << log::printable(last->adopted_by)
        << " at " << utc_text(last->adopted_ms / 1000) << " (" << last->adopts << " adopt(s) of this key on "
        << last->node << ")\n";
  }
}

/// once_per: the claims of the slots around now (a claim lives 2 x once_per).
void write_claims(lock::LeaseAdmin& backend, const config::Config& config, bool json, std::ostream& out) {
  if (!config.task.once_per) return;
  const auto period = *config.task.once_per;
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::int64_t nearest = lock::nearest_slot(now_ms, period);
  const std::int64_t step = period.count() / 1000;
  const lock::LeaseKeys keys = lock::LeaseKeys::derive(config.redis.key);
  std::vector<std::int64_t> slots{nearest + step, nearest, nearest - step, nearest - 2 * step};
  std::vector<std::string> claim_keys;
  for (auto slot : slots) claim_keys.push_back(keys.claim(slot));
  std::vector<std::optional<lock::ClaimRecord>> claims(slots.size());
  try {
    claims = backend.read_claims(claim_keys);
  } catch (const Error&) {
    // Unreadable: shown as no claim found; the nodes' own lines say why.
  }
  if (json) out << ",\"once_per_ms\":" << period.count() << ",\"claims\":[";
  if (!json) out << "once_per: " << format_duration(period) << "; the slot now is " << utc_text(nearest) << "\n";
  bool first = true;
  for (std::size_t i = 0; i < slots.size() && i < claims.size(); ++i) {
    if (!claims[i]) continue;
    const auto& c = *claims[i];
    if (json) {
      out << (first ? "" : ",") << "{\"slot\":" << log::json_quoted(utc_text(slots[i])) << ",\"holder\":"
          << log::json_quoted(c.holder) << ",\"token\":" << json_number(c.token)
          << ",\"start_ms\":" << json_number(c.start_ms) << ",\"status\":" << json_number(c.status) << "}";
    } else {
      out << "slot " << utc_text(slots[i]) << ": run by " << log::printable(c.holder) << ", token " << log::printable(c.token);
      if (json_number(c.start_ms) != "null") {
        out << ", started " << utc_text(std::stoll(c.start_ms) / 1000);
      }
      out << (c.status.empty() ? ", running or no exit status recorded" : ", exit status " + log::printable(c.status))
          << "\n";
    }
    first = false;
  }
  if (json) out << "]";
  if (!json && first) out << "no run claimed in the last slots\n";
  write_adoption(backend, keys, json, out);
}

/// How long the restart guard still keeps node `n` from granting the key; nullopt when it
/// does not (the key is held, the guard is off, or the uptime unknown).
std::optional<Millis> guard_left(const config::Config& config, const lock::NodeView& n) {
  if (n.held || !config.redis.restart_guard || n.uptime_s < 0) return std::nullopt;
  const auto left = lock::restart_guard_left(n.uptime_s, config.redis.expire);
  if (left <= Millis(0)) return std::nullopt;
  return left;
}

/// What status read: the nodes, the key's (and each slot's) state, and where Sentinel or
/// Cluster says the key lives.
struct StatusView {
  std::vector<lock::NodeView> nodes;
  int quorum = 0;
  std::vector<QuorumView> slots;  ///< limit > 1 only
  QuorumView q;                   ///< the key; a semaphore as a whole
  bool quorum_reachable = false;
  bool known = false;             ///< held or free
  bool here = false;              ///< held by this host
  TopologyView topology;
  /// A daemon that holds back because its renewals were refused (lock::RefusalNote).
  std::optional<lock::RefusalNote> refusal;
};

StatusView read_status(lock::LeaseAdmin& backend, const config::Config& config) {
  StatusView s;
  s.nodes = backend.inspect();
  s.quorum = backend.quorum();
  const QuorumView first = quorum_view(s.nodes, s.quorum);
  s.slots = slot_views(backend, config, first);
  s.q = overall(s.slots, first);
  s.quorum_reachable = s.q.reachable >= s.quorum;
  s.known = s.q.state != State::kUnknown;
  s.here = s.q.state == State::kHeld && lock::holder_prefix(s.q.holder) == holder_head(config.redis.value);
  s.topology = inspect_topology(config);
  s.refusal = backend.read_refusal();
  return s;
}

/// Renewals refused: the note a daemon that holds back left beside the key. Said right under
/// the state, since the key may then read "free" while no host will take it.
void write_refusal(const std::optional<lock::RefusalNote>& n, bool json, std::ostream& out) {
  if (json) {
    out << ",\"renewals_refused\":";
    if (!n) {
      out << "null";
      return;
    }
    out << "{\"holder\":" << log::json_quoted(n->holder)
        << ",\"host\":" << log::json_quoted(lock::holder_prefix(n->holder)) << ",\"since\":" << (n->since_ms > 0 ? log::json_quoted(utc_text(n->since_ms / 1000)) : "null")
        << ",\"user\":" << log::json_quoted(n->user) << ",\"right\":" << log::json_quoted(n->right)
        << ",\"error\":" << log::json_quoted(n->error) << "}";
    return;
  }
  if (n) out << "alert:  " << log::printable(lock::describe_refusal(*n)) << "\n";
}

/// One node's object in the "nodes" array.
void write_node_json(const lock::NodeView& n, const config::Config& config, std::ostream& out) {
  out << "{\"node\":" << log::json_quoted(n.node) << ",\"reachable\":" << (n.reachable ? "true" : "false");
  if (n.reachable) {
    out << ",\"held\":" << (n.held ? "true" : "false") << ",\"holder\":" << (n.held ? log::json_quoted(n.holder) : "null")
        << ",\"ttl_ms\":" << (n.held ? std::to_string(n.pttl_ms) : "null")
        << ",\"token\":" << (n.bad_fence.empty() ? std::to_string(n.token) : "null");
    if (!n.bad_fence.empty()) {
      out << ",\"fence_error\":"
          << log::json_quoted("the fence counter holds " + n.bad_fence + ", not an integer below 2^53-1");
    }
    out << ",\"uptime_s\":" << (n.uptime_s >= 0 ? std::to_string(n.uptime_s) : "null")
        << ",\"restart_guard_ms\":";
    const auto left = guard_left(config, n);
    out << (left ? std::to_string(left->count()) : "null");
  } else {
    out << ",\"held\":null,\"holder\":null,\"ttl_ms\":null,\"token\":null,\"fault\":\"" << redis::to_string(n.fault)
        << "\",\"error\":" << log::json_quoted(n.error);
  }
  if (!n.server.empty()) out << ",\"server\":" << log::json_quoted(n.server);
  if (!n.peer.empty()) out << ",\"tls\":" << log::json_quoted(n.peer);
  out << "}";
}

/// A pause (`pause`) that a quorum of nodes holds: who, why, since and until when.
void write_pause(lock::LeaseAdmin& backend, bool json, std::ostream& out) {
  const auto p = backend.read_pause();
  if (json) {
    out << ",\"paused\":";
    if (!p) {
      out << "null";
      return;
    }
    out << "{\"by\":" << log::json_quoted(p->by) << ",\"reason\":" << log::json_quoted(p->reason)
        << ",\"since\":" << log::json_quoted(utc_text(p->since_ms / 1000))
        << ",\"until\":" << log::json_quoted(utc_text(p->until_ms / 1000)) << ",\"ttl_ms\":" << p->ttl_ms << "}";
    return;
  }
  if (!p) return;
  auto when = [](std::int64_t ms) { return ms > 0 ? utc_text(ms / 1000) : std::string("unknown"); };
  out << "paused: by " << (p->by.empty() ? std::string("(unknown: not written by `pause`)") : log::printable(p->by))
      << " since " << when(p->since_ms) << " until " << when(p->until_ms)
      << (p->ttl_ms == -1 ? " (no expiry: set by hand)" : "") << (p->reason.empty() ? "" : ": " + log::printable(p->reason))
      << " (no host starts the job; redisgo_task resume ends it)\n";
}

/// --json: one object. Reads the once_per claims from `backend` as it goes.
void write_status_json(const StatusView& s, lock::LeaseAdmin& backend, const config::Config& config,
                       std::ostream& out) {
  const QuorumView& q = s.q;
  // Unknown is null, never a made-up false or -2: a monitor must tell "free" from
  // "could not see".
  out << "{\"key\":" << log::json_quoted(config.redis.key) << ",\"state\":\"" << to_string(q.state) << "\""
      << ",\"held\":" << (s.known ? (q.state == State::kHeld ? "true" : "false") : "null")
      << ",\"holder\":" << (q.state == State::kHeld ? log::json_quoted(q.holder) : "null")
      << ",\"ttl_ms\":" << (q.state == State::kHeld ? std::to_string(q.ttl_ms) : "null")
      << ",\"token\":" << (s.known && q.bad_fences == 0 ? std::to_string(q.token) : "null")
      << ",\"held_by_this_host\":" << (s.known ? (s.here ? "true" : "false") : "null") << ",\"quorum\":" << s.quorum
      << ",\"reachable\":" << q.reachable << ",\"quorum_reachable\":" << (s.quorum_reachable ? "true" : "false");
  write_refusal(s.refusal, true, out);
  out << ",\"nodes\":[";
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    if (i) out << ",";
    write_node_json(s.nodes[i], config, out);
  }
  out << "]";
  write_slots(s.slots, config, true, out);
  write_pause(backend, true, out);
  out << ",\"slots_beyond_limit\":" << backend.slots_beyond_limit();
  write_line(backend, config, true, out);
  write_claims(backend, config, true, out);
  write_topology_json(s.topology, out);
  out << "}\n";
}

/// One node's line, and its server and TLS lines when known.
void write_node_text(const lock::NodeView& n, const config::Config& config, std::ostream& out) {
  out << "node " << log::printable(n.node) << ": ";
  if (!n.reachable) {
    out << unreachable_why(n.fault) << ": " << log::printable(n.error) << "\n";
  } else if (n.held) {
    out << "held by " << log::printable(lock::describe_holder(n.holder)) << ", " << ttl_text(n.pttl_ms) << ", "
        << node_token_text(n) << "\n";
  } else {
    out << "free, " << node_token_text(n);
    if (const auto left = guard_left(config, n)) {
      out << "; up " << n.uptime_s << " s: grants nothing new for " << left->count() << " ms (restart guard)";
    }
    out << "\n";
  }
  if (!n.server.empty()) out << "  server " << log::printable(n.server) << "\n";
  if (!n.peer.empty()) out << "  " << log::printable(n.peer) << "\n";
}

/// The text report. Reads the once_per claims from `backend` as it goes.
void write_status_text(const StatusView& s, lock::LeaseAdmin& backend, const config::Config& config,
                       std::ostream& out) {
  const QuorumView& q = s.q;
  out << "key:    " << log::printable(config.redis.key) << "\n";
  switch (q.state) {
    case State::kHeld:
      out << "state:  held by " << log::printable(lock::describe_holder(q.holder)) << (s.here ? " (this host)" : "") << " (" << q.votes << "/"
          << s.nodes.size() << " nodes, quorum " << s.quorum << "), " << ttl_text(q.ttl_ms) << "\n";
      break;
    case State::kFree:
      out << "state:  free\n";
      break;
    case State::kUnknown: {
      // A node that answered with an error was reached: said apart, or a lease key of
      // another type would read as "0/1 nodes reachable".
      const auto errors = std::count_if(s.nodes.begin(), s.nodes.end(), [](const lock::NodeView& n) {
        return !n.reachable && n.fault == redis::Fault::kReply;
      });
      out << "state:  unknown (" << q.reachable << "/" << s.nodes.size() << " nodes reachable, quorum " << s.quorum
          << (errors > 0 ? "; " + std::to_string(errors) + " answered with an error, below" : std::string()) << ")\n";
      break;
    }
  }
  write_refusal(s.refusal, false, out);
  if (q.bad_fences > 0) {
    // Unreadable, never a made-up 0: and say what it blocks and what to do.
    const std::string fence = log::printable(lock::LeaseKeys::derive(config.redis.key).fence);
    out << "token:  unreadable: the fence counter " << fence << " is not an integer below 2^53-1 on " << q.bad_fences
        << " of " << s.nodes.size() << " node(s), and no lease can be acquired there until it is deleted (redis-cli DEL "
        << fence << "; the server's TIME floor keeps tokens increasing)\n";
  } else if (s.known) {
    out << "token:  " << q.token << "\n";
  }
  for (const auto& n : s.nodes) write_node_text(n, config, out);
  write_slots(s.slots, config, false, out);
  write_pause(backend, false, out);
  if (const int beyond = backend.slots_beyond_limit(); beyond > 0) {
    out << "limit:  " << beyond << " slot(s) beyond limit = " << config.task.limit
        << " are held: a daemon of this key runs a larger limit (set one limit on every daemon)\n";
  }
  write_line(backend, config, false, out);
  write_claims(backend, config, false, out);
  write_topology_text(s.topology, out);
}

/// Whenever the state could not be read from a quorum, "unknown" must page someone: 77
/// when a node refused our credentials or its certificate (fix the config), else 69.
int status_exit(const StatusView& s) {
  if (s.quorum_reachable) return 0;
  for (const auto& n : s.nodes) {
    if (redis::is_refusal(n.fault)) return kExitNoPerm;
  }
  return kExitUnavailable;
}

}  // namespace

int run_status(const config::Config& config, bool json, std::ostream& out) {
  const std::unique_ptr<lock::LeaseAdmin> backend = lock::make_redis_backend(lease_options(config, "status"));
  const StatusView view = read_status(*backend, config);
  if (json) {
    write_status_json(view, *backend, config, out);
  } else {
    write_status_text(view, *backend, config, out);
  }
  return status_exit(view);
}

}  // namespace redisgo::commands
