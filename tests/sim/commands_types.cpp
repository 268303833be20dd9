// Hashes, sorted sets and lists (the lists only so that a test can put a key of another type
// where a script expects its own), with Redis 7.0's semantics and error texts.

#include "sim/state.h"

namespace redisgo::sim {
namespace {

using State = Node::State;

/// The key's value when it is of `type`; nullptr when absent; *wrong when another type.
Value* typed(State& s, const std::string& key, Type type, bool* wrong) {
  Value* v = s.keys.find(key, s.now_ms());
  *wrong = v && v->type != type;
  return *wrong ? nullptr : v;
}

std::string* hash_field(Value& v, const std::string& field) {
  for (auto& [f, val] : v.hash) {
    if (f == field) return &val;
  }
  return nullptr;
}

Resp cmd_hset(State& s, Client&, const Argv& a) {
  if (a.size() % 2 != 0) return Resp::error("ERR wrong number of arguments for 'hset' command");
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kHash, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  if (!v) v = &s.keys.create(a[1], Type::kHash);
  std::int64_t added = 0;
  for (std::size_t i = 2; i + 1 < a.size(); i += 2) {
    if (std::string* f = hash_field(*v, a[i])) {
      *f = a[i + 1];
    } else {
      v->hash.emplace_back(a[i], a[i + 1]);
      ++added;
    }
  }
  return Resp::num(added);
}

Resp cmd_hmset(State& s, Client& c, const Argv& a) {
  if (a.size() % 2 != 0) return Resp::error("ERR wrong number of arguments for 'hmset' command");
  Resp r = cmd_hset(s, c, a);
  return r.is_error() ? r : Resp::ok();
}

Resp cmd_hget(State& s, Client&, const Argv& a) {
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kHash, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  const std::string* f = v ? hash_field(*v, a[2]) : nullptr;
  return f ? Resp::bulk(*f) : Resp::nil();
}

Resp cmd_hmget(State& s, Client&, const Argv& a) {
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kHash, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  Resp out = Resp::array();
  for (std::size_t i = 2; i < a.size(); ++i) {
    const std::string* f = v ? hash_field(*v, a[i]) : nullptr;
    out.items.push_back(f ? Resp::bulk(*f) : Resp::nil());
  }
  return out;
}

Resp cmd_hgetall(State& s, Client&, const Argv& a) {
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kHash, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  Resp out = Resp::array();
  if (v) {
    for (const auto& [f, val] : v->hash) {
      out.items.push_back(Resp::bulk(f));
      out.items.push_back(Resp::bulk(val));
    }
  }
  return out;
}

Resp cmd_hdel(State& s, Client&, const Argv& a) {
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kHash, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  if (!v) return Resp::num(0);
  std::int64_t n = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    for (auto it = v->hash.begin(); it != v->hash.end(); ++it) {
      if (it->first == a[i]) {
        v->hash.erase(it);
        ++n;
        break;
      }
    }
  }
  if (v->hash.empty()) s.keys.erase(a[1], s.now_ms());
  return Resp::num(n);
}

struct ZaddFlags {
  bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = false;
};

Resp cmd_zadd(State& s, Client&, const Argv& a) {
  ZaddFlags f;
  std::size_t i = 2;
  for (; i < a.size(); ++i) {
    const std::string o = lower(a[i]);
    if (o == "nx") f.nx = true;
    else if (o == "xx") f.xx = true;
    else if (o == "gt") f.gt = true;
    else if (o == "lt") f.lt = true;
    else if (o == "ch") f.ch = true;
    else if (o == "incr") f.incr = true;
    else break;
  }
  const std::size_t elements = a.size() - i;
  if (elements == 0 || elements % 2 != 0) return Resp::error(errors::kSyntax);
  if (f.nx && f.xx) return Resp::error("ERR XX and NX options at the same time are not compatible");
  if ((f.gt && f.nx) || (f.lt && f.nx) || (f.gt && f.lt)) {
    return Resp::error("ERR GT, LT, and/or NX options at the same time are not compatible");
  }
  if (f.incr && elements > 2) return Resp::error("ERR INCR option supports a single increment-element pair");
  std::vector<std::pair<double, std::string>> pairs;
  for (std::size_t j = i; j + 1 < a.size(); j += 2) {
    auto score = parse_score(a[j]);
    if (!score) return Resp::error(errors::kNotFloat);
    pairs.emplace_back(*score, a[j + 1]);
  }
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kZset, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  if (!v) {
    if (f.xx) return f.incr ? Resp::nil() : Resp::num(0);
    v = &s.keys.create(a[1], Type::kZset);
  }
  std::int64_t added = 0, changed = 0;
  Resp incr_reply = Resp::nil();
  for (auto [score, member] : pairs) {
    const auto current = v->zset.score(member);
    if (current) {
      if (f.nx) continue;
      if (f.incr) score += *current;
      if ((f.gt && score <= *current) || (f.lt && score >= *current)) continue;
      if (score != *current) {
        v->zset.put(member, score);
        ++changed;
      }
      incr_reply = Resp::bulk(format_double(score));
    } else {
      if (f.xx) continue;
      v->zset.put(member, score);
      ++added;
      incr_reply = Resp::bulk(format_double(score));
    }
  }
  if (v->zset.size() == 0) s.keys.erase(a[1], s.now_ms());
  if (f.incr) return incr_reply;
  return Resp::num(f.ch ? added + changed : added);
}

/// ZRANGE key start stop [REV] [WITHSCORES]: by rank only (BYSCORE and BYLEX are not modelled).
Resp cmd_zrange(State& s, Client&, const Argv& a) {
  bool rev = false, scores = false;
  for (std::size_t i = 4; i < a.size(); ++i) {
    const std::string o = lower(a[i]);
    if (o == "rev") rev = true;
    else if (o == "withscores") scores = true;
    else return Resp::error(errors::kSyntax);
  }
  auto start = parse_int(a[2]), stop = parse_int(a[3]);
  if (!start || !stop) return Resp::error(errors::kNotInteger);
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kZset, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  Resp out = Resp::array();
  if (!v) return out;
  const auto n = static_cast<std::int64_t>(v->zset.size());
  std::int64_t from = *start, to = *stop;
  if (rev) {
    // Rank r from the top is rank n-1-r from the bottom.
    if (from < 0) from += n;
    if (to < 0) to += n;
    if (from < 0) from = 0;
    if (to >= n) to = n - 1;
    if (from > to || from >= n) return out;
    const std::int64_t lo = n - 1 - to, hi = n - 1 - from;
    auto got = v->zset.range(lo, hi);
    for (auto it = got.rbegin(); it != got.rend(); ++it) {
      out.items.push_back(Resp::bulk(it->first));
      if (scores) out.items.push_back(Resp::bulk(format_double(it->second)));
    }
    return out;
  }
  for (const auto& [member, score] : v->zset.range(from, to)) {
    out.items.push_back(Resp::bulk(member));
    if (scores) out.items.push_back(Resp::bulk(format_double(score)));
  }
  return out;
}

Resp cmd_zrank(State& s, Client&, const Argv& a) {
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kZset, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  auto r = v ? v->zset.rank(a[2]) : std::nullopt;
  return r ? Resp::num(static_cast<std::int64_t>(*r)) : Resp::nil();
}

Resp cmd_zscore(State& s, Client&, const Argv& a) {
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kZset, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  auto score = v ? v->zset.score(a[2]) : std::nullopt;
  return score ? Resp::bulk(format_double(*score)) : Resp::nil();
}

Resp cmd_zcard(State& s, Client&, const Argv& a) {
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kZset, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  return Resp::num(v ? static_cast<std::int64_t>(v->zset.size()) : 0);
}

Resp cmd_zrem(State& s, Client&, const Argv& a) {
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kZset, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  if (!v) return Resp::num(0);
  std::int64_t n = 0;
  for (std::size_t i = 2; i < a.size(); ++i) n += v->zset.erase(a[i]) ? 1 : 0;
  if (v->zset.size() == 0) s.keys.erase(a[1], s.now_ms());
  return Resp::num(n);
}

Resp cmd_zremrangebyrank(State& s, Client&, const Argv& a) {
  auto start = parse_int(a[2]), stop = parse_int(a[3]);
  if (!start || !stop) return Resp::error(errors::kNotInteger);
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kZset, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  if (!v) return Resp::num(0);
  const auto n = static_cast<std::int64_t>(v->zset.erase_range(*start, *stop));
  if (v->zset.size() == 0) s.keys.erase(a[1], s.now_ms());
  return Resp::num(n);
}

Resp cmd_rpush(State& s, Client&, const Argv& a) {
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kList, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  if (!v) v = &s.keys.create(a[1], Type::kList);
  for (std::size_t i = 2; i < a.size(); ++i) v->list.push_back(a[i]);
  return Resp::num(static_cast<std::int64_t>(v->list.size()));
}

Resp cmd_lrange(State& s, Client&, const Argv& a) {
  auto start = parse_int(a[2]), stop = parse_int(a[3]);
  if (!start || !stop) return Resp::error(errors::kNotInteger);
  bool wrong = false;
  Value* v = typed(s, a[1], Type::kList, &wrong);
  if (wrong) return Resp::error(errors::kWrongType);
  Resp out = Resp::array();
  if (!v) return out;
  const auto n = static_cast<std::int64_t>(v->list.size());
  std::int64_t from = *start < 0 ? *start + n : *start, to = *stop < 0 ? *stop + n : *stop;
  if (from < 0) from = 0;
  if (to >= n) to = n - 1;
  for (std::int64_t i = from; i <= to; ++i) out.items.push_back(Resp::bulk(v->list[static_cast<std::size_t>(i)]));
  return out;
}

}  // namespace

void add_type_commands(std::map<std::string, Command>& t) {
  t["hset"] = {"hset", -4, 0, cmd_hset};
  t["hmset"] = {"hmset", -4, 0, cmd_hmset};
  t["hget"] = {"hget", 3, 0, cmd_hget};
  t["hmget"] = {"hmget", -3, 0, cmd_hmget};
  t["hgetall"] = {"hgetall", 2, 0, cmd_hgetall};
  t["hdel"] = {"hdel", -3, 0, cmd_hdel};
  t["zadd"] = {"zadd", -4, 0, cmd_zadd};
  t["zrange"] = {"zrange", -4, 0, cmd_zrange};
  t["zrank"] = {"zrank", 3, 0, cmd_zrank};
  t["zscore"] = {"zscore", 3, 0, cmd_zscore};
  t["zcard"] = {"zcard", 2, 0, cmd_zcard};
  t["zrem"] = {"zrem", -3, 0, cmd_zrem};
  t["zremrangebyrank"] = {"zremrangebyrank", 4, 0, cmd_zremrangebyrank};
  t["rpush"] = {"rpush", -3, 0, cmd_rpush};
  t["lrange"] = {"lrange", 4, 0, cmd_lrange};
}

}  // namespace redisgo::sim
