// The config loader (loader.h): the run (pre-scan, parse, the sections, the
// cross-checks), its diagnostics, the command's scope, and unknown keys.
#include "config/loader.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>

#include "util/duration.h"

namespace redisgo::config::detail {

namespace {

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
