// The config loader (loader.h): lookups of keys, remembering where each was given, and
// typed conversions (string, duration, integer, number, boolean) with their messages.
#include "config/loader.h"

#include <climits>
#include <cmath>
#include <cstdint>

#include "util/duration.h"

namespace redisgo::config::detail {

namespace {

constexpr const char* kDurationExpected =
    "a duration (string such as \"5s\" or integer seconds)";

}  // namespace

const char* type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

std::string value_text(const toml::node& n) {
  if (auto s = n.as_string()) return quote(s->get());
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) return format_double(f->get());
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  return type_name(n.type());
}

const toml::table* Loader::section(const toml::table& root, std::string_view name) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  if (auto t = n->as_table()) {
    section_locs_[std::string(name)] = loc_of(*t);
    return t;
  }
  error(loc_of(*n), std::string(name),
        "expected a table (a [" + std::string(name) + "] section), found " + type_name(n->type()));
  return nullptr;
}

const toml::node* Loader::find(const toml::table* sec, std::string_view section, std::string_view name) {
  if (!sec) return nullptr;
  const toml::node* n = sec->get(name);
  if (n) locs_[std::string(section) + "." + std::string(name)] = loc_of(*n);
  return n;
}

void Loader::type_error(const toml::node& n, const std::string& key, const std::string& expected) {
  error(loc_of(n), key, "expected " + expected + ", found " + type_name(n.type()));
}

std::optional<std::string> Loader::as_string(const toml::node& n, const std::string& key, const std::string& expected,
                                             bool allow_empty) {
  auto s = n.as_string();
  if (!s) {
    type_error(n, key, expected);
    return std::nullopt;
  }
  if (!allow_empty && s->get().empty()) {
    error(loc_of(n), key, "expected " + expected + ", found an empty string");
    return std::nullopt;
  }
  if (s->get().find('\0') != std::string::npos) {
    error(loc_of(n), key, "expected " + expected + ", found a string containing a NUL character");
    return std::nullopt;
  }
  return s->get();
}

std::optional<Millis> Loader::as_duration(const toml::node& n, const std::string& key, Zero zero) {
  std::optional<Millis> d;
  if (auto s = n.as_string()) {
    std::string why;
    d = parse_duration(s->get(), &why);
    if (!d) {
      error(loc_of(n), key, std::string("expected ") + kDurationExpected + ", found " + value_text(n) + " (" + why + ")");
      return std::nullopt;
    }
  } else if (auto i = n.as_integer()) {
    std::int64_t secs = i->get();
    if (secs < 0) {
      error(loc_of(n), key, std::string("expected ") + (zero == Zero::kAllowed ? "a duration >= 0" : "a duration > 0") +
                                ", found " + value_text(n));
      return std::nullopt;
    }
    if (secs > INT64_MAX / 4000) {
      error(loc_of(n), key, std::string("expected ") + kDurationExpected + ", found " + value_text(n) + " (duration too large)");
      return std::nullopt;
    }
    d = Millis(secs * 1000);
  } else {
    type_error(n, key, kDurationExpected);
    return std::nullopt;
  }
  if (zero == Zero::kRejected && d->count() <= 0) {
    error(loc_of(n), key, "expected a duration > 0, found " + value_text(n));
    return std::nullopt;
  }
  if (key == "redis.expire" && *d > kMaxExpire) {  // the tighter bound, named at once
    error(loc_of(n), key, "expected a lease TTL of at most 1 day (24h), found " + format_duration(*d));
    return std::nullopt;
  }
  if (*d > kMaxDuration) {
    error(loc_of(n), key, "expected a duration of at most 1 year (8760h), found " + value_text(n));
    return std::nullopt;
  }
  return d;
}

std::optional<std::int64_t> Loader::as_integer(const toml::node& n, const std::string& key, std::int64_t lo,
                                               std::int64_t hi) {
  std::string range = hi == INT_MAX ? "an integer >= " + std::to_string(lo)
                                    : "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  std::int64_t v = 0;
  if (auto i = n.as_integer()) {
    v = i->get();
  } else if (auto f = n.as_floating_point()) {
    double d = f->get();
    // Whole: it survives the round trip through int64 (in range; no libm floor, which
    // -Os calls rather than inlines, and which alone would load libm.so.6).
    if (!std::isfinite(d) || d < -9e18 || d > 9e18 || static_cast<double>(static_cast<std::int64_t>(d)) != d) {
      error(loc_of(n), key, "expected " + range + ", found " + value_text(n) + " (not a whole number)");
      return std::nullopt;
    }
    v = static_cast<std::int64_t>(d);
  } else {
    type_error(n, key, range);
    return std::nullopt;
  }
  if (v < lo || v > hi) {
    error(loc_of(n), key, "expected " + range + ", found " + value_text(n));
    return std::nullopt;
  }
  return v;
}

std::optional<double> Loader::as_number(const toml::node& n, const std::string& key, const std::string& expected) {
  if (auto f = n.as_floating_point()) {
    if (!std::isfinite(f->get())) {
      error(loc_of(n), key, "expected " + expected + ", found " + value_text(n));
      return std::nullopt;
    }
    return f->get();
  }
  if (auto i = n.as_integer()) return static_cast<double>(i->get());
  type_error(n, key, expected);
  return std::nullopt;
}

std::optional<bool> Loader::as_bool(const toml::node& n, const std::string& key) {
  if (auto b = n.as_boolean()) return b->get();
  type_error(n, key, "a boolean (true or false)");
  return std::nullopt;
}

void Loader::get_duration(const toml::table* sec, std::string_view section, std::string_view name, Millis& out,
                          Zero zero) {
  if (auto n = find(sec, section, name)) {
    if (auto d = as_duration(*n, dotted(section, name), zero)) out = *d;
  }
}

}  // namespace redisgo::config::detail
