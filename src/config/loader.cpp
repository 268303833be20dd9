// The config loader (loader.h): the run (pre-scan, parse, the sections, the
// cross-checks), its diagnostics, the command's scope, and unknown keys.
#include "config/loader.h"

#include <algorithm>

namespace redisgo::config::detail {

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
  ignore_other_mode(c);
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

}  // namespace redisgo::config::detail
