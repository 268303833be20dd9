// The config loader (loader.h): relations between keys, checked once every section is
// read. A key with an error of its own is left out of them (Loader::ok()).
#include "config/loader.h"

#include <cstdint>
#include <string>

#include "util/duration.h"
#include "util/rounding.h"

namespace redisgo::config::detail {

namespace {

std::string shown(Millis d, bool from_file, const char* default_note) {
  return format_duration(d) + (from_file ? "" : std::string(" (") + default_note + ")");
}

}  // namespace

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
    Millis drift(ceil_to_int(static_cast<double>(r.expire.count()) * r.drift_factor) +
                 r.drift_fixed.count() + kill_margin(r.expire).count());
    Millis need = r.cron + c.task.kill_grace + drift;
    if (need >= r.expire) {
      std::string key = given("task.kill_grace") ? "task.kill_grace" : given("redis.cron") ? "redis.cron" : "redis.expire";
      error(where(key), key,
            "expected redis.cron + task.kill_grace + drift and kill margin < redis.expire, found " +
                shown(r.cron, given("redis.cron"), "expire/5") + " + " +
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
      !given("redis.password_file") && !given("redis.password_credential")) {
    error(where("redis.username"), "redis.username",
          "expected a password with the ACL user (password_credential, password_file, password_env or password), "
          "found none");
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
  cross_check_features(c);
}

void Loader::ignore_other_mode(Config& c) {
  // The mode decides. A key of the other mode is not an error: redisgo_task(1)'s example
  // (and the shipped one) give restart keys in a oneshot file, and switching `mode` must
  // not make the rest of a file invalid. Never silent either: the operator may have
  // expected it to act (a health check on a oneshot job, a limit on a service's runs).
  // Only `task` and `validate` read the whole file: status and handover drop the keys
  // without a word (once_per claims are not shown for a service). A key with an error of
  // its own is said once.
  if (bad_.count("task.mode")) return;
  TaskConfig& t = c.task;
  RedisConfig& r = c.redis;
  const TaskConfig task_default;
  const RedisConfig redis_default;
  const bool oneshot = t.mode == Mode::kOneshot;
  const std::string applies = std::string("applies to mode = \"") + (oneshot ? "supervise" : "oneshot") +
                              "\" only; ignored in " + to_string(t.mode) + " mode";
  auto drop = [&](const char* key, const char* why, auto reset) {
    if (!given(key) || bad_.count(key)) return;
    if (scope_ == Scope::kAll) warn(where(key), key, applies + " (" + why + ")");
    reset();
  };
  if (oneshot) {
    const char* ends = "a oneshot run ends when its child does";
    drop("task.restart", ends, [&] { t.restart = task_default.restart; });
    drop("task.restart_delay", ends, [&] { t.restart_delay = task_default.restart_delay; });
    drop("task.restart_limit", ends, [&] { t.restart_limit = task_default.restart_limit; });
    drop("task.restart_window", ends, [&] { t.restart_window = task_default.restart_window; });
    drop("task.step_down_hold", "a oneshot holder does not step down", [&] { t.step_down_hold.reset(); });
    const char* health = "a check of a service while it leads: there is no health check in oneshot";
    drop("task.health_command", health, [&] {
      t.health_command.clear();
      t.health_command_is_shell = false;
    });
    drop("task.health_interval", health, [&] { t.health_interval = task_default.health_interval; });
    drop("task.health_timeout", health, [&] { t.health_timeout = task_default.health_timeout; });
    drop("task.health_fall", health, [&] { t.health_fall = task_default.health_fall; });
  } else {
    drop("task.timeout", "a service runs until it is stopped", [&] { t.timeout.reset(); });
    // Refused, not dropped like the keys above: a bound on the wait that did not act would
    // leave a service waiting forever where its file says it gives up.
    if (scope_ == Scope::kAll && given("task.wait_timeout") && !bad_.count("task.wait_timeout")) {
      error(where("task.wait_timeout"), "task.wait_timeout",
            "applies to mode = \"oneshot\" only: a supervise daemon contends until it is stopped; remove it, or "
            "run the job with mode = \"oneshot\"");
    }
    t.wait_timeout.reset();
    drop("task.once_per",
         "a run per slot is for jobs fired by cron or a timer; supervise runs the service whenever it leads",
         [&] { t.once_per.reset(); });
    const char* waits = "supervise contends until it is stopped";
    drop("redis.monitor_try_all", waits, [&] { r.monitor_try_all = redis_default.monitor_try_all; });
    drop("redis.retries_count", waits, [&] { r.retries_count = redis_default.retries_count; });
    drop("redis.unreachable_timeout", waits, [&] { r.unreachable_timeout = redis_default.unreachable_timeout; });
  }
}

void Loader::cross_check_features(const Config& c) {
  const TaskConfig& t = c.task;
  if (t.once_per && t.limit > 1 && !bad_.count("task.limit")) {
    error(where("task.once_per"), "task.once_per",
          "expected limit = 1 with once_per (one run per slot), found limit = " + std::to_string(t.limit));
  }
  // In oneshot the health keys were dropped (ignore_other_mode), and said so.
  if (!bad_.count("task.mode") && t.mode == Mode::kOneshot) return;
  const bool health_given = given("task.health_command");
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
                          "redis.sentinel_password_env", "redis.sentinel_password_file", "redis.sentinel_password_credential",
                          "redis.sentinel_wait_replicas"}) {
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
      !given("redis.sentinel_password_file") && !given("redis.sentinel_password_credential")) {
    error(where("redis.sentinel_username"), "redis.sentinel_username",
          "expected a password with the sentinels' ACL user (sentinel_password_credential, sentinel_password_file, "
          "sentinel_password_env or sentinel_password), found none");
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
