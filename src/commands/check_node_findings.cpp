// What one server answered, judged: its version, role, maxmemory-policy, persistence and
// restart guard, its TLS certificate, and servers listed twice (the same run_id).
#include "commands/check_findings.h"

#include <charconv>
#include <cstdio>

#include "commands/check_findings_detail.h"
#include "util/duration.h"

namespace redisgo::commands::check {

using detail::and_list;

namespace {

/// "104857600 bytes (100.0 MiB)".
std::string bytes_text(std::int64_t n) {
  char buf[64];
  const double v = static_cast<double>(n);
  if (n >= (1LL << 30)) {
    std::snprintf(buf, sizeof buf, " (%.1f GiB)", v / static_cast<double>(1LL << 30));
  } else if (n >= (1LL << 20)) {
    std::snprintf(buf, sizeof buf, " (%.1f MiB)", v / static_cast<double>(1LL << 20));
  } else {
    buf[0] = '\0';
  }
  return std::to_string(n) + " bytes" + buf;
}

/// What a restart of a server that lost its data asks of the operator (docs/DESIGN.md, invariant 1).
std::string restart_hint(Millis expire, config::Topology topology) {
  std::string hint = "set restart_guard = true (the default) and let the user read INFO, or keep a restarted "
                     "server out of service for at least one expire (" + format_duration(expire) +
                     ") before it serves again (redisgo_task(1), SAFETY: mutual exclusion), or turn on appendonly yes "
                     "(appendfsync always loses nothing); fencing tokens keep increasing across the data loss only "
                     "through the fence's server-TIME floor";
  if (topology == config::Topology::kRedlock) {
    hint += "; with nodes, a node that comes back empty at once can let a second holder reach a quorum";
  }
  return hint;
}

}  // namespace

std::map<std::string, std::string> parse_info(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    out.emplace(std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
  }
  return out;
}

std::optional<Version> parse_version(std::string_view text) {
  Version v;
  int* parts[] = {&v.major, &v.minor, &v.patch};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (std::size_t i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, *parts[i]);
    if (ec != std::errc()) {
      if (i == 0) return std::nullopt;
      break;
    }
    p = next;
    if (p == end || *p != '.') break;
    ++p;
  }
  return v;
}

Finding version_finding(const std::string& node, const std::string& version, bool acl_user, const std::string& why) {
  const std::string upgrade = "upgrade to Redis 5.0 or later (6.2 or newer is still supported upstream)";
  if (version.empty()) {
    if (acl_refused(why)) return skip("version", node, "the version", "INFO: " + why, "+info");
    return make(Level::kWarn, "version", node, "could not read the version (INFO: " + why + ")",
                "allow INFO to this user, or check by hand that the server runs Redis 5.0 or later");
  }
  auto v = parse_version(version);
  if (!v) {
    return make(Level::kWarn, "version", node, "unrecognised version '" + version + "'",
                "check by hand that the server runs Redis 5.0 or later");
  }
  Finding f;
  if (*v < Version{2, 6, 12}) {
    f = make(Level::kFail, "version", node, "Redis " + version + " is too old: SET NX PX needs 2.6.12 and Lua scripts 2.6",
             upgrade);
  } else if (*v < Version{5, 0, 0}) {
    f = make(Level::kFail, "version", node,
             "Redis " + version +
                 ": the acquire script writes after calling TIME, which Redis before 5.0 refuses (scripts were "
                 "replicated verbatim)",
             upgrade);
  } else if (acl_user && *v < Version{6, 0, 0}) {
    f = make(Level::kFail, "version", node,
             "Redis " + version + " has no ACL users, but the config sets username (AUTH <user> <password> needs 6.0)",
             upgrade + ", or drop username");
  } else {
    f = make(Level::kOk, "version", node, "Redis " + version);
  }
  f.fields.emplace_back("version", json_quote(version));
  return f;
}

Finding role_finding(const std::string& node, const std::string& role, const std::string& redis_mode,
                     const std::string& master_of, config::Topology topology, const std::string& why) {
  Finding f;
  if (redis_mode == "sentinel" || role == "sentinel") {
    f = make(Level::kFail, "role", node, "this is a Sentinel, not a data server",
             "list it under sentinels (with sentinel_master), and the servers that hold data elsewhere");
  } else if (redis_mode == "cluster" && topology != config::Topology::kCluster) {
    f = make(Level::kFail, "role", node,
             "the server runs in cluster mode: it serves only its own hash slots and answers MOVED for the rest",
             "list the cluster under cluster_nodes instead of host/nodes");
  } else if (role == "master") {
    f = make(Level::kOk, "role", node, "master");
  } else if (role == "slave" || role == "replica") {
    std::string hint;
    switch (topology) {
      case config::Topology::kSentinel:
        hint = "the sentinels name a replica as the master (a failover in progress, or stale sentinels): check SENTINEL "
               "masters on each sentinel";
        break;
      case config::Topology::kCluster:
        hint = "the cluster names a replica as the slot's owner: check CLUSTER NODES";
        break;
      default:
        hint = "point the config at the master" + (master_of.empty() ? std::string() : " (" + master_of + ")") +
               ", or make this server a master (REPLICAOF NO ONE)";
        if (topology == config::Topology::kRedlock) hint += "; Redlock needs independent masters, not replicas";
    }
    f = make(Level::kFail, "role", node,
             "a replica" + (master_of.empty() ? std::string() : " of " + master_of) +
                 ": writes would fail (READONLY), or be lost at the next resync",
             hint);
  } else if (role.empty() && acl_refused(why)) {
    f = skip("role", node, "the role", why, "+role or +info");
  } else if (role.empty()) {
    f = make(Level::kWarn, "role", node, "could not read the role (" + why + ")",
             "allow ROLE or INFO to this user, or check by hand that the server is a master");
  } else {
    f = make(Level::kWarn, "role", node, "unexpected role '" + role + "'", "check by hand that the server is a master");
  }
  if (!role.empty()) f.fields.emplace_back("role", json_quote(role));
  return f;
}

Finding memory_finding(const std::string& node, const std::string& policy, std::optional<std::int64_t> maxmemory,
                       const std::string& why) {
  const std::string fix = "set maxmemory-policy noeviction (CONFIG SET, and in redis.conf so that it survives a restart)";
  Finding f;
  if (policy.empty() && acl_refused(why)) {
    f = skip("maxmemory-policy", node, "maxmemory-policy", why, "+info (or +config|get)");
  } else if (policy.empty()) {
    f = make(Level::kWarn, "maxmemory-policy", node, "could not read maxmemory-policy (" + why + ")",
             "check by hand that it is noeviction: an evicting policy can delete a lease");
  } else if (policy == "noeviction") {
    f = make(Level::kOk, "maxmemory-policy", node, "noeviction: a full server refuses writes rather than evict a lease");
  } else if (maxmemory && *maxmemory == 0) {
    f = make(Level::kWarn, "maxmemory-policy", node,
             policy + " with maxmemory 0: nothing is evicted yet, but once maxmemory is set this policy can delete a "
                      "lease (it has a TTL, so volatile-* policies pick it too)",
             fix);
  } else {
    f = make(Level::kWarn, "maxmemory-policy", node,
             policy + (maxmemory ? " with maxmemory " + bytes_text(*maxmemory) : std::string()) +
                 ": an evicting policy can delete a lease under memory pressure (it has a TTL, so volatile-* "
                 "policies pick it too)",
             fix);
  }
  if (!policy.empty()) f.fields.emplace_back("policy", json_quote(policy));
  if (maxmemory) f.fields.emplace_back("maxmemory", std::to_string(*maxmemory));
  return f;
}

Finding guard_finding(const std::string& node, bool enabled, std::optional<std::int64_t> uptime_s,
                      const std::string& why) {
  Finding f;
  if (!enabled) {
    f = make(Level::kWarn, "restart_guard", node,
             "off (restart_guard = false): a Redis restarted empty here can hand the lease to a second holder "
             "while the first still runs its child",
             "set restart_guard = true (the default), or keep a restarted server out of service for one expire");
  } else if (!uptime_s) {
    f = make(Level::kWarn, "restart_guard", node,
             "cannot apply: the server's uptime could not be read (INFO: " + why +
                 "); a Redis restarted empty here could hand the lease to a second holder within expire",
             "grant the ACL user +info (INFO is in @dangerous), or keep a restarted server out of service for one "
             "expire by hand");
  } else {
    f = make(Level::kOk, "restart_guard", node, "on (INFO readable, up " + std::to_string(*uptime_s) + " s)");
  }
  f.fields.emplace_back("uptime_s", uptime_s ? std::to_string(*uptime_s) : "null");
  return f;
}

Finding persistence_finding(const std::string& node, const Persistence& p, Millis expire, config::Topology topology,
                            bool guarded) {
  Finding f;
  if (p.aof && !*p.aof && guarded) {
    // The restart guard enforces the delayed restart: losing data costs a wait, not exclusion.
    f = make(Level::kOk, "persistence", node,
             p.save && !p.save->empty()
                 ? "RDB snapshots only (save \"" + *p.save + "\"), AOF off: after a restart the restart guard "
                   "grants nothing new for one expire (" + format_duration(expire) + ")"
                 : "AOF off: after a restart the restart guard grants nothing new for one expire (" +
                       format_duration(expire) + ")");
  } else if (!p.aof && acl_refused(p.why)) {
    f = skip("persistence", node, "the persistence settings", p.why, "+info (and +config|get for the RDB save setting)");
  } else if (!p.aof) {
    f = make(Level::kWarn, "persistence", node, "could not read INFO persistence (" + p.why + ")",
             "check by hand: " + restart_hint(expire, topology));
  } else if (*p.aof) {
    std::string m = "AOF on";
    if (!p.appendfsync.empty()) m += " (appendfsync " + p.appendfsync + ")";
    if (p.save && !p.save->empty()) m += ", RDB save \"" + *p.save + "\"";
    f = make(Level::kOk, "persistence", node, m);
  } else if (!p.save && acl_refused(p.why)) {
    f = skip("persistence", node, "the RDB save setting with AOF off", "CONFIG GET save: " + p.why, "+config|get");
  } else if (!p.save) {
    f = make(Level::kWarn, "persistence", node,
             "AOF off, and the RDB save setting could not be read (CONFIG GET save: " + p.why + ")",
             restart_hint(expire, topology));
  } else if (p.save->empty()) {
    f = make(Level::kWarn, "persistence", node, "none (appendonly no, save \"\"): a restart comes back empty",
             restart_hint(expire, topology));
  } else {
    f = make(Level::kWarn, "persistence", node,
             "RDB snapshots only (save \"" + *p.save +
                 "\"), AOF off: a restart comes back with the last snapshot, without the leases taken since",
             restart_hint(expire, topology));
  }
  f.fields.emplace_back("aof", p.aof ? (*p.aof ? "true" : "false") : "null");
  f.fields.emplace_back("save", p.save ? json_quote(*p.save) : "null");
  return f;
}

std::vector<Finding> duplicate_findings(const std::vector<ServerId>& ids, int quorum) {
  std::vector<Finding> out;
  std::vector<bool> done(ids.size(), false);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (done[i] || ids[i].run_id.empty()) continue;
    std::vector<std::string> same{ids[i].node};
    for (std::size_t j = i + 1; j < ids.size(); ++j) {
      if (!done[j] && ids[j].run_id == ids[i].run_id) {
        same.push_back(ids[j].node);
        done[j] = true;
      }
    }
    if (same.size() < 2) continue;
    Finding f = make(Level::kFail, "same-server", ids[i].node,
                     and_list(same) + " are the same server (run_id " + ids[i].run_id + ")",
                     "list each server once: Redlock counts this one " + std::to_string(same.size()) +
                         " times toward the quorum of " + std::to_string(quorum) +
                         ", so its failure or data loss alone can decide the lease");
    f.fields.emplace_back("run_id", json_quote(ids[i].run_id));
    std::string nodes = "[";
    for (std::size_t k = 0; k < same.size(); ++k) nodes += (k ? "," : "") + json_quote(same[k]);
    f.fields.emplace_back("same", nodes + "]");
    out.push_back(std::move(f));
  }
  return out;
}

Finding tls_finding(const std::string& node, const std::string& peer) {
  std::optional<int> days;
  if (auto at = peer.rfind("(in "); at != std::string::npos) {
    int d = 0;
    const char* begin = peer.data() + at + 4;
    auto [p, ec] = std::from_chars(begin, peer.data() + peer.size(), d);
    if (ec == std::errc() && p != begin) days = d;
  }
  Finding f;
  if (days && *days < 0) {
    f = make(Level::kFail, "tls", node, peer + ": the certificate has expired", "renew the server's certificate");
  } else if (days && *days < 14) {
    f = make(Level::kWarn, "tls", node, peer + ": the certificate expires within two weeks",
             "renew the server's certificate");
  } else {
    f = make(Level::kOk, "tls", node, peer);
  }
  if (days) f.fields.emplace_back("expires_in_days", std::to_string(*days));
  return f;
}

}  // namespace redisgo::commands::check
