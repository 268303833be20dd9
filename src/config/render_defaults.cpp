// The default of every key (`validate --defaults`): the one place the documented defaults
// are read from. The values come from the config structs' own initialisers and the rules of
// config.h, never from a copy, so that what this prints is what the loader applies.
//
// The form is stable (redisgo_task(1), validate): section headers, then one line per key,
//   key = value                        the default;
//   key = value  # default: RULE       a default derived from other keys, shown at their defaults;
//   # key: TEXT                        no default value: TEXT says what leaving it out means.
#include <ostream>
#include <sstream>

#include "config/config.h"
#include "config/detail.h"
#include "util/duration.h"

namespace redisgo::config {

namespace {

using detail::dur;
using detail::format_double;
using detail::quote;

const char* boolean(bool b) { return b ? "true" : "false"; }

void line(std::ostream& o, const char* key, const std::string& value) { o << key << " = " << value << "\n"; }
void derived(std::ostream& o, const char* key, const std::string& value, const char* rule) {
  o << key << " = " << value << "  # default: " << rule << "\n";
}
void none(std::ostream& o, const char* key, const char* text) { o << "# " << key << ": " << text << "\n"; }

void redis_defaults(std::ostream& o) {
  const RedisConfig r;
  o << "[redis]\n";
  none(o, "host", "none (exactly one of host, nodes, sentinels, cluster_nodes is required)");
  none(o, "nodes", "none");
  none(o, "sentinels", "none");
  none(o, "sentinel_master", "none (required with sentinels)");
  none(o, "sentinel_username", "none");
  none(o, "sentinel_password", "none (no AUTH to the sentinels)");
  none(o, "sentinel_password_env", "none");
  none(o, "sentinel_password_file", "none");
  none(o, "sentinel_password_credential", "none");
  line(o, "sentinel_wait_replicas", std::to_string(r.sentinel_wait_replicas));
  none(o, "cluster_nodes", "none");
  none(o, "key", "none (required)");
  line(o, "monitor_try_all", boolean(r.monitor_try_all));
  line(o, "retries_count", std::to_string(r.retries_count));
  line(o, "expire", dur(r.expire));
  // Keep the rule's text in step with default_cron().
  derived(o, "cron", dur(default_cron(r.expire)), "expire / 5");
  none(o, "value", "the host name");
  none(o, "password", "none (no AUTH)");
  none(o, "password_env", "none");
  none(o, "password_file", "none");
  none(o, "password_credential", "none");
  none(o, "username", "none");
  line(o, "db", std::to_string(r.db));
  line(o, "connect_timeout", dur(r.connect_timeout));
  line(o, "io_timeout", dur(r.io_timeout));
  line(o, "unreachable_timeout", dur(r.unreachable_timeout));
  line(o, "drift_factor", format_double(r.drift_factor));
  line(o, "drift_fixed", dur(r.drift_fixed));
  line(o, "fair", boolean(r.fair));
  line(o, "restart_guard", boolean(r.restart_guard));
  line(o, "tls", boolean(r.tls.enabled));
  none(o, "tls_ca_file", "the system trust store");
  none(o, "tls_cert_file", "none");
  none(o, "tls_key_file", "none");
  none(o, "tls_server_name", "each node's host");
  line(o, "tls_skip_verify", boolean(r.tls.skip_verify));
}

void backoff_defaults(std::ostream& o) {
  const BackoffConfig b;
  o << "[backoff]\n";
  line(o, "strategy", quote(to_string(b.strategy)));
  line(o, "initial", dur(b.initial));
  line(o, "max", dur(b.max));
  line(o, "factor", format_double(b.factor));
  line(o, "jitter", quote(to_string(b.jitter)));
  none(o, "intervals", "none (required by strategy = \"simple\")");
}

void task_defaults(std::ostream& o) {
  const Config c;
  const TaskConfig& t = c.task;
  o << "[task]\n";
  none(o, "command", "none (or given after -- on the command line)");
  line(o, "mode", quote(to_string(t.mode)));
  line(o, "restart", quote(to_string(t.restart)));
  line(o, "restart_delay", dur(t.restart_delay));
  line(o, "kill_signal", quote(signal_name(t.kill_signal)));
  line(o, "kill_grace", dur(t.kill_grace));
  none(o, "timeout", "none");
  none(o, "wait_timeout", "none (wait as monitor_try_all and retries_count say)");
  none(o, "workdir", "the daemon's");
  none(o, "env", "none");
  line(o, "restart_limit", std::to_string(t.restart_limit));
  line(o, "restart_window", dur(t.restart_window));
  // Keep the rule's text in step with effective_step_down_hold().
  derived(o, "step_down_hold", dur(effective_step_down_hold(c)), "2 x expire");
  line(o, "limit", std::to_string(t.limit));
  none(o, "once_per", "none");
  none(o, "health_command", "none");
  line(o, "health_interval", dur(t.health_interval));
  line(o, "health_timeout", dur(t.health_timeout));
  line(o, "health_fall", std::to_string(t.health_fall));
}

void log_and_metrics_defaults(std::ostream& o) {
  const LogConfig l;
  o << "[log]\n";
  line(o, "level", quote(to_string(l.level)));
  line(o, "format", quote(to_string(l.format)));
  o << "\n[metrics]\n";
  none(o, "listen", "none");
  none(o, "textfile", "none");
}

}  // namespace

std::string render_defaults() {
  std::ostringstream o;
  o << "# The default of every configuration key (redisgo_task validate --defaults):\n"
       "#   key = value                   the default\n"
       "#   key = value  # default: RULE  derived from other keys; the value is the rule's at their defaults\n"
       "#   # key: TEXT                   no default value; TEXT says what leaving the key out means\n\n";
  redis_defaults(o);
  o << "\n";
  backoff_defaults(o);
  o << "\n";
  task_defaults(o);
  o << "\n";
  log_and_metrics_defaults(o);
  return o.str();
}

}  // namespace redisgo::config
