// The config loader (loader.h): the [redis] section. Where the lease lives (host, nodes,
// sentinels or cluster_nodes), the passwords and where each comes from, Sentinel, TLS.
#include "config/loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>

#include "util/duration.h"
#include "util/error.h"
#include "util/unique_fd.h"

namespace redisgo::config::detail {

namespace {

/// 16 databases, Redis's default `databases` setting (the manual's *db*).
constexpr std::int64_t kMaxDb = 15;
constexpr std::int64_t kMaxWaitReplicas = 100;

const char* const kNodeExpected = "a node address \"host:port\" or \"unix:///path/redis.sock\"";

}  // namespace

std::optional<std::vector<std::string>> Loader::address_list(const toml::node& list, const std::string& name,
                                                             bool tcp_only) {
  auto arr = list.as_array();
  if (!arr) {
    type_error(list, name, "an array of addresses such as [\"10.0.0.1:6379\", \"10.0.0.2:6379\"]");
    return std::nullopt;
  }
  if (arr->empty()) {
    error(loc_of(list), name, "expected at least one address, found an empty array");
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool all_ok = true;
  for (std::size_t i = 0; i < arr->size(); ++i) {
    std::string key = name + "[" + std::to_string(i) + "]";
    const toml::node& n = *arr->get(i);
    auto s = address(n, key, tcp_only);
    if (!s) {
      all_ok = false;
      continue;
    }
    if (std::find(out.begin(), out.end(), *s) != out.end()) {
      // The same node twice would count one vote twice and break the quorum's meaning.
      error(loc_of(n), key, "expected distinct addresses, found " + value_text(n) + " listed twice");
      all_ok = false;
      continue;
    }
    out.push_back(*s);
  }
  if (!all_ok) {
    bad_.insert(name);
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> Loader::address(const toml::node& n, const std::string& key, bool tcp_only) {
  const std::string expected = tcp_only ? "an address \"host:port\"" : kNodeExpected;
  auto s = as_string(n, key, expected);
  if (!s) return std::nullopt;
  if (auto why = check_node_address(*s)) {
    error(loc_of(n), key, "expected " + expected + ", found " + value_text(n) + " (" + *why + ")");
    return std::nullopt;
  }
  if (tcp_only && s->rfind("unix://", 0) == 0) {
    error(loc_of(n), key, "expected " + expected + ", found " + value_text(n) + " (a unix socket cannot be one here)");
    return std::nullopt;
  }
  return s;
}

void Loader::load_nodes(const toml::table* sec, RedisConfig& r) {
  struct Way {
    const char* name;
    Topology topology;
    const toml::node* node;
  };
  std::vector<Way> given;
  for (Way w : {Way{"host", Topology::kSingle, nullptr}, Way{"nodes", Topology::kRedlock, nullptr},
                Way{"sentinels", Topology::kSentinel, nullptr}, Way{"cluster_nodes", Topology::kCluster, nullptr}}) {
    w.node = find(sec, "redis", w.name);
    if (w.node) given.push_back(w);
  }
  if (given.empty()) {
    // A [redis] of the wrong type has its own error already.
    if (!bad_.count("redis")) {
      error(section_loc("redis"), "redis.host",
            "missing: expected one of 'host' (one Redis), 'nodes' (Redlock), 'sentinels' (Sentinel) or "
            "'cluster_nodes' (Redis Cluster) in [redis]");
    }
    return;
  }
  std::sort(given.begin(), given.end(), [](const Way& a, const Way& b) { return before(loc_of(*a.node), loc_of(*b.node)); });
  if (given.size() > 1) {
    error(loc_of(*given[1].node), std::string("redis.") + given[1].name,
          std::string("'") + given[0].name + "' and '" + given[1].name +
              "' are mutually exclusive: give exactly one of host (one Redis), nodes (Redlock), sentinels "
              "(Sentinel) or cluster_nodes (Redis Cluster)");
    return;
  }
  const Way& w = given[0];
  r.topology = w.topology;
  const std::string key = std::string("redis.") + w.name;
  switch (w.topology) {
    case Topology::kSingle:
      if (auto s = address(*w.node, key, false)) r.nodes = {*s};
      return;
    case Topology::kRedlock:
      if (auto l = address_list(*w.node, key, false)) r.nodes = std::move(*l);
      return;
    case Topology::kSentinel:
      if (auto l = address_list(*w.node, key, true)) r.sentinels = std::move(*l);
      return;
    case Topology::kCluster:
      if (auto l = address_list(*w.node, key, true)) r.cluster_nodes = std::move(*l);
      return;
  }
}

void Loader::load_password(const toml::table* sec, const std::string& base, std::string& secret, PasswordSource& source,
                           std::string& origin) {
  struct Given {
    std::string name;
    const toml::node* node;
  };
  std::vector<Given> given;
  for (const std::string& name : {base, base + "_env", base + "_file", base + "_credential"}) {
    if (auto n = find(sec, "redis", name)) given.push_back({name, n});
  }
  if (given.empty()) return;
  std::sort(given.begin(), given.end(),
            [](const Given& a, const Given& b) { return before(loc_of(*a.node), loc_of(*b.node)); });
  if (given.size() > 1) {
    error(loc_of(*given[1].node), "redis." + given[1].name,
          "the password is given two ways ('" + given[0].name + "' and '" + given[1].name +
              "'); expected exactly one of " + base + ", " + base + "_env, " + base + "_file, " + base +
              "_credential");
    return;
  }
  const toml::node& n = *given[0].node;
  const std::string& name = given[0].name;
  std::string key = "redis." + name;
  if (name == base) {
    load_inline_password(n, key, base, secret, source);
  } else if (name == base + "_env") {
    load_env_password(n, key, secret, source, origin);
  } else if (name == base + "_file") {
    load_file_password(n, key, secret, source, origin);
  } else {
    load_credential_password(n, key, secret, source, origin);
  }
}

void Loader::load_inline_password(const toml::node& n, const std::string& key, const std::string& base,
                                  std::string& secret, PasswordSource& source) {
  // Only type and emptiness are checked: nothing here may quote the value.
  if (!n.is_string()) {
    type_error(n, key, "a string");
    return;
  }
  if (n.as_string()->get().empty()) {
    error(loc_of(n), key, "expected a non-empty password, found an empty string (leave the key out for no AUTH)");
    return;
  }
  secret = n.as_string()->get();
  source = PasswordSource::kInline;
  warn(loc_of(n), key,
       "password written in the config file; prefer " + base + "_env or " + base +
           "_file so the secret stays out of the file");
}

void Loader::load_env_password(const toml::node& n, const std::string& key, std::string& secret,
                               PasswordSource& source, std::string& origin) {
  if (!n.is_string()) {
    type_error(n, key, "the name of an environment variable, such as \"REDIS_PASSWORD\"");
    return;
  }
  const std::string& var = n.as_string()->get();
  if (!looks_like_env_name(var)) {
    // Not echoed: a value that is no variable name may well be the password itself.
    error(loc_of(n), key,
          "expected the name of an environment variable (letters, digits, '_'), such as "
          "\"REDIS_PASSWORD\"; found a string that is not one (not shown, it may be the secret)");
    return;
  }
  auto value = env_ ? env_(var) : std::nullopt;
  if (!value) {
    error(loc_of(n), key, "expected environment variable " + var + " to hold the password, found it unset");
    return;
  }
  if (value->empty()) {
    error(loc_of(n), key, "expected environment variable " + var + " to hold the password, found it empty");
    return;
  }
  secret = *value;
  source = PasswordSource::kEnv;
  origin = var;
}

void Loader::load_file_password(const toml::node& n, const std::string& key, std::string& secret,
                                PasswordSource& source, std::string& origin) {
  auto path = as_string(n, key, "the path of a file holding the password");
  if (!path) return;
  std::string why;
  bool world_readable = false;
  auto value = read_secret_file(*path, why, world_readable);
  if (!value) {
    error(loc_of(n), key, "expected a readable, non-empty password file; " + why);
    return;
  }
  if (world_readable) {
    warn(loc_of(n), key, "password file '" + *path + "' is readable by every user; chmod o-r it");
  }
  secret = std::move(*value);
  source = PasswordSource::kFile;
  origin = *path;
}

void Loader::load_credential_password(const toml::node& n, const std::string& key, std::string& secret,
                                      PasswordSource& source, std::string& origin) {
  auto name = as_string(n, key, "the name of a systemd credential, such as \"redisgo_task.redis-password\"");
  if (!name) return;
  if (!credential_name_valid(*name)) {
    // Not echoed: a value that is no credential name may well be the password itself.
    error(loc_of(n), key,
          "expected the name of a systemd credential (a file name: no '/', not \".\" or \"..\", at most 255 "
          "bytes), such as \"redisgo_task.redis-password\"; found a string that is not one (not shown, it may be the "
          "secret)");
    return;
  }
  std::string why;
  auto path = credential_path(*name, env_, why);
  if (!path) {
    error(loc_of(n), key, why);
    return;
  }
  bool world_readable = false;
  // Outside the unit the credential store is read, which is root's alone (mode 0700).
  const bool in_unit = env_ && env_("CREDENTIALS_DIRECTORY").value_or("") != "";
  auto value = read_secret_file(*path, why, world_readable, in_unit);
  if (!value) {
    if (!in_unit && why.find("(errno " + std::to_string(EACCES) + ")") != std::string::npos) {
      why += "; outside its unit a credential is read from systemd's credential store, which only root may read: "
             "run the command with sudo";
    }
    error(loc_of(n), key, "expected a readable, non-empty credential '" + *name + "'; " + why);
    return;
  }
  secret = std::move(*value);
  source = PasswordSource::kCredential;
  origin = *path;
}

void Loader::load_sentinel(const toml::table* sec, RedisConfig& r) {
  if (auto n = find(sec, "redis", "sentinel_master")) {
    if (auto s = as_string(*n, "redis.sentinel_master", "the name of the master the sentinels watch, such as \"mymaster\"")) {
      r.sentinel_master = *s;
    }
  }
  if (auto n = find(sec, "redis", "sentinel_username")) {
    if (auto s = as_string(*n, "redis.sentinel_username", "a non-empty ACL user name")) r.sentinel_username = *s;
  }
  load_password(sec, "sentinel_password", r.sentinel_password, r.sentinel_password_source, r.sentinel_password_origin);
  if (auto n = find(sec, "redis", "sentinel_wait_replicas")) {
    if (auto i = as_integer(*n, "redis.sentinel_wait_replicas", 0, kMaxWaitReplicas)) {
      r.sentinel_wait_replicas = static_cast<int>(*i);
    }
  }
}

void Loader::check_readable_file(const toml::node& n, const std::string& key, std::string& out, bool secret) {
  auto path = as_string(n, key, "the path of a PEM file");
  if (!path) return;
  UniqueFd fd(::open(path->c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  struct stat st {};
  if (!fd) {
    error(loc_of(n), key, "expected a readable PEM file; " + errno_message("cannot open '" + *path + "'", errno));
    return;
  }
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error(loc_of(n), key, "expected a readable PEM file; '" + *path + "' is not a regular file");
    return;
  }
  if (secret && (st.st_mode & S_IROTH) != 0) {
    warn(loc_of(n), key, "private key file '" + *path + "' is readable by every user; chmod o-r it");
  }
  out = *path;
}

void Loader::load_tls(const toml::table* sec, TlsConfig& t) {
  if (auto n = find(sec, "redis", "tls")) {
    if (auto b = as_bool(*n, "redis.tls")) t.enabled = *b;
  }
  if (auto n = find(sec, "redis", "tls_skip_verify")) {
    if (auto b = as_bool(*n, "redis.tls_skip_verify")) t.skip_verify = *b;
  }
  if (auto n = find(sec, "redis", "tls_ca_file")) check_readable_file(*n, "redis.tls_ca_file", t.ca_file, false);
  if (auto n = find(sec, "redis", "tls_cert_file")) check_readable_file(*n, "redis.tls_cert_file", t.cert_file, false);
  if (auto n = find(sec, "redis", "tls_key_file")) check_readable_file(*n, "redis.tls_key_file", t.key_file, true);
  if (auto n = find(sec, "redis", "tls_server_name")) {
    if (auto s = as_string(*n, "redis.tls_server_name", "the server's name in its certificate, such as \"redis.internal\"")) {
      t.server_name = *s;
    }
  }
}

void Loader::load_holder_prefix(const toml::table* sec, RedisConfig& r) {
  if (auto n = find(sec, "redis", "value")) {
    if (auto s = as_string(*n, "redis.value", "a non-empty holder id (leave it out to generate one)")) {
      if (const auto found = control_character_found(*s)) {
        error(loc_of(*n), "redis.value", "expected a holder id without control characters, found " + *found);
      } else {
        r.value = *s;
      }
    }
  }
  // Hosts that share a host name (containers, clones) and one file tell their holders apart
  // by this (redisgo_task(1), ENVIRONMENT); `task --holder-prefix` overrides it in turn (cli).
  if (auto prefix = env_ ? env_(kHolderPrefixEnv) : std::nullopt) {
    if (prefix->empty()) {
      error(where("redis.value"), "redis.value",
            std::string("expected ") + kHolderPrefixEnv + " to hold a non-empty holder id prefix, found it empty");
    } else if (const auto found = control_character_found(*prefix)) {
      error(where("redis.value"), "redis.value",
            std::string("expected ") + kHolderPrefixEnv + " to hold a holder id prefix without control characters, found " +
                *found);
    } else {
      r.value = *prefix;
    }
  }
}

void Loader::load_redis(const toml::table& root, RedisConfig& r) {
  const toml::table* sec = section(root, "redis");
  load_nodes(sec, r);
  if (auto n = find(sec, "redis", "key")) {
    if (auto s = as_string(*n, "redis.key", "a non-empty string (the lock key)")) {
      if (s->size() > kMaxKeyBytes) {
        error(loc_of(*n), "redis.key",
              "expected a key of at most " + std::to_string(kMaxKeyBytes) + " bytes, found " +
                  std::to_string(s->size()) + " bytes");
      } else {
        r.key = *s;
      }
    }
  } else if (!bad_.count("redis")) {
    error(section_loc("redis"), "redis.key", "missing: expected the lock key, e.g. key = \"Redisgo_Task_Lock_key\"");
  }
  if (auto n = find(sec, "redis", "monitor_try_all")) {
    if (auto b = as_bool(*n, "redis.monitor_try_all")) r.monitor_try_all = *b;
  }
  if (auto n = find(sec, "redis", "fair")) {
    if (auto b = as_bool(*n, "redis.fair")) r.fair = *b;
  }
  if (auto n = find(sec, "redis", "restart_guard")) {
    if (auto b = as_bool(*n, "redis.restart_guard")) r.restart_guard = *b;
  }
  if (auto n = find(sec, "redis", "retries_count")) {
    if (auto i = as_integer(*n, "redis.retries_count", 1, INT_MAX)) r.retries_count = static_cast<int>(*i);
  }
  get_duration(sec, "redis", "expire", r.expire);
  if (r.expire > kMaxExpire) {
    error(where("redis.expire"), "redis.expire",
          "expected a lease TTL of at most 1 day (24h), found " + format_duration(r.expire));
  }
  get_duration(sec, "redis", "cron", r.cron);
  if (!given("redis.cron")) r.cron = default_cron(r.expire);
  if (given("redis.cron") && !bad_.count("redis.cron") && r.cron < kMinCron) {
    // A renewal costs a node three commands; faster than this, one idle holder alone
    // would break the 50 commands/s a daemon may send a node (docs/DESIGN.md, invariant 7).
    error(where("redis.cron"), "redis.cron",
          "expected a renewal interval of at least " + format_duration(kMinCron) + ", found " +
              format_duration(r.cron));
  }
  load_holder_prefix(sec, r);
  if (auto n = find(sec, "redis", "username")) {
    if (auto s = as_string(*n, "redis.username", "a non-empty ACL user name")) r.username = *s;
  }
  load_password(sec, "password", r.password, r.password_source, r.password_origin);
  load_sentinel(sec, r);
  load_tls(sec, r.tls);
  if (auto n = find(sec, "redis", "db")) {
    if (auto i = as_integer(*n, "redis.db", 0, kMaxDb)) r.db = static_cast<int>(*i);
  }
  get_duration(sec, "redis", "connect_timeout", r.connect_timeout);
  get_duration(sec, "redis", "io_timeout", r.io_timeout);
  get_duration(sec, "redis", "unreachable_timeout", r.unreachable_timeout);
  if (auto n = find(sec, "redis", "drift_factor")) {
    const std::string expected = "a number from 0 up to (not including) 0.5";
    if (auto d = as_number(*n, "redis.drift_factor", expected)) {
      if (*d < 0 || *d >= 0.5) {
        error(loc_of(*n), "redis.drift_factor", "expected " + expected + ", found " + value_text(*n));
      } else {
        r.drift_factor = *d;
      }
    }
  }
  // 0 is allowed: with drift_factor it is an allowance, and no allowance is a choice.
  get_duration(sec, "redis", "drift_fixed", r.drift_fixed, Zero::kAllowed);
}

}  // namespace redisgo::config::detail
