// The config loader (loader.h): [task], what runs and how, and the sections beside it:
// [backoff] (the wait between attempts to take the lease), [metrics] and [log].
#include "config/loader.h"

#include <algorithm>
#include <cctype>
#include <climits>

#include "util/duration.h"

namespace redisgo::config::detail {

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
  if (auto n = find(sec, "task", "kill_signal")) load_kill_signal(*n, t);
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
  if (auto n = find(sec, "task", "wait_timeout")) {
    if (auto d = as_duration(*n, "task.wait_timeout", Zero::kAllowed)) t.wait_timeout = *d;
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
  load_health(sec, t);
  if (auto n = find(sec, "task", "workdir")) {
    if (auto s = as_string(*n, "task.workdir", "a directory path")) t.workdir = *s;
  }
  if (auto n = find(sec, "task", "env")) load_task_env(*n, t.env);
}

void Loader::load_kill_signal(const toml::node& n, TaskConfig& t) {
  const std::string expected = "a signal name such as \"SIGTERM\" or a number from 1 to 31";
  if (n.is_string() || n.is_integer()) {
    std::string text = n.is_string() ? n.as_string()->get() : std::to_string(n.as_integer()->get());
    if (auto sig = parse_signal(text)) {
      t.kill_signal = *sig;
    } else {
      error(loc_of(n), "task.kill_signal", "expected " + expected + ", found " + value_text(n));
    }
  } else {
    type_error(n, "task.kill_signal", expected);
  }
}

void Loader::load_health(const toml::table* sec, TaskConfig& t) {
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
}

void Loader::load_task_env(const toml::node& n, std::map<std::string, std::string>& env) {
  if (auto tbl = n.as_table()) {
    for (auto&& [k, v] : *tbl) {
      std::string name(k.str());
      std::string key = "task.env." + name;
      if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos) {
        error(loc_of(k.source()), key, "expected an environment variable name (no '=' and not empty), found " + quote(name));
        continue;
      }
      if (auto s = as_string(v, key, "a string value", true)) env[name] = *s;
    }
  } else {
    type_error(n, "task.env", "a table of strings, such as { NAME = \"value\" }");
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

}  // namespace redisgo::config::detail
