#include "commands/check.h"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands/check_findings.h"
#include "commands/check_probe.h"
#include "lock/lease.h"
#include "lock/replies.h"
#include "lock/replies_admin.h"
#include "lock/replies_line.h"
#include "lock/replies_once.h"
#include "redis/acl.h"
#include "redis/topology.h"
#include "util/clock.h"
#include "util/exit_status.h"
#include "util/text.h"
#include "wiring/servers.h"

namespace redisgo::commands {

using wiring::lease_options;
using wiring::sentinel_options;
using wiring::cluster_options;
namespace {

using check::Finding;
using check::Level;
using check::make;
using check::Probe;
using check::why;
using check::config_value;
using check::subscribe_channel;
using redis::Call;
using redis::CallPtr;
using redis::Fault;
using redis::SteadyClock;

std::optional<std::int64_t> to_int(const std::string& s) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

Finding reach_finding(const Probe& p, const config::RedisConfig& r) {
  const Call& c = *p.info;
  const std::string error = why(p, p.info);
  if (c.state() == Call::State::kFailed || !c.done()) {
    switch (c.fault()) {
      case Fault::kAuth:
        if (error.find("without any password") != std::string::npos) {
          return make(Level::kFail, "reachable", p.name, "credentials refused: " + error,
                      "the server has no password for this user: drop the password from the config, or give the "
                      "server one (requirepass or an ACL user)");
        }
        return make(Level::kFail, "reachable", p.name, "credentials refused: " + error,
                       "check username and the password (" +
                           (r.password_origin.empty() ? std::string("password") : r.password_origin) +
                           "): the server refused them");
      case Fault::kTls:
        return make(Level::kFail, "reachable", p.name, "TLS handshake failed: " + error,
                       "check tls_ca_file, tls_server_name and the client certificate against the server's TLS setup");
      case Fault::kReply: {
        // The connection's set-up (AUTH, SELECT) got an error reply: the server is there.
        std::string hint = "see the server's reply";
        if (error.find("AUTH") != std::string::npos) {
          hint = "the server does not know this AUTH form (AUTH with a username needs Redis 6): check the server's "
                 "version and the config's username";
        } else if (error.find("SELECT") != std::string::npos) {
          hint = "check db (" + std::to_string(r.db) + ") against the server's databases setting";
        }
        return make(Level::kFail, "reachable", p.name, "the server refused the connection's set-up: " + error, hint);
      }
      default:
        return make(Level::kFail, "reachable", p.name,
                       "unreachable (" + std::string(redis::to_string(c.done() ? c.fault() : Fault::kTimeout)) +
                           "): " + error,
                       "start the server or fix its address; check firewalls and connect_timeout (" +
                           std::to_string(r.connect_timeout.count()) + " ms)");
    }
  }
  if (c.reply().is_error() && c.fault() == Fault::kAuth && error.rfind("NOAUTH", 0) == 0) {
    return make(Level::kFail, "reachable", p.name,
                   "credentials refused: the server requires a password (" + error + ") and the config gives none",
                   "set password_credential, password_file or password_env (and username for an ACL user)");
  }
  const double ms = p.first_reply ? std::chrono::duration<double, std::milli>(*p.first_reply).count() : 0.0;
  Finding f = make(Level::kOk, "reachable", p.name,
                      "answered in " + check::format_us(static_cast<std::int64_t>(ms * 1000.0)) +
                          " (connect" + (r.tls.enabled ? ", TLS" : "") + (r.password.empty() ? "" : ", AUTH") +
                          " and the first reply)");
  f.fields.emplace_back("ms", check::json_number(ms));
  return f;
}

Finding scripts_finding(const Probe& p, const lock::LeaseKeys& keys) {
  const Call& c = *p.inspect;
  if (c.ok()) {
    auto r = lock::parse_inspect_reply(c.reply().get());
    if (!r) return make(Level::kWarn, "scripts", p.name, "EVAL ran, but the inspect script's reply is not understood");
    std::string m = "the lease scripts run (EVAL); " + keys.key + " is ";
    m += !r->held           ? std::string("free")
         : r->pttl_ms == -1 ? "held by " + r->holder
                            : "held by " + r->holder + ", ttl " + std::to_string(r->pttl_ms) + " ms";
    if (r->token > 0) m += "; fence token " + std::to_string(r->token);
    // A counter the acquire scripts refuse blocks every acquisition on this node; a key
    // without an expiry (set by hand) never frees itself, as `task` and `status` say too.
    Finding f = !r->bad_fence.empty()
                    ? make(Level::kFail, "scripts", p.name,
                           m + "; the fence counter " + keys.fence + " holds " + r->bad_fence +
                               ", not an integer below 2^53-1: no lease can be acquired on this node",
                           "delete it (DEL " + keys.fence + "); the server's TIME floor keeps tokens increasing")
                : r->held && r->pttl_ms == -1
                    ? make(Level::kWarn, "scripts", p.name,
                           m + " (no expiry: not a lease of ours, set by hand?): it will never free itself, and no "
                               "daemon can take it on this node",
                           "delete it (DEL " + keys.key + ") once nothing runs the job by hand")
                    : make(Level::kOk, "scripts", p.name, m);
    f.fields.emplace_back("held", r->held ? "true" : "false");
    f.fields.emplace_back("holder", r->held ? check::json_quote(r->holder) : "null");
    f.fields.emplace_back("token", r->bad_fence.empty() ? std::to_string(r->token) : "null");
    return f;
  }
  const std::string error = why(p, p.inspect);
  if (c.done() && c.fault() == Fault::kAuth) {
    return make(Level::kFail, "scripts", p.name, "the ACL refuses the lease scripts: " + error,
                   "grant this user EVAL and EVALSHA, the commands the scripts call (GET SET DEL PEXPIRE PTTL TIME "
                   "PUBLISH) and the keys " + keys.key + " and " + keys.fence + " (and the channel " + keys.channel + ")");
  }
  if (error.rfind("MOVED", 0) == 0 || error.rfind("ASK", 0) == 0 || error.rfind("CROSSSLOT", 0) == 0) {
    return make(Level::kFail, "scripts", p.name, "EVAL on the key failed: " + error,
                   "the key's slot lives elsewhere: list the cluster under cluster_nodes");
  }
  return make(Level::kFail, "scripts", p.name, "EVAL on the key failed: " + error,
                 "the daemon runs Lua scripts on " + keys.key + ": make EVAL work for this user and key");
}

/// Whether this user may SUBSCRIBE where a waiting daemon does: without +subscribe the
/// daemon stands by without wake-on-release, which nothing else would show.
Finding subscribe_finding(const Probe& p, bool fair, const lock::LeaseKeys& keys) {
  const std::string channel = subscribe_channel(fair, keys);
  const CallPtr& c = p.subscribe;
  if (c && c->ok()) {
    // A narrower grant (the wake channels only) leaves a supervise leader deaf to `handover`.
    const CallPtr& k = p.subscribe_control;
    if (k && !k->ok() && check::acl_refused(why(p, k))) {
      return make(Level::kWarn, "subscribe", p.name,
                  "this user may SUBSCRIBE to " + channel + " but not to " + keys.control + ": " + why(p, k) +
                      ": a supervise leader does not hear `handover`",
                  "grant the channels &" + keys.base + ":* (the README's ACL recipe)");
    }
    return make(Level::kOk, "subscribe", p.name,
                "this user may SUBSCRIBE to " + channel + (k && k->ok() ? " and " + keys.control : std::string()));
  }
  const std::string e = why(p, c);
  if (check::acl_refused(e)) {
    return make(Level::kWarn, "subscribe", p.name,
                "this user may not SUBSCRIBE to " + channel + ": " + e +
                    ": a waiting daemon is not woken by a release and takes over only when the lease expires" +
                    (fair ? ", and cannot wait in the line" : ""),
                "grant +subscribe and the channels &" + keys.base + ":* (the README's ACL recipe)");
  }
  return make(Level::kWarn, "subscribe", p.name, "could not test SUBSCRIBE to " + channel + ": " + e);
}

/// What the daemon's scripts write, tried on scratch keys (kCheckRights): a command this user
/// may not run is a fail (the daemon would fail alike); a scratch key outside its key
/// patterns is a skip (nothing learnt), but the pause key is one the scripts read.
Finding rights_finding(const Probe& p, const lock::LeaseKeys& keys) {
  // Every acquire script reads the pause key: a user without it acquires nothing.
  if (p.pause && p.pause->done() && !p.pause->ok() && check::acl_refused(why(p, p.pause))) {
    return make(Level::kFail, "rights", p.name,
                "the acquire scripts read " + keys.pause() + ", which this user may not: " + why(p, p.pause) +
                    ": the daemon would acquire nothing",
                "grant the keys " + keys.key + " and " + keys.base + ":* (the README's ACL recipe)");
  }
  // The daemon sends a script by EVAL once per connection, then by EVALSHA: a user without
  // +evalsha runs one acquisition and fails every call after it.
  if (p.by_sha && p.by_sha->done() && !p.by_sha->ok() && check::acl_refused(why(p, p.by_sha))) {
    return make(Level::kFail, "rights", p.name,
                "this user may run EVAL but not EVALSHA: " + why(p, p.by_sha) +
                    ": the daemon runs each script by EVALSHA after its first use on a connection",
                "grant +evalsha (the README's ACL recipe)");
  }
  const CallPtr& c = p.rights;
  const auto r = c && c->ok() ? lock::parse_check_rights_reply(c->reply().get()) : std::nullopt;
  if (!r) {
    const std::string e = why(p, c);
    if (check::acl_refused(e) && e.find("keys") != std::string::npos) {
      return check::skip("rights", p.name, "the scratch keys " + keys.base + ":check*", e, "~" + keys.base + ":*");
    }
    if (check::acl_refused(e)) {
      return make(Level::kFail, "rights", p.name, "this user may not run the lease scripts: " + e,
                  "grant it EVAL and EVALSHA (the README's ACL recipe)");
    }
    return make(Level::kWarn, "rights", p.name, "could not test what the lease scripts write: " + e);
  }
  const std::string& what = r->command;
  const std::string& error = r->error;
  if (what.empty()) {
    return make(Level::kOk, "rights", p.name, "this user may run what the lease scripts write (tried on " + keys.base +
                                                  ":check, deleted at once)");
  }
  if (error.find("keys") != std::string::npos) {
    return check::skip("rights", p.name, "the scratch key " + keys.base + ":check", what + ": " + error,
                       "~" + keys.base + ":*");
  }
  if (error.find("READONLY") != std::string::npos) {
    // Not a right a grant would give: the role check names the replica and what to point at.
    return make(Level::kWarn, "rights", p.name,
                "could not test what the lease scripts write: the server is a read-only replica (" + error + ")",
                "see the role check");
  }
    if (what == "PUBLISH") {
    // The release still frees the lease; only nobody is woken (lock/scripts.h kRelease).
    return make(Level::kWarn, "rights", p.name,
                "this user may not PUBLISH where the release does: " + error +
                    ": a release frees the lease but wakes nobody, so a standby takes over only when the lease "
                    "expires",
                "grant +publish and the channels &" + keys.base + ":* (the README's ACL recipe)");
  }
  // Named as the daemon names a refused renewal (redis/acl.h), so that both say "+pexpire".
  return make(Level::kFail, "rights", p.name,
              "the lease scripts run " + what + ", which this user may not: " + error +
                  ": the daemon would fail alike (acquire, renew, release or the line)",
              "grant " + redis::right_for(what) + ", and the rest of what the README's ACL recipe lists (commands, "
              "and the keys " + keys.key + " and " + keys.base + ":*)");
}

/// The waiting line and the listeners outside it ({length, entries, outside}: kReadLine).
Finding line_finding(const Probe& p, bool fair, const lock::LeaseKeys& keys) {
  std::optional<std::int64_t> length;
  std::int64_t outside = -1;
  const CallPtr& c = p.line;
  if (const auto r = c && c->ok() ? lock::parse_read_line_reply(c->reply().get()) : std::nullopt) {
    length = r->length;
    outside = r->outside;
  }
  return check::line_finding(p.name, fair, length, outside, keys.line, keys.channel, length ? "" : why(p, c));
}

/// Everything about one server that answered.
void node_findings(const Probe& p, const config::Config& config, const lock::LeaseKeys& keys,
                   std::vector<Finding>& out) {
  const auto& r = config.redis;
  out.push_back(reach_finding(p, r));
  if (!p.usable) return;
  if (r.tls.enabled && !p.peer.empty()) out.push_back(check::tls_finding(p.name, p.peer));

  std::map<std::string, std::string> info;
  if (p.info->ok() && p.info->reply().is_string()) info = check::parse_info(p.info->reply().str());
  const std::string info_why = p.info->ok() ? "no such field" : why(p, p.info);
  auto field = [&](const char* name) {
    auto it = info.find(name);
    return it == info.end() ? std::string() : shown_text(it->second);
  };

  out.push_back(check::version_finding(p.name, field("redis_version"), !r.username.empty(), info_why));

  // ROLE first ({"master", ...} / {"slave", ip, port, ...}); INFO replication if refused.
  std::string role, master_of, role_why;
  if (p.role->ok() && p.role->reply().is_array() && p.role->reply().size() > 0) {
    role = shown_text(redis::as_string(p.role->reply().element(0)).value_or(""));
    if ((role == "slave" || role == "replica") && p.role->reply().size() >= 3) {
      auto host = redis::as_string(p.role->reply().element(1));
      auto port = redis::as_integer(p.role->reply().element(2));
      if (host && port) master_of = *host + ":" + std::to_string(*port);
    }
  } else {
    role = field("role");
    if (!field("master_host").empty()) master_of = field("master_host") + ":" + field("master_port");
    role_why = "ROLE: " + why(p, p.role) + "; INFO: " + info_why;
  }
  out.push_back(check::role_finding(p.name, role, field("redis_mode"), master_of, r.topology, role_why));

  // CONFIG GET may be refused (ACL) or renamed (managed Redis): INFO memory has both too.
  std::string policy = config_value(p.policy).value_or(field("maxmemory_policy"));
  std::optional<std::int64_t> maxmemory;
  if (auto v = config_value(p.maxmemory)) maxmemory = to_int(*v);
  if (!maxmemory && !field("maxmemory").empty()) maxmemory = to_int(field("maxmemory"));
  out.push_back(check::memory_finding(p.name, policy, maxmemory, "CONFIG GET: " + why(p, p.policy) + "; INFO: " + info_why));

  check::Persistence persistence;
  if (const std::string aof = field("aof_enabled"); !aof.empty()) persistence.aof = aof != "0";
  persistence.save = config_value(p.save);
  persistence.appendfsync = config_value(p.appendfsync).value_or("");
  persistence.why = !persistence.aof ? "INFO: " + info_why : why(p, p.save);
  std::optional<std::int64_t> uptime;
  if (const std::string up = field("uptime_in_seconds"); !up.empty()) uptime = to_int(up);
  out.push_back(check::guard_finding(p.name, r.restart_guard, uptime, info_why));
  out.push_back(check::persistence_finding(p.name, persistence, r.expire, r.topology, r.restart_guard && uptime));

  out.push_back(scripts_finding(p, keys));
  out.push_back(rights_finding(p, keys));
  out.push_back(subscribe_finding(p, r.fair, keys));
  out.push_back(line_finding(p, r.fair, keys));
  if (p.beyond && p.beyond->ok()) {
    const auto beyond = lock::parse_slots_beyond_reply(p.beyond->reply().get());
    const auto n = beyond ? beyond->held : 0;
    if (n > 0) {
      out.push_back(make(Level::kFail, "limit", p.name,
                         std::to_string(n) + " slot(s) beyond this config's limit = " + std::to_string(config.task.limit) +
                             " are held: a daemon of this key runs a larger limit, so more jobs run at once than this "
                             "config allows",
                         "set one limit on every daemon of this key"));
    }
  }

  if (auto offset = check::best_offset(p.samples)) {
    out.push_back(check::clock_finding(p.name, *offset, r.expire, config.task.once_per));
  } else {
    out.push_back(make(Level::kWarn, "clock", p.name, "could not read the server's TIME",
                          "allow TIME to this user: the fencing token's floor is the server's TIME"));
  }
}

/// once_per: what a node answered for the rule (check::once_findings).
check::OnceProbe once_probe(const Probe& p) {
  check::OnceProbe o;
  o.node = p.name;
  if (const auto r = p.once && p.once->ok() ? lock::parse_read_once_reply(p.once->reply().get(), 2) : std::nullopt) {
    o.state = r->state;
    o.current = r->claims[0];
    o.next = r->claims[1];
  } else {
    o.why = why(p, p.once);
  }
  o.appendfsync = config_value(p.appendfsync).value_or("");
  auto refused = [&](const CallPtr& c) {
    const std::string e = c && c->done() && !c->ok() ? why(p, c) : "";
    return check::acl_refused(e) ? e : "";
  };
  o.waitaof_error = refused(p.waitaof);
  o.wait_error = refused(p.wait);
  return o;
}

const char* topology_name(config::Topology t) {
  switch (t) {
    case config::Topology::kSingle: return "host";
    case config::Topology::kRedlock: return "nodes";
    case config::Topology::kSentinel: return "sentinels";
    case config::Topology::kCluster: return "cluster_nodes";
  }
  return "";
}

/// The servers to examine: each of `nodes`, or the one Sentinel or Cluster locates (their own
/// findings, the sentinels' view, go to `findings` and `sentinel`).
std::vector<std::unique_ptr<Probe>> locate(const config::Config& config, std::vector<Finding>& findings,
                                           std::optional<check::SentinelView>& sentinel) {
  const auto& r = config.redis;
  std::vector<std::unique_ptr<Probe>> probes;
  switch (r.topology) {
    case config::Topology::kSingle:
    case config::Topology::kRedlock:
      for (auto& node : lease_options(config, "check").nodes) {
        std::string name = node.endpoint.str();
        probes.push_back(std::make_unique<Probe>(std::move(name), std::move(node)));
      }
      break;
    case config::Topology::kSentinel: {
      sentinel = check::sentinel_findings(redis::inspect_sentinels(sentinel_options(config)), r.sentinel_master,
                                          r.sentinel_wait_replicas);
      auto& view = *sentinel;
      findings = std::move(view.findings);
      if (view.master) {
        probes.push_back(std::make_unique<Probe>(view.master->str(), wiring::pinned_options(config, *view.master)));
      }
      break;
    }
    case config::Topology::kCluster: {
      auto view = check::cluster_findings(redis::inspect_cluster(cluster_options(config)), r.key);
      findings = std::move(view.findings);
      if (view.owner) {
        probes.push_back(std::make_unique<Probe>(view.owner->str(), wiring::pinned_options(config, *view.owner)));
      }
      break;
    }
  }
  return probes;
}

/// What the probes answered, as findings; how many are usable, and whether a server refused
/// the credentials (`refused`). Each server's run_id goes to `ids`.
int read_probes(const std::vector<std::unique_ptr<Probe>>& probes, const config::Config& config,
                const lock::LeaseKeys& keys, const std::optional<check::SentinelView>& sentinel,
                std::vector<Finding>& findings, std::vector<check::ServerId>& ids, bool& refused) {
  const auto& r = config.redis;
  int usable = 0;
  for (const auto& p : probes) {
    node_findings(*p, config, keys, findings);
    usable += p->usable ? 1 : 0;
    const Call& c = *p->info;
    refused = refused || (c.done() && redis::is_refusal(c.fault()));
    std::string run_id;
    if (p->usable && p->info->ok() && p->info->reply().is_string()) {
      auto info = check::parse_info(p->info->reply().str());
      if (auto it = info.find("run_id"); it != info.end()) run_id = it->second;
      if (sentinel && sentinel->master) {
        // The master's own count of online replicas is what WAIT counts: it decides the
        // "replicas" finding over the sentinels' list (which lags behind a new replica).
        const auto online = check::online_replicas(info);
        for (auto& f : findings) {
          if (f.check != "replicas") continue;
          f = check::replica_finding(sentinel->replicas, sentinel->replicas_error, sentinel->master->str(),
                                     r.sentinel_wait_replicas, online);
        }
      }
    }
    ids.push_back({p->name, run_id});
  }
  return usable;
}

}  // namespace

int run_check(const config::Config& config, bool json, std::ostream& out) {
  const auto& r = config.redis;
  const lock::LeaseKeys keys = lock::LeaseKeys::derive(r.key);
  std::vector<Finding> findings;
  std::optional<check::SentinelView> sentinel;
  std::vector<std::unique_ptr<Probe>> probes = locate(config, findings, sentinel);
  // Sentinel and Cluster need their one located server; `nodes` a majority of them.
  const int node_count = r.topology == config::Topology::kRedlock ? static_cast<int>(r.nodes.size()) : 1;
  const int quorum = node_count / 2 + 1;

  check::ask(probes, keys, r, config.task.limit, config.task.once_per);

  bool refused = false;
  std::vector<check::ServerId> ids;
  const int usable = read_probes(probes, config, keys, sentinel, findings, ids, refused);
  for (auto& f : check::duplicate_findings(ids, quorum)) findings.push_back(std::move(f));
  if (config.task.once_per) {
    std::vector<check::OnceProbe> once;
    for (const auto& p : probes) {
      if (p->usable) once.push_back(once_probe(*p));
    }
    for (auto& f : check::once_findings(once, config, wall_ms(), quorum)) findings.push_back(std::move(f));
  }
  if (r.topology == config::Topology::kRedlock) findings.push_back(check::quorum_finding(usable, node_count, quorum));
  if (r.tls.enabled && r.tls.skip_verify) {
    findings.push_back(make(Level::kWarn, "tls", "", "tls_skip_verify = true: the servers' certificates are not verified",
                               "set tls_ca_file (and tls_server_name if needed) and remove tls_skip_verify"));
  }
  findings.push_back(check::margin_finding(config));

  const int code = check::exit_code(findings, usable >= quorum, refused);
  if (json) {
    check::Report report;
    report.config = config.source;
    report.key = r.key;
    report.topology = topology_name(r.topology);
    report.nodes = static_cast<int>(probes.size());
    report.reachable = usable;
    report.quorum = quorum;
    report.findings = std::move(findings);
    report.exit = code;
    check::write_json(report, out);
  } else {
    check::write_text(findings, out);
  }
  return code;
}

}  // namespace redisgo::commands
