// The config loader (loader.h): the run (pre-scan, parse, the sections, the
// cross-checks), its diagnostics, the command's scope, and unknown keys.
#include "config/loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
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

std::string shown(Millis d, bool from_file, const char* default_note) {
  return format_duration(d) + (from_file ? "" : std::string(" (") + default_note + ")");
}

}  // namespace

LoadResult Loader::run(std::string_view text) {
  toml::table root;
  if (auto bad = toml_unsafe_character(text)) {
    error(bad->at, "", std::string("invalid TOML: ") + bad->why);
    return finish(std::nullopt);
  }
  try {
    root = toml::parse(text, file_);
  } catch (const toml::parse_error& e) {
    std::string what(e.description());
    // toml++ quotes the offending characters ("saw 'G'", "'\\q'"); on a password line
    // those would be part of the secret.
    if (line_mentions_password(text, static_cast<int>(e.source().begin.line))) what = unquote_fragments(what);
    error(loc_of(e.source()), "", "invalid TOML: " + what);
    return finish(std::nullopt);
  }
  check_unknown(root);
  Config c;
  c.source = file_;
  load_redis(root, c.redis);
  load_backoff(root, c.backoff);
  load_task(root, c.task);
  load_log(root, c.log);
  load_metrics(root, c.metrics);
  cross_check(c);
  return finish(std::move(c));
}

void Loader::error(Loc at, std::string key, std::string message) {
  if (!key.empty()) bad_.insert(key);
  errors_.push_back({file_, at.line, at.column, std::move(key), std::move(message)});
}

void Loader::warn(Loc at, std::string key, std::string message) {
  warnings_.push_back({file_, at.line, at.column, std::move(key), std::move(message)});
}

bool Loader::out_of_scope(const Diagnostic& d) const {
  if (scope_ == Scope::kAll) return false;
  for (std::string_view section : {"task", "backoff", "metrics"}) {
    if (d.key == section || d.key.rfind(std::string(section) + ".", 0) == 0) return true;
  }
  return false;
}

LoadResult Loader::finish(std::optional<Config> c) {
  std::erase_if(errors_, [this](const Diagnostic& d) { return out_of_scope(d); });
  std::erase_if(warnings_, [this](const Diagnostic& d) { return out_of_scope(d); });
  // Report in file order; problems of the whole file (no line) first.
  auto by_line = [](const Diagnostic& a, const Diagnostic& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  };
  std::stable_sort(errors_.begin(), errors_.end(), by_line);
  std::stable_sort(warnings_.begin(), warnings_.end(), by_line);
  LoadResult r;
  if (errors_.empty()) r.config = std::move(c);
  r.errors = std::move(errors_);
  r.warnings = std::move(warnings_);
  return r;
}

// ---- unknown keys -------------------------------------------------------------------

void Loader::check_unknown(const toml::table& root) {
  std::vector<std::string_view> sections;
  for (const auto& s : known_keys()) sections.push_back(s.section);
  for (auto&& [k, v] : root) {
    std::string name(k.str());
    const SectionKeys* known = nullptr;
    for (const auto& s : known_keys()) {
      if (s.section == name) known = &s;
    }
    if (known) {
      if (auto t = v.as_table()) check_unknown_in(*t, *known);
      continue;  // a section of the wrong type is an error reported by section()
    }
    std::string msg = v.is_table() ? "unknown section [" + name + "]" : "unknown key '" + name + "'";
    std::optional<std::string> hint;
    if (!v.is_table()) {
      // A key written above every section header lands at the top level.
      for (const auto& s : known_keys()) {
        if (std::find(s.keys.begin(), s.keys.end(), name) != s.keys.end()) {
          hint = std::string(s.section) + "." + name + "' (under [" + std::string(s.section) + "])";
          break;
        }
      }
      if (hint) msg += "; did you mean '" + *hint + "?";
    }
    if (!hint) {
      if (auto c = closest(name, sections)) msg += "; did you mean '" + *c + "'?";
    }
    error(loc_of(k.source()), name, msg);
  }
}

void Loader::check_unknown_in(const toml::table& t, const SectionKeys& known) {
  for (auto&& [k, v] : t) {
    std::string name(k.str());
    if (std::find(known.keys.begin(), known.keys.end(), name) != known.keys.end()) continue;
    std::string dotted = std::string(known.section) + "." + name;
    std::string msg = "unknown key '" + dotted + "'";
    if (auto c = closest(name, known.keys)) {
      msg += "; did you mean '" + *c + "'?";
    } else {
      for (const auto& s : known_keys()) {
        if (s.section != known.section && std::find(s.keys.begin(), s.keys.end(), name) != s.keys.end()) {
          msg += "; '" + name + "' belongs in [" + std::string(s.section) + "]";
          break;
        }
      }
    }
    error(loc_of(k.source()), dotted, msg);
  }
}

// ---- sections -----------------------------------------------------------------------

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
  for (const std::string& name : {base, base + "_env", base + "_file"}) {
    if (auto n = find(sec, "redis", name)) given.push_back({name, n});
  }
  if (given.empty()) return;
  std::sort(given.begin(), given.end(),
            [](const Given& a, const Given& b) { return before(loc_of(*a.node), loc_of(*b.node)); });
  if (given.size() > 1) {
    error(loc_of(*given[1].node), "redis." + given[1].name,
          "the password is given two ways ('" + given[0].name + "' and '" + given[1].name +
              "'); expected exactly one of " + base + ", " + base + "_env, " + base + "_file");
    return;
  }
  const toml::node& n = *given[0].node;
  const std::string& name = given[0].name;
  std::string key = "redis." + name;
  if (name == base) {
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
  } else if (name == base + "_env") {
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
  } else {
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
  if (!given("redis.cron")) r.cron = Millis(r.expire.count() / 3);
  if (given("redis.cron") && !bad_.count("redis.cron") && r.cron < kMinCron) {
    // A renewal costs a node three commands; faster than this, one idle holder alone
    // would break the 50 commands/s a daemon may send a node (docs/DESIGN.md, invariant 7).
    error(where("redis.cron"), "redis.cron",
          "expected a renewal interval of at least " + format_duration(kMinCron) + ", found " +
              format_duration(r.cron));
  }
  if (auto n = find(sec, "redis", "value")) {
    if (auto s = as_string(*n, "redis.value", "a non-empty holder id (leave it out to generate one)")) r.value = *s;
  }
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

void Loader::load_backoff(const toml::table& root, BackoffConfig& b) {
  const toml::table* sec = section(root, "backoff");
  get_enum(sec, "backoff", "strategy", b.strategy, kStrategies);
  get_duration(sec, "backoff", "initial", b.initial);
  get_duration(sec, "backoff", "max", b.max);
  if (auto n = find(sec, "backoff", "factor")) {
    if (auto d = as_number(*n, "backoff.factor", "a number >= 1.0")) {
      if (*d < 1.0) {
        error(loc_of(*n), "backoff.factor", "expected a number >= 1.0, found " + value_text(*n));
      } else {
        b.factor = *d;
      }
    }
  }
  get_enum(sec, "backoff", "jitter", b.jitter, kJitters);
  if (auto n = find(sec, "backoff", "intervals")) {
    if (auto arr = n->as_array()) {
      std::vector<Millis> out;
      bool all_ok = true;
      for (std::size_t i = 0; i < arr->size(); ++i) {
        auto d = as_duration(*arr->get(i), "backoff.intervals[" + std::to_string(i) + "]", Zero::kRejected);
        if (d) {
          out.push_back(*d);
        } else {
          all_ok = false;
          bad_.insert("backoff.intervals");
        }
      }
      if (all_ok) b.intervals = std::move(out);
    } else {
      type_error(*n, "backoff.intervals", "an array of durations such as [\"10ms\", \"50ms\", \"200ms\"]");
    }
  }
}

void Loader::load_command(const toml::node& n, const std::string& name, std::vector<std::string>& command,
                          bool& is_shell) {
  const std::string expected = "an array of strings (exec'd directly) or a string (run by /bin/sh -c)";
  if (auto s = n.as_string()) {
    const std::string& text = s->get();
    if (std::all_of(text.begin(), text.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); })) {
      error(loc_of(n), name, "expected a non-empty command, found an empty string");
      return;
    }
    if (auto ok_text = as_string(n, name, "a shell command")) {
      command = {"/bin/sh", "-c", *ok_text};
      is_shell = true;
    }
    return;
  }
  auto arr = n.as_array();
  if (!arr) {
    type_error(n, name, expected);
    return;
  }
  if (arr->empty()) {
    error(loc_of(n), name, "expected a non-empty command, found an empty array");
    return;
  }
  std::vector<std::string> argv;
  bool all_ok = true;
  for (std::size_t i = 0; i < arr->size(); ++i) {
    std::string key = name + "[" + std::to_string(i) + "]";
    // Only the program name must be non-empty; an empty argument can be meaningful.
    if (auto s = as_string(*arr->get(i), key, i == 0 ? "a program name or path" : "a string argument", i != 0)) {
      argv.push_back(*s);
    } else {
      all_ok = false;
      bad_.insert(name);
    }
  }
  if (all_ok) command = std::move(argv);
}

void Loader::load_task(const toml::table& root, TaskConfig& t) {
  const toml::table* sec = section(root, "task");
  if (auto n = find(sec, "task", "command")) load_command(*n, "task.command", t.command, t.command_is_shell);
  get_enum(sec, "task", "mode", t.mode, kModes);
  get_enum(sec, "task", "restart", t.restart, kRestarts);
  // 0 is allowed: restart (or contend again) at once.
  get_duration(sec, "task", "restart_delay", t.restart_delay, Zero::kAllowed);
  if (auto n = find(sec, "task", "kill_signal")) {
    const std::string expected = "a signal name such as \"SIGTERM\" or a number from 1 to 31";
    if (n->is_string() || n->is_integer()) {
      std::string text = n->is_string() ? n->as_string()->get() : std::to_string(n->as_integer()->get());
      if (auto sig = parse_signal(text)) {
        t.kill_signal = *sig;
      } else {
        error(loc_of(*n), "task.kill_signal", "expected " + expected + ", found " + value_text(*n));
      }
    } else {
      type_error(*n, "task.kill_signal", expected);
    }
  }
  get_duration(sec, "task", "kill_grace", t.kill_grace);
  if (auto n = find(sec, "task", "restart_limit")) {
    if (auto i = as_integer(*n, "task.restart_limit", 0, INT_MAX)) t.restart_limit = static_cast<int>(*i);
  }
  get_duration(sec, "task", "restart_window", t.restart_window);
  if (given("task.restart_window") && !bad_.count("task.restart_window") && t.restart_window < kMinRestartWindow) {
    error(where("task.restart_window"), "task.restart_window",
          "expected at least " + format_duration(kMinRestartWindow) + ", found " + format_duration(t.restart_window) +
              ": a window that short cannot count a crash loop");
  }
  if (auto n = find(sec, "task", "step_down_hold")) {
    if (auto d = as_duration(*n, "task.step_down_hold", Zero::kAllowed)) t.step_down_hold = *d;
  }
  if (auto n = find(sec, "task", "timeout")) {
    if (auto d = as_duration(*n, "task.timeout", Zero::kRejected)) t.timeout = *d;
  }
  if (auto n = find(sec, "task", "limit")) {
    if (auto i = as_integer(*n, "task.limit", 1, kMaxLimit)) t.limit = static_cast<int>(*i);
  }
  if (auto n = find(sec, "task", "once_per")) {
    if (auto d = as_duration(*n, "task.once_per", Zero::kRejected)) {
      if (*d < kMinOncePer || d->count() % 1000 != 0) {
        error(loc_of(*n), "task.once_per",
              "expected a whole number of seconds, at least " + format_duration(kMinOncePer) + ", found " +
                  format_duration(*d));
      } else {
        t.once_per = *d;
      }
    }
  }
  if (auto n = find(sec, "task", "health_command")) {
    load_command(*n, "task.health_command", t.health_command, t.health_command_is_shell);
  }
  get_duration(sec, "task", "health_interval", t.health_interval);
  get_duration(sec, "task", "health_timeout", t.health_timeout);
  if (given("task.health_interval") && !bad_.count("task.health_interval") && t.health_interval < kMinHealthInterval) {
    error(where("task.health_interval"), "task.health_interval",
          "expected at least " + format_duration(kMinHealthInterval) + ", found " + format_duration(t.health_interval));
  }
  if (auto n = find(sec, "task", "health_fall")) {
    if (auto i = as_integer(*n, "task.health_fall", 1, 1000)) t.health_fall = static_cast<int>(*i);
  }
  if (auto n = find(sec, "task", "workdir")) {
    if (auto s = as_string(*n, "task.workdir", "a directory path")) t.workdir = *s;
  }
  if (auto n = find(sec, "task", "env")) {
    if (auto tbl = n->as_table()) {
      for (auto&& [k, v] : *tbl) {
        std::string name(k.str());
        std::string key = "task.env." + name;
        if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos) {
          error(loc_of(k.source()), key, "expected an environment variable name (no '=' and not empty), found " + quote(name));
          continue;
        }
        if (auto s = as_string(v, key, "a string value", true)) t.env[name] = *s;
      }
    } else {
      type_error(*n, "task.env", "a table of strings, such as { NAME = \"value\" }");
    }
  }
}

void Loader::load_metrics(const toml::table& root, MetricsConfig& m) {
  const toml::table* sec = section(root, "metrics");
  if (auto n = find(sec, "metrics", "listen")) {
    if (auto s = as_string(*n, "metrics.listen", "an address \"host:port\" such as \"127.0.0.1:9464\"")) {
      if (auto why = check_listen_address(*s)) {
        error(loc_of(*n), "metrics.listen",
              "expected an address \"host:port\" such as \"127.0.0.1:9464\", found " + quote(*s) + ": " + *why);
      } else {
        m.listen = *s;
      }
    }
  }
  if (auto n = find(sec, "metrics", "textfile")) {
    if (auto s = as_string(*n, "metrics.textfile", "a file path such as \"/var/lib/prometheus/node-exporter/redisgo_task.prom\"")) {
      if (s->back() == '/') {
        error(loc_of(*n), "metrics.textfile", "expected a file path, found the directory " + quote(*s));
      } else {
        m.textfile = *s;
      }
    }
  }
}

void Loader::load_log(const toml::table& root, LogConfig& l) {
  const toml::table* sec = section(root, "log");
  get_enum(sec, "log", "level", l.level, kLevels);
  get_enum(sec, "log", "format", l.format, kFormats);
}

// ---- relations between keys ---------------------------------------------------------

void Loader::cross_check(const Config& c) {
  const RedisConfig& r = c.redis;
  if (ok({"redis.expire", "redis.cron"}) && r.cron >= r.expire) {
    error(where("redis.cron"), "redis.cron",
          "expected a renewal interval less than redis.expire (" + format_duration(r.expire) + "), found " +
              format_duration(r.cron) + ": the lease would expire between renewals");
  } else if (scope_ == Scope::kAll &&
             ok({"redis.expire", "redis.cron", "task.kill_grace", "redis.drift_factor", "redis.drift_fixed"})) {
    // (A margin for stopping the child: no business of a command that runs none.)
    // The holder's local deadline is expire*(1-drift_factor)-drift_fixed after it sent
    // the acquisition; the child is told to stop kill_grace before it. The first renewal
    // goes out after cron, so if cron + kill_grace + drift reaches expire the child
    // could not be stopped in time when a renewal fails (and would be stopped even
    // when all goes well).
    // The SIGKILL goes kill_margin() before the deadline, so that is part of it too.
    Millis drift(static_cast<std::int64_t>(std::ceil(static_cast<double>(r.expire.count()) * r.drift_factor)) +
                 r.drift_fixed.count() + kill_margin(r.expire).count());
    Millis need = r.cron + c.task.kill_grace + drift;
    if (need >= r.expire) {
      std::string key = given("task.kill_grace") ? "task.kill_grace" : given("redis.cron") ? "redis.cron" : "redis.expire";
      error(where(key), key,
            "expected redis.cron + task.kill_grace + drift and kill margin < redis.expire, found " +
                shown(r.cron, given("redis.cron"), "expire/3") + " + " +
                shown(c.task.kill_grace, given("task.kill_grace"), "default") + " + " + format_duration(drift) +
                " >= " + format_duration(r.expire) +
                ": if a renewal fails, the child could not be stopped before the lease expires; "
                "shorten cron or kill_grace, or lengthen expire");
    }
  }
  // A round waits up to connect_timeout + io_timeout on a node; a lease that expires
  // sooner could never be renewed through a slow node in time.
  for (const char* key : {"redis.io_timeout", "redis.connect_timeout"}) {
    const Millis d = std::string(key) == "redis.io_timeout" ? r.io_timeout : r.connect_timeout;
    if (ok({key, "redis.expire"}) && d >= r.expire) {
      error(where(key), key,
            "expected a timeout shorter than redis.expire (" + format_duration(r.expire) + "), found " +
                format_duration(d) + ": one slow node would outlast the lease");
    }
  }
  // AUTH with a user name always needs a password; a password key that was given but
  // bad has its own error already.
  if (!r.username.empty() && !given("redis.password") && !given("redis.password_env") &&
      !given("redis.password_file")) {
    error(where("redis.username"), "redis.username",
          "expected a password with the ACL user (password_env, password_file or password), found none");
  }
  cross_check_modes(r);
  const BackoffConfig& b = c.backoff;
  if (ok({"backoff.initial", "backoff.max"}) && b.initial > b.max) {
    std::string key = given("backoff.initial") ? "backoff.initial" : "backoff.max";
    error(where(key), key,
          "expected backoff.initial <= backoff.max, found initial " + format_duration(b.initial) + " > max " +
              format_duration(b.max));
  }
  if (b.strategy == Strategy::kSimple && b.intervals.empty() && ok({"backoff.intervals", "backoff.strategy"})) {
    std::string key = given("backoff.intervals") ? "backoff.intervals" : "backoff.strategy";
    error(where(key), "backoff.intervals",
          "strategy \"simple\" expects a non-empty list of durations, e.g. intervals = [\"10ms\", \"50ms\", \"200ms\"]");
  }
  if (b.strategy != Strategy::kSimple && given("backoff.intervals") && !bad_.count("backoff.strategy")) {
    warn(where("backoff.intervals"), "backoff.intervals",
         std::string("used only with strategy = \"simple\"; ignored with \"") + to_string(b.strategy) + "\"");
  }
  if (c.task.mode == Mode::kSupervise && c.task.timeout) {
    warn(where("task.timeout"), "task.timeout", "applies to mode = \"oneshot\" only; ignored in supervise mode");
  }
  cross_check_features(c);
}

void Loader::cross_check_features(const Config& c) {
  const TaskConfig& t = c.task;
  const bool mode_ok = !bad_.count("task.mode");
  if (t.once_per && mode_ok && t.mode != Mode::kOneshot) {
    error(where("task.once_per"), "task.once_per",
          "applies to mode = \"oneshot\" only (a run per slot, fired by cron or a timer), found mode = \"supervise\"");
  }
  if (t.once_per && t.limit > 1 && !bad_.count("task.limit")) {
    error(where("task.once_per"), "task.once_per",
          "expected limit = 1 with once_per (one run per slot), found limit = " + std::to_string(t.limit));
  }
  const bool health_given = given("task.health_command");
  if (health_given && mode_ok && t.mode != Mode::kSupervise) {
    error(where("task.health_command"), "task.health_command",
          "applies to mode = \"supervise\" only (it checks a service while it leads), found mode = \"oneshot\"");
  }
  if (!health_given) {
    for (const char* key : {"task.health_interval", "task.health_timeout", "task.health_fall"}) {
      if (given(key)) {
        error(where(key), key, "applies only with task.health_command, found no health_command in [task]");
      }
    }
  }
  if (health_given && ok({"task.health_interval", "task.health_timeout"}) && t.health_timeout >= t.health_interval) {
    const char* key = given("task.health_timeout") ? "task.health_timeout" : "task.health_interval";
    error(where(key), key,
          "expected health_timeout < health_interval, found " + format_duration(t.health_timeout) + " >= " +
              format_duration(t.health_interval) + ": a check must end before the next one is due");
  }
}

void Loader::cross_check_modes(const RedisConfig& r) {
  if (!bad_.count("redis.tls")) {
    for (const char* key : {"redis.tls_ca_file", "redis.tls_cert_file", "redis.tls_key_file", "redis.tls_server_name",
                            "redis.tls_skip_verify"}) {
      if (given(key) && !r.tls.enabled) {
        error(where(key), key,
              std::string("applies only with tls = true, found ") + (given("redis.tls") ? "tls = false" : "no 'tls'") +
                  ": set tls = true to use TLS (a TLS setting must not be ignored silently)");
      }
    }
  }
  if (r.tls.enabled) {
    if (given("redis.tls_cert_file") != given("redis.tls_key_file")) {
      const char* key = given("redis.tls_cert_file") ? "redis.tls_cert_file" : "redis.tls_key_file";
      error(where(key), key, "expected both tls_cert_file and tls_key_file (a client certificate and its key), found only one");
    }
    if (r.tls.skip_verify) {
      warn(where("redis.tls_skip_verify"), "redis.tls_skip_verify",
           "the Redis server's certificate is NOT verified: anyone on the path can read the password and forge "
           "the lease; for tests only");
    }
    for (const auto& node : r.nodes) {
      if (node.rfind("unix://", 0) == 0) {
        const char* key = r.topology == Topology::kSingle ? "redis.host" : "redis.nodes";
        error(where(key), key,
              "expected TCP nodes with tls = true, found the unix socket '" + node +
                  "' (Redis serves no TLS on unix sockets)");
        break;
      }
    }
  }
  const bool sentinel = r.topology == Topology::kSentinel && !bad_.count("redis.sentinels");
  for (const char* key : {"redis.sentinel_master", "redis.sentinel_username", "redis.sentinel_password",
                          "redis.sentinel_password_env", "redis.sentinel_password_file", "redis.sentinel_wait_replicas"}) {
    if (given(key) && r.topology != Topology::kSentinel && !bad_.count("redis.sentinels")) {
      error(where(key), key, "applies only with 'sentinels' (Redis Sentinel), found no 'sentinels' in [redis]");
    }
  }
  if (sentinel && !given("redis.sentinel_master")) {
    error(where("redis.sentinels"), "redis.sentinel_master",
          "missing: expected the name of the master the sentinels watch with 'sentinels', e.g. "
          "sentinel_master = \"mymaster\"");
  }
  if (!r.sentinel_username.empty() && r.sentinel_password_source == PasswordSource::kNone &&
      !given("redis.sentinel_password") && !given("redis.sentinel_password_env") &&
      !given("redis.sentinel_password_file")) {
    error(where("redis.sentinel_username"), "redis.sentinel_username",
          "expected a password with the sentinels' ACL user (sentinel_password_env, sentinel_password_file or "
          "sentinel_password), found none");
  }
  if (r.topology == Topology::kCluster && !cluster_safe_key(r.key)) {
    error(where("redis.key"), "redis.key",
          "expected a key whose fence counter and release channel can share its hash slot: with cluster_nodes a "
          "key containing '}' needs a non-empty hash tag, e.g. \"{jobs}" + r.key + "\"; found \"" + r.key + "\"");
  }
  if (r.topology == Topology::kCluster && r.db != 0 && given("redis.db")) {
    error(where("redis.db"), "redis.db", "expected db = 0 with cluster_nodes (Redis Cluster has only database 0), found " +
                                             std::to_string(r.db));
  }
}

}  // namespace redisgo::config::detail
