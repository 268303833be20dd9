// Strings and the generic key commands, with Redis 7.0's semantics and error texts.

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "sim/state.h"

namespace redisgo::sim {

std::optional<std::int64_t> parse_int(const std::string& s) {
  // Redis's string2ll: optional '-', digits, no leading zeros or '+', no spaces, in range.
  if (s.empty() || s.size() > 20) return std::nullopt;
  std::size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative) i = 1;
  if (i >= s.size()) return std::nullopt;
  if (s[i] == '0' && s.size() > i + 1) return std::nullopt;
  unsigned long long v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    const unsigned d = static_cast<unsigned>(s[i] - '0');
    if (v > (ULLONG_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  if (negative) {
    if (v > static_cast<unsigned long long>(LLONG_MAX) + 1) return std::nullopt;
    return v == static_cast<unsigned long long>(LLONG_MAX) + 1 ? LLONG_MIN : -static_cast<std::int64_t>(v);
  }
  if (v > static_cast<unsigned long long>(LLONG_MAX)) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

std::optional<double> parse_score(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isnan(d) || (errno == ERANGE && !std::isinf(d))) return std::nullopt;
  return d;
}

std::string format_double(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

namespace {

using State = Node::State;

Resp cmd_get(State& s, Client&, const Argv& a) {
  Value* v = s.keys.find(a[1], s.now_ms());
  if (!v) return Resp::nil();
  if (v->type != Type::kString) return Resp::error(errors::kWrongType);
  return Resp::bulk(v->str);
}

Resp expire_error(const std::string& command) {
  return Resp::error("ERR invalid expire time in '" + command + "' command");
}

Resp cmd_set(State& s, Client&, const Argv& a) {
  bool nx = false, xx = false, get = false, keepttl = false;
  std::string unit;  // "EX", "PX", "EXAT", "PXAT"
  std::string when;
  for (std::size_t i = 3; i < a.size(); ++i) {
    const std::string o = lower(a[i]);
    const bool next = i + 1 < a.size();
    if (o == "nx" && !xx) {
      nx = true;
    } else if (o == "xx" && !nx) {
      xx = true;
    } else if (o == "get") {
      get = true;
    } else if (o == "keepttl" && unit.empty()) {
      keepttl = true;
    } else if ((o == "ex" || o == "px" || o == "exat" || o == "pxat") && unit.empty() && !keepttl && next) {
      unit = o;
      when = a[++i];
    } else {
      return Resp::error(errors::kSyntax);
    }
  }
  const std::int64_t now = s.now_ms();
  std::int64_t expire = -1;
  if (!unit.empty()) {
    auto n = parse_int(when);
    if (!n) return Resp::error(errors::kNotInteger);
    const bool seconds = unit == "ex" || unit == "exat";
    if (*n <= 0 || (seconds && *n > LLONG_MAX / 1000)) return expire_error("set");
    std::int64_t ms = seconds ? *n * 1000 : *n;
    if (unit == "ex" || unit == "px") {
      if (ms > LLONG_MAX - now) return expire_error("set");
      ms += now;
    }
    expire = ms;
  }
  Value* old = s.keys.find(a[1], now);
  Resp reply = Resp::ok();
  if (get) {
    if (old && old->type != Type::kString) return Resp::error(errors::kWrongType);
    reply = old ? Resp::bulk(old->str) : Resp::nil();
  }
  if ((nx && old) || (xx && !old)) return get ? reply : Resp::nil();
  const std::int64_t kept = old && keepttl ? old->expire_ms : -1;
  Value& v = s.keys.create(a[1], Type::kString);
  v.str = a[2];
  v.expire_ms = keepttl ? kept : expire;
  if (v.expire_ms >= 0 && v.expire_ms <= now && !keepttl) s.keys.erase(a[1], now);  // PXAT in the past
  return reply;
}

Resp cmd_mget(State& s, Client&, const Argv& a) {
  Resp out = Resp::array();
  for (std::size_t i = 1; i < a.size(); ++i) {
    Value* v = s.keys.find(a[i], s.now_ms());
    out.items.push_back(v && v->type == Type::kString ? Resp::bulk(v->str) : Resp::nil());
  }
  return out;
}

Resp cmd_del(State& s, Client&, const Argv& a) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < a.size(); ++i) n += s.keys.erase(a[i], s.now_ms()) ? 1 : 0;
  return Resp::num(n);
}

Resp cmd_exists(State& s, Client&, const Argv& a) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < a.size(); ++i) n += s.keys.find(a[i], s.now_ms()) ? 1 : 0;
  return Resp::num(n);
}

Resp cmd_type(State& s, Client&, const Argv& a) {
  Value* v = s.keys.find(a[1], s.now_ms());
  return Resp::status(v ? type_name(v->type) : "none");
}

/// EXPIRE / PEXPIRE [NX|XX|GT|LT] (Redis 7.0): a time at or before now deletes the key.
Resp expire_generic(State& s, const Argv& a, bool seconds) {
  const std::string name = seconds ? "expire" : "pexpire";
  bool nx = false, xx = false, gt = false, lt = false;
  for (std::size_t i = 3; i < a.size(); ++i) {
    const std::string o = lower(a[i]);
    if (o == "nx") nx = true;
    else if (o == "xx") xx = true;
    else if (o == "gt") gt = true;
    else if (o == "lt") lt = true;
    else return Resp::error("ERR Unsupported option " + a[i]);
  }
  if (nx && (xx || gt || lt)) return Resp::error("ERR NX and XX, GT or LT options at the same time are not compatible");
  if (gt && lt) return Resp::error("ERR GT and LT options at the same time are not compatible");
  auto n = parse_int(a[2]);
  if (!n) return Resp::error(errors::kNotInteger);
  const std::int64_t now = s.now_ms();
  std::int64_t when = *n;
  if (seconds) {
    if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000) return expire_error(name);
    when *= 1000;
  }
  if (when > LLONG_MAX - now) return expire_error(name);
  when += now;
  Value* v = s.keys.find(a[1], now);
  if (!v) return Resp::num(0);
  const std::int64_t current = v->expire_ms;
  if ((nx && current >= 0) || (xx && current < 0)) return Resp::num(0);
  if (gt && (current < 0 || when <= current)) return Resp::num(0);
  if (lt && current >= 0 && when >= current) return Resp::num(0);
  if (when <= now) {
    s.keys.erase(a[1], now);
    return Resp::num(1);
  }
  v->expire_ms = when;
  return Resp::num(1);
}

Resp cmd_pexpire(State& s, Client&, const Argv& a) { return expire_generic(s, a, false); }
Resp cmd_expire(State& s, Client&, const Argv& a) { return expire_generic(s, a, true); }

Resp ttl_generic(State& s, const Argv& a, bool ms) {
  const std::int64_t now = s.now_ms();
  Value* v = s.keys.find(a[1], now);
  if (!v) return Resp::num(-2);
  if (v->expire_ms < 0) return Resp::num(-1);
  std::int64_t left = v->expire_ms - now;
  if (left < 0) left = 0;
  return Resp::num(ms ? left : (left + 500) / 1000);
}

Resp cmd_pttl(State& s, Client&, const Argv& a) { return ttl_generic(s, a, true); }
Resp cmd_ttl(State& s, Client&, const Argv& a) { return ttl_generic(s, a, false); }

Resp cmd_persist(State& s, Client&, const Argv& a) {
  Value* v = s.keys.find(a[1], s.now_ms());
  if (!v || v->expire_ms < 0) return Resp::num(0);
  v->expire_ms = -1;
  return Resp::num(1);
}

Resp cmd_keys(State& s, Client&, const Argv& a) {
  Resp out = Resp::array();
  for (const auto& k : s.keys.keys(s.now_ms())) {
    if (glob_match(a[1], k)) out.items.push_back(Resp::bulk(k));
  }
  return out;
}

/// SCAN answers every matching key in one call, with cursor 0: a valid SCAN reply (a cursor
/// may return any number of keys), and deterministic.
Resp cmd_scan(State& s, Client&, const Argv& a) {
  if (!parse_int(a[1]) || a[1][0] == '-') return Resp::error("ERR invalid cursor");
  std::string match = "*", type;
  for (std::size_t i = 2; i < a.size(); i += 2) {
    const std::string o = lower(a[i]);
    if (i + 1 >= a.size()) return Resp::error(errors::kSyntax);
    if (o == "match") {
      match = a[i + 1];
    } else if (o == "count") {
      auto n = parse_int(a[i + 1]);
      if (!n) return Resp::error(errors::kNotInteger);
      if (*n < 1) return Resp::error(errors::kSyntax);
    } else if (o == "type") {
      type = a[i + 1];
    } else {
      return Resp::error(errors::kSyntax);
    }
  }
  Resp keys = Resp::array();
  for (const auto& k : s.keys.keys(s.now_ms())) {
    if (!glob_match(match, k)) continue;
    if (!type.empty() && lower(type) != type_name(s.keys.find(k, s.now_ms())->type)) continue;
    keys.items.push_back(Resp::bulk(k));
  }
  return Resp::array({Resp::bulk("0"), keys});
}

Resp cmd_dbsize(State& s, Client&, const Argv&) { return Resp::num(static_cast<std::int64_t>(s.keys.size(s.now_ms()))); }

Resp cmd_flushall(State& s, Client&, const Argv& a) {
  if (a.size() > 2 || (a.size() == 2 && lower(a[1]) != "async" && lower(a[1]) != "sync")) {
    return Resp::error(errors::kSyntax);
  }
  s.keys.clear();
  return Resp::ok();
}

}  // namespace

void add_key_commands(std::map<std::string, Command>& t) {
  t["get"] = {"get", 2, 0, cmd_get};
  t["set"] = {"set", -3, 0, cmd_set};
  t["mget"] = {"mget", -2, 0, cmd_mget};
  t["del"] = {"del", -2, 0, cmd_del};
  t["unlink"] = {"unlink", -2, 0, cmd_del};
  t["exists"] = {"exists", -2, 0, cmd_exists};
  t["type"] = {"type", 2, 0, cmd_type};
  t["pexpire"] = {"pexpire", -3, 0, cmd_pexpire};
  t["expire"] = {"expire", -3, 0, cmd_expire};
  t["pttl"] = {"pttl", 2, 0, cmd_pttl};
  t["ttl"] = {"ttl", 2, 0, cmd_ttl};
  t["persist"] = {"persist", 2, 0, cmd_persist};
  t["keys"] = {"keys", 2, 0, cmd_keys};
  t["scan"] = {"scan", -2, 0, cmd_scan};
  t["dbsize"] = {"dbsize", 1, 0, cmd_dbsize};
  t["flushall"] = {"flushall", -1, 0, cmd_flushall};
  t["flushdb"] = {"flushdb", -1, 0, cmd_flushall};
}

}  // namespace redisgo::sim
