// The effective configuration as TOML (`validate`): defaults filled in, secrets masked,
// and text that reads back as the same configuration.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>

#include "config/config.h"
#include "config/detail.h"
#include "util/duration.h"
#include "util/float_text.h"

namespace redisgo::config {

using detail::format_double;
using detail::kMask;
using detail::quote;

namespace detail {

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static constexpr char kHex[] = "0123456789ABCDEF";
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

std::string format_double(double v) {
  std::string s;
  if (std::isfinite(v)) {
    append_shortest(s, v, FloatStyle::kShortest);
  } else {
    s = std::isnan(v) ? (std::signbit(v) ? "-nan" : "nan") : (v < 0 ? "-inf" : "inf");  // as to_chars spells them
  }
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string dur(Millis d) { return quote(format_duration(d)); }

}  // namespace detail

namespace {

using detail::dur;

// A comment ends at a newline; a path containing one must not break the TOML.
std::string comment_safe(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, '?');
  return text;
}

void render_list(std::ostream& o, const char* name, const std::vector<std::string>& items) {
  o << name << " = [";
  for (std::size_t i = 0; i < items.size(); ++i) o << (i ? ", " : "") << quote(items[i]);
  o << "]\n";
}

// The secret itself is never written; the key that names its origin is, so that the
// output reads back as the same configuration.
void render_password(std::ostream& o, const std::string& base, PasswordSource source, const std::string& origin) {
  switch (source) {
    case PasswordSource::kNone:
      o << "# " << base << ": none (no AUTH)\n";
      break;
    case PasswordSource::kInline:
      o << base << " = \"" << kMask << "\"  # inline in the config file; masked\n";
      break;
    case PasswordSource::kEnv:
      o << base << "_env = " << quote(origin) << "  # " << base << " = \"" << kMask << "\", from env "
        << comment_safe(origin) << "\n";
      break;
    case PasswordSource::kFile:
      o << base << "_file = " << quote(origin) << "  # " << base << " = \"" << kMask << "\", from file "
        << comment_safe(origin) << "\n";
      break;
    case PasswordSource::kCredential:
      // origin is the path it was read from; the credential's name is its last part.
      o << base << "_credential = " << quote(origin.substr(origin.rfind('/') + 1)) << "  # " << base << " = \""
        << kMask << "\", from " << comment_safe(origin) << "\n";
      break;
  }
}

void render_command(std::ostream& o, const char* name, const std::vector<std::string>& argv, bool is_shell) {
  if (is_shell && argv.size() == 3) {
    o << name << " = " << quote(argv[2]) << "  # run by /bin/sh -c\n";
    return;
  }
  render_list(o, name, argv);
}

/// Where the lease lives: host, nodes, sentinels (with the Sentinel keys) or cluster_nodes.
void render_topology(std::ostream& o, const RedisConfig& r) {
  switch (r.topology) {
    case Topology::kSingle: o << "host = " << quote(r.nodes.empty() ? std::string() : r.nodes[0]) << "\n"; break;
    case Topology::kRedlock: render_list(o, "nodes", r.nodes); break;
    case Topology::kSentinel:
      render_list(o, "sentinels", r.sentinels);
      o << "sentinel_master = " << quote(r.sentinel_master) << "\n";
      if (!r.sentinel_username.empty()) o << "sentinel_username = " << quote(r.sentinel_username) << "\n";
      render_password(o, "sentinel_password", r.sentinel_password_source, r.sentinel_password_origin);
      o << "sentinel_wait_replicas = " << r.sentinel_wait_replicas << "\n";
      break;
    case Topology::kCluster: render_list(o, "cluster_nodes", r.cluster_nodes); break;
  }
}

void render_tls(std::ostream& o, const TlsConfig& tls) {
  o << "tls = " << (tls.enabled ? "true" : "false") << "\n";
  if (!tls.enabled) return;
  if (tls.ca_file.empty()) {
    o << "# tls_ca_file: none (the system trust store)\n";
  } else {
    o << "tls_ca_file = " << quote(tls.ca_file) << "\n";
  }
  if (!tls.cert_file.empty()) o << "tls_cert_file = " << quote(tls.cert_file) << "\n";
  if (!tls.key_file.empty()) o << "tls_key_file = " << quote(tls.key_file) << "\n";
  if (tls.server_name.empty()) {
    o << "# tls_server_name: each node's host\n";
  } else {
    o << "tls_server_name = " << quote(tls.server_name) << "\n";
  }
  o << "tls_skip_verify = " << (tls.skip_verify ? "true  # NOT VERIFIED: tests only" : "false") << "\n";
}

/// Only the keys of the config's mode are rendered: a key of the other mode is ignored
/// (with a warning) when the file is read, and `validate` prints what is in effect.
void render_redis(std::ostream& o, const RedisConfig& r, Mode mode) {
  o << "[redis]\n";
  render_topology(o, r);
  o << "key = " << quote(r.key) << "\n";
  if (mode == Mode::kOneshot) {
    o << "monitor_try_all = " << (r.monitor_try_all ? "true" : "false") << "\n";
    o << "retries_count = " << r.retries_count << "\n";
  } else {
    o << "# monitor_try_all, retries_count, unreachable_timeout: oneshot only (supervise contends until stopped)\n";
  }
  o << "expire = " << dur(r.expire) << "\n";
  o << "cron = " << dur(r.cron.count() > 0 ? r.cron : default_cron(r.expire)) << "\n";
  if (r.value.empty()) {
    o << "# value = generated at start (<hostname>:<pid>:<random 128-bit hex>)\n";
  } else {
    o << "value = " << quote(r.value) << "\n";
  }
  if (!r.username.empty()) o << "username = " << quote(r.username) << "\n";
  render_password(o, "password", r.password_source, r.password_origin);
  o << "db = " << r.db << "\n";
  o << "connect_timeout = " << dur(r.connect_timeout) << "\n";
  o << "io_timeout = " << dur(r.io_timeout) << "\n";
  if (mode == Mode::kOneshot) o << "unreachable_timeout = " << dur(r.unreachable_timeout) << "\n";
  o << "drift_factor = " << format_double(r.drift_factor) << "\n";
  o << "drift_fixed = " << dur(r.drift_fixed) << "\n";
  o << "fair = " << (r.fair ? "true" : "false") << "\n";
  o << "restart_guard = " << (r.restart_guard ? "true" : "false") << "\n";
  render_tls(o, r.tls);
}

void render_backoff(std::ostream& o, const BackoffConfig& b) {
  o << "[backoff]\n";
  o << "strategy = " << quote(to_string(b.strategy)) << "\n";
  o << "initial = " << dur(b.initial) << "\n";
  o << "max = " << dur(b.max) << "\n";
  o << "factor = " << format_double(b.factor) << "\n";
  o << "jitter = " << quote(to_string(b.jitter)) << "\n";
  if (!b.intervals.empty()) {
    o << "intervals = [";
    for (std::size_t i = 0; i < b.intervals.size(); ++i) o << (i ? ", " : "") << dur(b.intervals[i]);
    o << "]\n";
  }
}

/// The child's working directory and environment.
void render_task_env(std::ostream& o, const TaskConfig& t) {
  if (t.workdir.empty()) {
    o << "# workdir: inherited\n";
  } else {
    o << "workdir = " << quote(t.workdir) << "\n";
  }
  if (!t.env.empty()) {
    o << "env = { ";
    bool first = true;
    for (const auto& [k, v] : t.env) {
      o << (first ? "" : ", ") << quote(k) << " = " << quote(v);
      first = false;
    }
    o << " }\n";
  }
}

/// limit, once_per (oneshot) and the health check (supervise).
void render_task_features(std::ostream& o, const TaskConfig& t) {
  o << "limit = " << t.limit << "\n";
  if (t.mode == Mode::kOneshot) {
    if (t.once_per) {
      o << "once_per = " << dur(*t.once_per) << "\n";
    } else {
      o << "# once_per: none\n";
    }
    return;
  }
  if (t.health_command.empty()) {
    o << "# health_command: none\n";
  } else {
    render_command(o, "health_command", t.health_command, t.health_command_is_shell);
    o << "health_interval = " << dur(t.health_interval) << "\n";
    o << "health_timeout = " << dur(t.health_timeout) << "\n";
    o << "health_fall = " << t.health_fall << "\n";
  }
}

void render_task(std::ostream& o, const Config& config) {
  const TaskConfig& t = config.task;
  o << "[task]\n";
  if (t.command.empty()) {
    o << "# command: none in the file (given after -- on the command line)\n";
  } else {
    render_command(o, "command", t.command, t.command_is_shell);
  }
  o << "mode = " << quote(to_string(t.mode)) << "\n";
  o << "kill_signal = " << quote(signal_name(t.kill_signal)) << "\n";
  o << "kill_grace = " << dur(t.kill_grace) << "\n";
  if (t.mode == Mode::kSupervise) {
    o << "restart = " << quote(to_string(t.restart)) << "\n";
    o << "restart_delay = " << dur(t.restart_delay) << "\n";
    o << "restart_limit = " << t.restart_limit << "\n";
    o << "restart_window = " << dur(t.restart_window) << "\n";
    if (t.step_down_hold) {
      o << "step_down_hold = " << dur(*t.step_down_hold) << "\n";
    } else {
      o << "# step_down_hold = " << dur(effective_step_down_hold(config)) << "  (2 x expire)\n";
    }
    o << "# timeout, wait_timeout, once_per: oneshot only\n";
  } else {
    if (t.timeout) {
      o << "timeout = " << dur(*t.timeout) << "\n";
    } else {
      o << "# timeout: none\n";
    }
    if (t.wait_timeout) {
      o << "wait_timeout = " << dur(*t.wait_timeout) << "\n";
    } else {
      o << "# wait_timeout: none (the wait ends as monitor_try_all, retries_count and unreachable_timeout say)\n";
    }
    o << "# restart, restart_delay, restart_limit, restart_window, step_down_hold, health_command: supervise only\n";
  }
  render_task_env(o, t);
  render_task_features(o, t);
}

void render_log(std::ostream& o, const LogConfig& l) {
  o << "[log]\n";
  o << "level = " << quote(to_string(l.level)) << "\n";
  o << "format = " << quote(to_string(l.format)) << "\n";
}

void render_metrics(std::ostream& o, const MetricsConfig& m) {
  o << "[metrics]\n";
  if (m.listen.empty()) {
    o << "# listen: none\n";
  } else {
    o << "listen = " << quote(m.listen) << "\n";
  }
  if (m.textfile.empty()) {
    o << "# textfile: none\n";
  } else {
    o << "textfile = " << quote(m.textfile) << "\n";
  }
}

}  // namespace

std::string render_effective(const Config& config) {
  std::ostringstream o;
  o << "# Effective configuration";
  if (!config.source.empty()) o << " of " << comment_safe(config.source);
  o << " (defaults filled in, secrets masked)\n\n";
  render_redis(o, config.redis, config.task.mode);
  o << "\n";
  render_backoff(o, config.backoff);
  o << "\n";
  render_task(o, config);
  o << "\n";
  render_log(o, config.log);
  o << "\n";
  render_metrics(o, config.metrics);
  return o.str();
}

}  // namespace redisgo::config
