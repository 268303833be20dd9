#pragma once
/// Shared by the files of the config module only (not part of its interface), like
/// detail.h: the Loader behind load_string() and load_file(), which reads one TOML text
/// into a Config and collects every error and warning on the way. config.h is the
/// module's interface.
///
/// Its members are defined by concept: the run, the diagnostics and the unknown keys in
/// loader.cpp, lookups and typed conversions in loader_conversions.cpp, the sections in
/// loader_redis.cpp ([redis]) and loader_task.cpp ([task], [backoff], [metrics], [log]),
/// and the relations between keys in loader_cross_checks.cpp. The schema (known_keys())
/// is in config.cpp.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "config/config.h"
#include "config/detail.h"

namespace redisgo::config::detail {

inline Loc loc_of(const toml::source_region& r) {
  return {static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
}
inline Loc loc_of(const toml::node& n) { return loc_of(n.source()); }

inline bool before(Loc a, Loc b) { return a.line != b.line ? a.line < b.line : a.column < b.column; }

const char* type_name(toml::node_type t);
/// The value as it appeared, for "found ..." in messages. Never used for secrets.
std::string value_text(const toml::node& n);

/// The keys one section may hold.
struct SectionKeys {
  std::string_view section;
  std::vector<std::string_view> keys;
};
/// Every section and key the file may have (config.cpp).
const std::vector<SectionKeys>& known_keys();

class Loader {
 public:
  Loader(std::string file, const EnvLookup& env, Scope scope) : file_(std::move(file)), env_(env), scope_(scope) {}

  LoadResult run(std::string_view text);

  void error(Loc at, std::string key, std::string message);
  void warn(Loc at, std::string key, std::string message);

 private:
  /// A problem of a section the command does not use (Scope::kRedis: [task], [backoff]).
  bool out_of_scope(const Diagnostic& d) const;
  LoadResult finish(std::optional<Config> c);

  // ---- unknown keys -------------------------------------------------------------------

  /// Unknown keys are errors (redisgo_task(1), CONFIGURATION): a misspelt `expire` or `tls` must not
  /// fall back silently to a default. Keys of the manual's features that this version does not
  /// have yet are refused by name: silently running without TLS would send the password
  /// in clear.
  void check_unknown(const toml::table& root);
  void check_unknown_in(const toml::table& t, const SectionKeys& known);

  // ---- lookups and conversions --------------------------------------------------------

  /// The table of a section, or nullptr when absent or not a table (an error).
  const toml::table* section(const toml::table& root, std::string_view name);

  Loc section_loc(std::string_view name) const {
    auto it = section_locs_.find(std::string(name));
    return it == section_locs_.end() ? Loc{} : it->second;
  }

  /// Finds section.name, remembering where it is for later cross-checks.
  const toml::node* find(const toml::table* sec, std::string_view section, std::string_view name);

  bool given(const std::string& key) const { return locs_.count(key) != 0; }
  Loc where(const std::string& key) const {
    auto it = locs_.find(key);
    return it == locs_.end() ? Loc{} : it->second;
  }
  bool ok(std::initializer_list<const char*> keys) const {
    for (auto k : keys) {
      if (bad_.count(k)) return false;
    }
    return true;
  }

  void type_error(const toml::node& n, const std::string& key, const std::string& expected);

  std::optional<std::string> as_string(const toml::node& n, const std::string& key, const std::string& expected,
                                       bool allow_empty = false);

  enum class Zero { kAllowed, kRejected };

  std::optional<Millis> as_duration(const toml::node& n, const std::string& key, Zero zero);

  /// An integer in [lo, hi]; a float with no fraction (4.0) counts as that integer, since
  /// some TOML writers emit every number as a float.
  std::optional<std::int64_t> as_integer(const toml::node& n, const std::string& key, std::int64_t lo,
                                         std::int64_t hi);

  std::optional<double> as_number(const toml::node& n, const std::string& key, const std::string& expected);

  std::optional<bool> as_bool(const toml::node& n, const std::string& key);

  template <class E, std::size_t N>
  std::optional<E> as_enum(const toml::node& n, const std::string& key, const EnumName<E> (&names)[N]) {
    std::string expected = "one of";
    for (std::size_t i = 0; i < N; ++i) expected += std::string(i ? ", " : " ") + "\"" + names[i].name + "\"";
    auto s = n.as_string();
    if (!s) {
      type_error(n, key, expected);
      return std::nullopt;
    }
    for (const auto& e : names) {
      if (s->get() == e.name) return e.value;
    }
    error(loc_of(n), key, "expected " + expected + ", found " + value_text(n));
    return std::nullopt;
  }

  // Convenience: look up and convert in one go; absent or invalid leaves `out` alone.
  void get_duration(const toml::table* sec, std::string_view section, std::string_view name, Millis& out,
                    Zero zero = Zero::kRejected);
  template <class E, std::size_t N>
  void get_enum(const toml::table* sec, std::string_view section, std::string_view name, E& out,
                const EnumName<E> (&names)[N]) {
    if (auto n = find(sec, section, name)) {
      if (auto e = as_enum(*n, dotted(section, name), names)) out = *e;
    }
  }
  static std::string dotted(std::string_view section, std::string_view name) {
    return std::string(section) + "." + std::string(name);
  }

  // ---- sections -----------------------------------------------------------------------

  /// An array of distinct addresses (nodes, sentinels, cluster_nodes); nullopt if bad.
  std::optional<std::vector<std::string>> address_list(const toml::node& list, const std::string& name,
                                                       bool tcp_only);
  std::optional<std::string> address(const toml::node& n, const std::string& key, bool tcp_only);
  void load_nodes(const toml::table* sec, RedisConfig& r);
  /// `<base>`, `<base>_env`, `<base>_file` or `<base>_credential` (base "password" or
  /// "sentinel_password").
  void load_password(const toml::table* sec, const std::string& base, std::string& secret, PasswordSource& source,
                     std::string& origin);
  /// The password written in the config file itself (`<base>`), warned about.
  void load_inline_password(const toml::node& n, const std::string& key, const std::string& base,
                            std::string& secret, PasswordSource& source);
  /// The password in the environment variable that `<base>_env` names.
  void load_env_password(const toml::node& n, const std::string& key, std::string& secret, PasswordSource& source,
                         std::string& origin);
  /// The password in the file that `<base>_file` names.
  void load_file_password(const toml::node& n, const std::string& key, std::string& secret, PasswordSource& source,
                          std::string& origin);
  /// The password in the systemd credential that `<base>_credential` names (credential_path()).
  void load_credential_password(const toml::node& n, const std::string& key, std::string& secret,
                                PasswordSource& source, std::string& origin);
  void load_sentinel(const toml::table* sec, RedisConfig& r);
  /// A file that must be a readable regular file now (TLS material).
  void check_readable_file(const toml::node& n, const std::string& key, std::string& out, bool secret);
  void load_tls(const toml::table* sec, TlsConfig& t);
  /// [redis] value, and REDISGO_TASK_HOLDER_PREFIX over it: the head of this host's holder ids.
  void load_holder_prefix(const toml::table* sec, RedisConfig& r);
  void load_redis(const toml::table& root, RedisConfig& r);

  void load_backoff(const toml::table& root, BackoffConfig& b);
  /// A command key (task.command, task.health_command): an argv, or a string run by sh -c.
  void load_command(const toml::node& n, const std::string& name, std::vector<std::string>& command, bool& is_shell);
  void load_task(const toml::table& root, TaskConfig& t);
  /// task.kill_signal: a signal name or number.
  void load_kill_signal(const toml::node& n, TaskConfig& t);
  /// health_command and the keys that tune it.
  void load_health(const toml::table* sec, TaskConfig& t);
  /// task.env: the variables added to the child's environment.
  void load_task_env(const toml::node& n, std::map<std::string, std::string>& env);
  void load_metrics(const toml::table& root, MetricsConfig& m);
  void load_log(const toml::table& root, LogConfig& l);

  // ---- relations between keys ---------------------------------------------------------

  void cross_check(const Config& c);
  /// Keys of the other mode (restart in oneshot, once_per in supervise, ...): warned about
  /// and dropped, their defaults kept, so that nothing of them can act.
  void ignore_other_mode(Config& c);
  /// once_per, limit and the health check: what each needs.
  void cross_check_features(const Config& c);
  /// Keys that belong to one mode (TLS, Sentinel, Cluster) and what they need.
  void cross_check_modes(const RedisConfig& r);

  std::string file_;
  const EnvLookup& env_;
  Scope scope_;
  std::vector<Diagnostic> errors_;
  std::vector<Diagnostic> warnings_;
  std::set<std::string> bad_;                 ///< dotted keys with an error: cross-checks skip them
  std::map<std::string, Loc> locs_;           ///< dotted key -> where it was given
  std::map<std::string, Loc> section_locs_;   ///< section name -> its header
};

}  // namespace redisgo::config::detail
