// `list`'s talking to Redis (commands/list.h): the servers to scan, SCAN, and one read-only
// script per key; list.cpp judges what they answered.
#include <map>
#include <memory>
#include <set>

#include "commands/check_findings.h"
#include "commands/list.h"
#include "lock/fencing.h"
#include "lock/lease.h"
#include "lock/replies_admin.h"
#include "lock/replies_once.h"
#include "lock/scripts.h"
#include "redis/poller.h"
#include "redis/reply.h"
#include "util/exit_status.h"
#include "util/text.h"
#include "wiring/servers.h"

namespace redisgo::commands {

namespace {

using redis::AsyncConnection;
using redis::CallPtr;

/// SCAN calls per node and pattern at most (COUNT 1000 each: up to ~10 million keys looked
/// at), so that a huge keyspace ends in a bounded time with a word instead of never.
constexpr int kMaxScanCalls = 10'000;

/// Waits for every call outstanding on `conn` (each bounded by its own timeouts).
void settle(AsyncConnection& conn) { redis::drive({&conn}, nullptr, redis::DriveOptions{}); }

/// SCAN ... MATCH `match` to the end (or the bound): the names. False, with `scan.error`
/// set, when a call failed.
bool scan_names(AsyncConnection& conn, const std::string& match, list::NodeScan& scan, std::vector<std::string>& names) {
  std::string cursor = "0";
  for (int calls = 0;; ++calls) {
    if (calls == kMaxScanCalls) {
      scan.truncated = true;
      return true;
    }
    CallPtr c = conn.send({"SCAN", cursor, "MATCH", match, "COUNT", "1000"});
    settle(conn);
    if (!c->ok()) {
      scan.error = c->done() ? c->error() : conn.describe() + ": no answer";
      if (scan.error.find("NOPERM") != std::string::npos) {
        scan.error += " (list needs +scan for this user, and read access to the keys it lists)";
      }
      scan.refused = redis::is_refusal(c->fault());
      return false;
    }
    const redis::Reply& r = c->reply();
    if (!r.is_array() || r.size() != 2) {
      scan.error = "unexpected SCAN reply";
      return false;
    }
    cursor = redis::as_string(r.element(0)).value_or("0");
    const redisReply* batch = r.element(1);
    for (std::size_t i = 0; batch && batch->type == REDIS_REPLY_ARRAY && i < batch->elements; ++i) {
      if (auto name = redis::as_string(batch->element[i])) names.push_back(*name);
    }
    if (cursor == "0") return true;
  }
}

/// "<base>:<suffix>" -> the key, when `name` ends so and a key derives that base.
std::optional<std::string> key_of(const std::string& name, const std::string& suffix, std::string* rest = nullptr) {
  const auto at = name.rfind(suffix);
  if (at == std::string::npos || at == 0) return std::nullopt;
  if (rest) *rest = name.substr(at + suffix.size());
  return lock::LeaseKeys::key_of_base(name.substr(0, at));
}

/// A glob as SCAN MATCH reads it (`*`, `?`, `[...]`, backslash escapes), on the key's name.
bool glob_match(const char* p, const char* s) {
  for (; *p; ++p, ++s) {
    switch (*p) {
      case '*':
        for (;; ++s) {
          if (glob_match(p + 1, s)) return true;
          if (!*s) return false;
        }
      case '?':
        if (!*s) return false;
        break;
      case '[': {
        if (!*s) return false;
        const char* q = p + 1;
        const bool negate = *q == '^';
        if (negate) ++q;
        bool hit = false;
        for (; *q && *q != ']'; ++q) {
          if (*q == '\\' && q[1]) ++q;
          if (q[1] == '-' && q[2] && q[2] != ']') {
            hit = hit || (*s >= *q && *s <= q[2]);
            q += 2;
          } else {
            hit = hit || *s == *q;
          }
        }
        if (hit == negate) return false;
        p = *q ? q : q - 1;
        break;
      }
      case '\\':
        if (p[1]) ++p;
        [[fallthrough]];
      default:
        if (*s != *p) return false;
    }
  }
  return !*s;
}

/// The node's answer for each key, by kListKey (and the latest claims by kReadClaims).
void read_keys(AsyncConnection& conn, const std::vector<std::string>& keys,
               const std::map<std::string, std::pair<std::int64_t, std::string>>& claims, list::NodeScan& scan) {
  std::vector<CallPtr> calls;
  for (const auto& key : keys) {
    const auto k = lock::LeaseKeys::derive(key);
    std::vector<std::string> names{k.key, k.fence, k.line, k.pause()};
    const auto slots = k.slots_from(1);
    names.insert(names.end(), slots.begin(), slots.end());
    calls.push_back(conn.eval(lock::kListKey, names, {k.refused()}));
  }
  std::vector<std::pair<std::string, CallPtr>> claim_calls;
  for (const auto& [key, claim] : claims) claim_calls.emplace_back(key, conn.eval(lock::kReadClaims, {claim.second}, {}));
  settle(conn);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    list::NodeKey a;
    const CallPtr& c = calls[i];
    const auto r = c->ok() ? lock::parse_list_key_reply(c->reply().get()) : std::nullopt;
    if (!r) {
      a.error = c->done() ? (c->error().empty() ? "unexpected reply" : c->error()) : "no answer";
      scan.keys.emplace_back(keys[i], std::move(a));
      continue;
    }
    a.read = true;
    a.holder = r->holder;
    a.ttl_ms = r->pttl_ms;
    a.fence = r->fence;
    a.line = r->line_length;
    a.pause_ttl_ms = r->pause_pttl_ms;
    a.paused_by = r->pause.by;
    a.pause_reason = r->pause.reason;
    a.paused_since_ms = r->pause.since_ms;
    a.paused_until_ms = r->pause.until_ms;
    a.refusal = r->note;
    for (const auto& s : r->slots) a.slots.push_back({s.slot, s.holder, s.pttl_ms});
    for (const auto& o : r->other_type) a.other_type.emplace_back(o.slot, o.type);
    scan.keys.emplace_back(keys[i], std::move(a));
  }
  for (const auto& [key, c] : claim_calls) {
    const auto r = c->ok() ? lock::parse_read_claims_reply(c->reply().get(), 1) : std::nullopt;
    if (!r) continue;
    list::LastClaim claim;
    claim.slot_start_s = claims.at(key).first;
    claim.holder = r->claims[0].holder;
    claim.status = r->claims[0].status;
    scan.claims.emplace_back(key, std::move(claim));
  }
}

/// The names a node lists: keys (by their fence counters) and each key's latest claim.
struct Found {
  std::vector<std::string> keys;
  std::map<std::string, std::pair<std::int64_t, std::string>> claims;  ///< key -> {slot start, claim key}
};

Found discover(AsyncConnection& conn, const std::string& pattern, list::NodeScan& scan) {
  Found found;
  std::vector<std::string> names;
  if (!scan_names(conn, "*:fence", scan, names)) return found;
  scan.reachable = true;
  // A key paused before any host ever took it has a pause but no fence counter yet.
  if (!scan_names(conn, "*:pause", scan, names)) return found;
  std::set<std::string> keys;
  for (const auto& n : names) {
    auto key = key_of(n, ":fence");
    if (!key) key = key_of(n, ":pause");
    if (key && glob_match(pattern.c_str(), key->c_str())) keys.insert(*key);
  }
  found.keys.assign(keys.begin(), keys.end());
  names.clear();
  list::NodeScan claims_scan;
  if (scan_names(conn, "*:once:*", claims_scan, names)) {
    for (const auto& n : names) {
      std::string rest;
      auto key = key_of(n, ":once:", &rest);
      const std::int64_t start = lock::parse_count(rest);
      if (!key || !keys.contains(*key) || start <= 0) continue;
      auto it = found.claims.find(*key);
      if (it == found.claims.end() || start > it->second.first) found.claims[*key] = {start, n};
    }
  }
  scan.truncated = scan.truncated || claims_scan.truncated;
  return found;
}

/// The servers to scan: every node, the Sentinel master, or every Cluster master.
std::vector<std::pair<std::string, redis::ConnectionOptions>> servers(const config::Config& config,
                                                                      std::vector<list::NodeScan>& failed) {
  std::vector<std::pair<std::string, redis::ConnectionOptions>> out;
  const auto& r = config.redis;
  switch (r.topology) {
    case config::Topology::kSingle:
    case config::Topology::kRedlock:
      for (auto& node : wiring::lease_options(config, "list").nodes) out.emplace_back(node.endpoint.str(), std::move(node));
      break;
    case config::Topology::kSentinel: {
      auto view = check::sentinel_findings(redis::inspect_sentinels(wiring::sentinel_options(config)), r.sentinel_master, 0);
      if (view.master) {
        out.emplace_back(view.master->str(), wiring::pinned_options(config, *view.master));
      } else {
        list::NodeScan s;
        s.node = "master '" + r.sentinel_master + "'";
        s.error = "no majority of sentinels names it";
        failed.push_back(std::move(s));
      }
      break;
    }
    case config::Topology::kCluster: {
      std::vector<std::string> errors;
      for (const auto& m : redis::cluster_masters(wiring::cluster_options(config), errors)) {
        out.emplace_back(m.str(), wiring::pinned_options(config, m));
      }
      if (out.empty()) {
        list::NodeScan s;
        s.node = "cluster";
        s.error = errors.empty() ? "no seed answered CLUSTER SLOTS" : errors.front();
        failed.push_back(std::move(s));
      }
      break;
    }
  }
  return out;
}

}  // namespace

int run_list(const config::Config& config, const std::string& pattern, bool json, std::ostream& out) {
  const std::string match = pattern.empty() ? "*" : pattern;
  std::vector<list::NodeScan> scans;
  const auto targets = servers(config, scans);
  std::vector<std::unique_ptr<AsyncConnection>> conns;
  std::vector<Found> found;
  std::set<std::string> all;
  for (const auto& [name, options] : targets) {
    list::NodeScan scan;
    scan.node = name;
    conns.push_back(std::make_unique<AsyncConnection>(options));
    found.push_back(discover(*conns.back(), match, scan));
    all.insert(found.back().keys.begin(), found.back().keys.end());
    scans.push_back(std::move(scan));
  }
  // Redlock: every node is asked about every key any node has (a node that lost a key says
  // it is free there); a Cluster master only about its own.
  const bool cluster = config.redis.topology == config::Topology::kCluster;
  const std::size_t first = scans.size() - targets.size();
  for (std::size_t i = 0; i < targets.size(); ++i) {
    list::NodeScan& scan = scans[first + i];
    if (!scan.reachable) continue;
    const std::vector<std::string> keys = cluster ? found[i].keys : std::vector<std::string>(all.begin(), all.end());
    read_keys(*conns[i], keys, found[i].claims, scan);
  }
  const int nodes = config.redis.topology == config::Topology::kRedlock ? static_cast<int>(config.redis.nodes.size()) : 1;
  const int quorum = cluster ? 1 : nodes / 2 + 1;
  const auto rows = list::merge(scans, quorum);
  if (json) {
    list::write_json(rows, scans, out);
  } else {
    list::write_text(rows, scans, out);
  }
  int scanned = 0;
  bool refused = false;
  for (const auto& s : scans) {
    scanned += s.reachable ? 1 : 0;
    refused = refused || s.refused;
  }
  // Cluster: every master holds keys of its own; one not scanned leaves keys out.
  const bool enough = cluster ? scanned == static_cast<int>(scans.size()) && scanned > 0 : scanned >= quorum;
  if (enough) return 0;
  return refused ? kExitNoPerm : kExitUnavailable;
}

}  // namespace redisgo::commands
