// The module's public functions (config.h): loading a file or a text, placing a
// diagnostic, and the arithmetic the daemon shares with the cross-checks; and the schema,
// every section and key a file may have. The loader itself is in loader.h.
#include "config/config.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include <toml++/toml.h>

#include "config/detail.h"
#include "config/loader.h"
#include "util/error.h"
#include "util/text.h"
#include "util/unique_fd.h"

namespace redisgo::config {

bool cluster_safe_key(const std::string& key) {
  if (auto open = key.find('{'); open != std::string::npos) {
    auto close = key.find('}', open + 1);
    if (close != std::string::npos && close > open + 1) return true;
  }
  return key.find('}') == std::string::npos;
}

std::optional<std::string> control_character_found(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      return "\"" + shown_text(text, 80) + "\" (" + escaped_text(text.substr(i, 1)) + " at byte " +
             std::to_string(i + 1) + ")";
    }
  }
  return std::nullopt;
}

namespace detail {

// The reference test (tests/integration/ops_install_test.cpp) reads this table from this
// file to check that the manual documents every key.
const std::vector<SectionKeys>& known_keys() {
  static const std::vector<SectionKeys> kKnown = {
      {"redis",
       {"host", "nodes", "key", "monitor_try_all", "retries_count", "expire", "cron", "value",
        "password", "password_env", "password_file", "password_credential", "username", "db", "connect_timeout",
        "io_timeout", "unreachable_timeout", "drift_factor", "drift_fixed", "tls", "tls_ca_file", "tls_cert_file", "tls_key_file",
        "tls_server_name", "tls_skip_verify", "sentinels", "sentinel_master", "sentinel_username",
        "sentinel_password", "sentinel_password_env", "sentinel_password_file", "sentinel_password_credential",
        "sentinel_wait_replicas",
        "cluster_nodes", "restart_guard", "fair"}},
      {"backoff", {"strategy", "initial", "max", "factor", "jitter", "intervals"}},
      {"task",
       {"command", "mode", "restart", "restart_delay", "kill_signal", "kill_grace", "timeout",
        "wait_timeout", "workdir", "env", "restart_limit", "restart_window", "step_down_hold", "limit", "once_per",
        "health_command", "health_interval", "health_timeout", "health_fall"}},
      {"log", {"level", "format"}},
      {"metrics", {"listen", "textfile"}},
  };
  return kKnown;
}

}  // namespace detail

std::string Diagnostic::str() const {
  std::string out = file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  if (!out.empty()) out += ": ";
  if (!key.empty()) out += key + ": ";
  out += message;
  return out;
}

void scrub_secret_environment(const Config& config) {
  const std::pair<PasswordSource, const std::string*> secrets[] = {
      {config.redis.password_source, &config.redis.password_origin},
      {config.redis.sentinel_password_source, &config.redis.sentinel_password_origin}};
  for (const auto& [source, origin] : secrets) {
    if (source != PasswordSource::kEnv || origin->empty()) continue;
    const std::string prefix = *origin + "=";
    // The bytes themselves: /proc/<pid>/environ shows the block the process started with,
    // whatever unsetenv does to the array, and a forked keeper copies it.
    for (char** e = environ; e && *e; ++e) {
      if (std::strncmp(*e, prefix.c_str(), prefix.size()) == 0) {
        char* value = *e + prefix.size();
        std::memset(value, 0, std::strlen(value));
      }
    }
    ::unsetenv(origin->c_str());
  }
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

LoadResult load_string(const std::string& text, const std::string& source, const EnvLookup& env, Scope scope) {
  return detail::Loader(source, env, scope).run(text);
}

namespace {
/// A config is a few kilobytes; anything past this is not one (it is read whole).
constexpr std::size_t kMaxConfigBytes = std::size_t{4} << 20;
}  // namespace

LoadResult load_file(const std::string& path, const EnvLookup& env, Scope scope) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  std::string text;
  int err = 0;
  if (!fd) {
    err = errno;
  } else {
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        err = errno;
        break;
      }
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      if (text.size() > kMaxConfigBytes) break;
    }
  }
  if (err != 0) {
    LoadResult r;
    r.errors.push_back({path, 0, 0, "", errno_message("cannot read the config file", err)});
    return r;
  }
  if (text.size() > kMaxConfigBytes) {
    // /dev/zero, a log file named by mistake: refused before it costs the host its memory.
    LoadResult r;
    r.errors.push_back({path, 0, 0, "", "the config file is larger than " + std::to_string(kMaxConfigBytes >> 20) +
                                            " MiB: is this the right file?"});
    return r;
  }
  return load_string(text, path, env, scope);
}

Diagnostic diagnostic_at(const Config& config, const std::string& dotted_key, std::string message) {
  Diagnostic d{config.source, 0, 0, dotted_key, std::move(message)};
  std::ifstream in(config.source, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return d;
  if (detail::toml_unsafe_character(text)) return d;  // changed since it was loaded: no line
  try {
    toml::table root = toml::parse(text, config.source);
    if (const toml::node* n = root.at_path(dotted_key).node()) {
      const detail::Loc at = detail::loc_of(*n);
      d.line = at.line;
      d.column = at.column;
    }
  } catch (const std::exception&) {
  }
  return d;
}

Millis effective_step_down_hold(const Config& config) {
  return config.task.step_down_hold.value_or(config.redis.expire * 2);
}

Millis kill_margin(Millis expire) { return std::clamp(expire / 20, Millis(5), Millis(100)); }

}  // namespace redisgo::config
