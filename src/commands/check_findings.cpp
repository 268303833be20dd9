#include "commands/check_findings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "commands/check_findings_detail.h"
#include "daemon/state_machine.h"
#include "log/logging.h"
#include "util/duration.h"

namespace redisgo::commands::check {
namespace detail {

std::string and_list(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += i + 1 == parts.size() ? " and " : ", ";
    out += parts[i];
  }
  return out;
}

}  // namespace detail

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

std::string ms_field(Millis d) { return std::to_string(d.count()); }

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

Finding make(Level level, std::string check, std::string node, std::string message, std::string hint) {
  Finding f;
  f.level = level;
  f.check = std::move(check);
  f.node = std::move(node);
  f.message = std::move(message);
  f.hint = std::move(hint);
  return f;
}

const char* to_string(Level level) {
  switch (level) {
    case Level::kOk: return "ok";
    case Level::kWarn: return "warn";
    case Level::kFail: return "fail";
  }
  return "fail";
}

int exit_code(const std::vector<Finding>& findings, bool quorum_reachable) {
  if (!quorum_reachable) return kExitUnavailable;
  const bool clean = std::all_of(findings.begin(), findings.end(), [](const Finding& f) { return f.level == Level::kOk; });
  return clean ? 0 : 1;
}

void write_text(const std::vector<Finding>& findings, std::ostream& out) {
  for (const auto& f : findings) {
    std::string level = to_string(f.level);
    level.resize(4, ' ');
    // One line per finding, whatever a server or a holder id put in the text.
    out << level << " " << f.check;
    if (!f.node.empty()) out << " " << log::printable(f.node);
    out << ": " << log::printable(f.message);
    if (!f.hint.empty()) {
      const bool stop = !f.message.empty() && std::string_view(".?!").find(f.message.back()) != std::string_view::npos;
      out << (stop ? " Fix: " : ". Fix: ") << log::printable(f.hint);
    }
    out << "\n";
  }
}

std::string json_quote(std::string_view s) { return log::json_quoted(s); }

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

void write_json(const Report& r, std::ostream& out) {
  out << "{\"config\":" << json_quote(r.config) << ",\"key\":" << json_quote(r.key)
      << ",\"topology\":" << json_quote(r.topology) << ",\"nodes\":" << r.nodes << ",\"reachable\":" << r.reachable
      << ",\"quorum\":" << r.quorum << ",\"findings\":[";
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    out << (i ? "," : "") << "{\"level\":" << json_quote(to_string(f.level)) << ",\"check\":" << json_quote(f.check)
        << ",\"node\":" << (f.node.empty() ? "null" : json_quote(f.node)) << ",\"message\":" << json_quote(f.message)
        << ",\"hint\":" << (f.hint.empty() ? "null" : json_quote(f.hint));
    for (const auto& [name, value] : f.fields) out << "," << json_quote(name) << ":" << value;
    out << "}";
  }
  out << "],\"exit\":" << r.exit << "}\n";
}

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
  if (policy.empty()) {
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
  } else if (!p.aof) {
    f = make(Level::kWarn, "persistence", node, "could not read INFO persistence (" + p.why + ")",
             "check by hand: " + restart_hint(expire, topology));
  } else if (*p.aof) {
    std::string m = "AOF on";
    if (!p.appendfsync.empty()) m += " (appendfsync " + p.appendfsync + ")";
    if (p.save && !p.save->empty()) m += ", RDB save \"" + *p.save + "\"";
    f = make(Level::kOk, "persistence", node, m);
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

ClockOffset offset_of(const ClockSample& s) {
  const std::int64_t rtt = s.recv_us - s.send_us;
  ClockOffset o;
  o.offset_us = s.server_us - (s.send_us + rtt / 2);
  o.uncertainty_us = std::abs(rtt) / 2 + (std::abs(rtt) % 2);
  return o;
}

std::optional<ClockOffset> best_offset(const std::vector<ClockSample>& samples) {
  const ClockSample* best = nullptr;
  for (const auto& s : samples) {
    if (!best || std::abs(s.recv_us - s.send_us) < std::abs(best->recv_us - best->send_us)) best = &s;
  }
  if (!best) return std::nullopt;
  return offset_of(*best);
}

std::optional<std::int64_t> parse_time_reply(const std::string& seconds, const std::string& micros) {
  std::int64_t s = 0, us = 0;
  auto [p1, e1] = std::from_chars(seconds.data(), seconds.data() + seconds.size(), s);
  auto [p2, e2] = std::from_chars(micros.data(), micros.data() + micros.size(), us);
  if (e1 != std::errc() || e2 != std::errc() || p1 != seconds.data() + seconds.size() ||
      p2 != micros.data() + micros.size() || s < 0 || us < 0 || us >= 1'000'000 || s > 100'000'000'000LL) {
    return std::nullopt;
  }
  return s * 1'000'000 + us;
}

Millis clock_limit(Millis expire, std::optional<Millis> once_per) {
  const Millis limit = std::min(expire / 10, Millis(1000));
  return once_per ? std::min(limit, *once_per / 4) : limit;
}

std::string format_us(std::int64_t us) {
  char buf[64];
  const double v = static_cast<double>(us);
  if (std::abs(us) < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", v / 1000.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", v / 1e6);
  }
  std::string out = buf;
  if (out.rfind("-0.00 ", 0) == 0 && out.find_first_not_of("-0. ms") == std::string::npos) out.erase(0, 1);  // no "-0.00"
  return out;
}

Finding clock_finding(const std::string& node, const ClockOffset& o, Millis expire, std::optional<Millis> once_per) {
  const Millis limit = clock_limit(expire, once_per);
  const std::string why_limit = limit < clock_limit(expire) ? " (a quarter of once_per: every host must name the same slot)"
                                                            : " (a tenth of expire, at most 1s)";
  const std::int64_t beyond = std::abs(o.offset_us) - o.uncertainty_us;
  const std::string sign = o.offset_us >= 5 ? "+" : "";  // nothing before a figure that rounds to 0.00
  const std::string figures = sign + format_us(o.offset_us) + " (±" + format_us(o.uncertainty_us) + ")";
  Finding f;
  if (beyond > limit.count() * 1000) {
    f = make(Level::kWarn, "clock", node,
             "the server's TIME is " + figures + " from this host's clock, more than " + format_duration(limit) + why_limit,
             "synchronise this host and the Redis servers with NTP (chrony, systemd-timesyncd): the lease itself runs "
             "on monotonic clocks, but fencing tokens take the server's TIME as their floor and once_per slots come "
             "from each host's clock");
  } else {
    f = make(Level::kOk, "clock", node,
             "the server's TIME is " + figures + " from this host's clock (warn above " + format_duration(limit) + ")");
  }
  f.fields.emplace_back("offset_ms", json_number(static_cast<double>(o.offset_us) / 1000.0));
  f.fields.emplace_back("uncertainty_ms", json_number(static_cast<double>(o.uncertainty_us) / 1000.0));
  return f;
}

Margins margins(const config::Config& config) {
  const auto& r = config.redis;
  Margins m;
  m.expire = r.expire;
  m.cron = r.cron.count() > 0 ? r.cron : r.expire / 3;
  m.kill_grace = config.task.kill_grace;
  // As config.cpp's cross-check: the drift allowance and the kill margin.
  m.drift = Millis(static_cast<std::int64_t>(std::ceil(static_cast<double>(r.expire.count()) * r.drift_factor)) +
                   r.drift_fixed.count() + config::kill_margin(r.expire).count());
  m.need = m.cron + m.kill_grace + m.drift;
  m.spare = m.expire - m.need;
  m.round_trip = r.connect_timeout + r.io_timeout;
  return m;
}

Finding margin_finding(const config::Config& config) {
  const Margins m = margins(config);
  const std::string figures = "cron " + format_duration(m.cron) + " + kill_grace " + format_duration(m.kill_grace) +
                              " + drift and kill margin " + format_duration(m.drift) + " = " + format_duration(m.need) +
                              " of expire " + format_duration(m.expire) + ": " + format_duration(m.spare) + " to spare";
  const std::string fix = "lengthen expire, or shorten cron, kill_grace or the timeouts";
  Finding f;
  if (m.spare <= Millis(0)) {
    f = make(Level::kFail, "margins", "",
             figures + "; if a renewal fails, the child cannot be stopped before the lease expires", fix);
  } else if (m.spare < m.round_trip) {
    f = make(Level::kWarn, "margins", "",
             figures + ", less than connect_timeout + io_timeout (" + format_duration(m.round_trip) +
                 "): a renewal that has to reconnect is confirmed only after the child was told to stop",
             fix);
  } else if (m.spare < m.cron) {
    f = make(Level::kWarn, "margins", "",
             figures + ", less than one cron: when a renewal fails, the child is told to stop before the next tick; "
                       "only the quick retries can save it",
             fix);
  } else {
    f = make(Level::kOk, "margins", "",
             figures + " (at least one cron and connect_timeout + io_timeout " + format_duration(m.round_trip) + ")");
  }
  f.fields.emplace_back("cron_ms", ms_field(m.cron));
  f.fields.emplace_back("kill_grace_ms", ms_field(m.kill_grace));
  f.fields.emplace_back("drift_ms", ms_field(m.drift));
  f.fields.emplace_back("expire_ms", ms_field(m.expire));
  f.fields.emplace_back("spare_ms", ms_field(m.spare));
  return f;
}

Finding quorum_finding(int reachable, int nodes, int quorum) {
  const std::string figures = std::to_string(reachable) + " of " + std::to_string(nodes) + " nodes reachable, quorum " +
                              std::to_string(quorum);
  Finding f;
  if (reachable < quorum) {
    f = make(Level::kFail, "quorum", "", figures + ": no lease can be taken or renewed",
             "bring back at least " + std::to_string(quorum - reachable) + " more node(s)");
  } else if (reachable < nodes) {
    f = make(Level::kWarn, "quorum", "",
             figures + ": " + std::to_string(reachable - quorum + 1) + " more failure(s) and no holder can renew",
             "bring the unreachable node(s) back");
  } else {
    f = make(Level::kOk, "quorum", "", figures);
  }
  f.fields.emplace_back("reachable", std::to_string(reachable));
  f.fields.emplace_back("quorum", std::to_string(quorum));
  return f;
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
