#include "lua/table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "lua/replies_understood.h"

namespace redisgo::luatable {

std::string expand(const std::string& text, const Clock& clock) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto open = text.find('{', i);
    if (open == std::string::npos) break;
    const auto close = text.find('}', open);
    if (close == std::string::npos) break;
    std::string expr = text.substr(open + 1, close - open - 1);
    std::int64_t offset = 0;
    const auto op = expr.find_first_of("+-");
    if (op != std::string::npos) {
      offset = std::stoll(expr.substr(op + 1)) * (expr[op] == '-' ? -1 : 1);
      expr = expr.substr(0, op);
    }
    std::int64_t base = 0;
    if (expr == "now") {
      base = clock.t0;
    } else if (expr == "t1") {
      base = clock.t1;
    } else if (expr == "now_ms") {
      base = clock.t0 / 1000;
    } else if (expr == "t1_ms") {
      base = clock.t1 / 1000;
    } else {
      throw std::invalid_argument("unknown placeholder {" + expr + "} in " + text);
    }
    out += text.substr(i, open - i) + std::to_string(base + offset);
    i = close + 1;
  }
  return out + text.substr(i);
}

namespace {

bool decimal(const std::string& s, std::int64_t* v) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *v = std::stoll(s);
  return true;
}

}  // namespace

bool Pat::match(const Resp& r, const Clock& clock, std::string* why) const {
  auto fail = [&] {
    *why = "got " + to_string(r) + ", want " + show(clock);
    return false;
  };
  switch (kind_) {
    case Kind::kAny: return true;
    case Kind::kNil: return r.is_nil() || fail();
    case Kind::kInt: return (r.is_int() && r.integer == lo_) || fail();
    case Kind::kIntIn: return (r.is_int() && r.integer >= lo_ && r.integer <= hi_) || fail();
    case Kind::kBulk: return (r.is_bulk() && r.text == expand(text_, clock)) || fail();
    case Kind::kBulkIn: {
      std::int64_t v = 0;
      const std::int64_t lo = std::stoll(expand(text_, clock)), hi = std::stoll(expand(text2_, clock));
      return (r.is_bulk() && decimal(r.text, &v) && v >= lo && v <= hi) || fail();
    }
    case Kind::kStatus: return (r.kind == Resp::Kind::kStatus && r.text == text_) || fail();
    case Kind::kErr: return (r.is_error() && r.text == expand(text_, clock)) || fail();
    case Kind::kErrStarts: return (r.is_error() && r.text.rfind(expand(text_, clock), 0) == 0) || fail();
    case Kind::kErrHas: return (r.is_error() && r.text.find(expand(text_, clock)) != std::string::npos) || fail();
    case Kind::kArr: {
      if (!r.is_array() || r.items.size() != items_.size()) return fail();
      for (std::size_t i = 0; i < items_.size(); ++i) {
        std::string inner;
        if (!items_[i].match(r.items[i], clock, &inner)) {
          *why = "element " + std::to_string(i + 1) + ": " + inner + " (whole reply " + to_string(r) + ")";
          return false;
        }
      }
      return true;
    }
  }
  return fail();
}

std::string Pat::show(const Clock& clock) const {
  switch (kind_) {
    case Kind::kAny: return "anything";
    case Kind::kNil: return "(nil)";
    case Kind::kInt: return std::to_string(lo_);
    case Kind::kIntIn: return "an integer in [" + std::to_string(lo_) + ", " + std::to_string(hi_) + "]";
    case Kind::kBulk: return "\"" + expand(text_, clock) + "\"";
    case Kind::kBulkIn: return "a decimal in [" + expand(text_, clock) + ", " + expand(text2_, clock) + "]";
    case Kind::kStatus: return "status " + text_;
    case Kind::kErr: return "(error) " + expand(text_, clock);
    case Kind::kErrStarts: return "(error) " + expand(text_, clock) + "...";
    case Kind::kErrHas: return "(error) ..." + expand(text_, clock) + "...";
    case Kind::kArr: {
      std::string out = "[";
      for (std::size_t i = 0; i < items_.size(); ++i) out += (i ? ", " : "") + items_[i].show(clock);
      return out + "]";
    }
  }
  return "?";
}

Key str(std::string name, std::string value, std::int64_t ttl) {
  return Key{std::move(name), sim::Type::kString, std::move(value), {}, {}, ttl};
}
Key hash(std::string name, std::vector<std::pair<std::string, std::string>> fields, std::int64_t ttl) {
  return Key{std::move(name), sim::Type::kHash, {}, std::move(fields), {}, ttl};
}
Key zset(std::string name, std::vector<std::pair<std::string, std::string>> members, std::int64_t ttl) {
  return Key{std::move(name), sim::Type::kZset, {}, std::move(members), {}, ttl};
}
Key list(std::string name, std::vector<std::string> items, std::int64_t ttl) {
  return Key{std::move(name), sim::Type::kList, {}, {}, std::move(items), ttl};
}

Want gone(std::string name) {
  Want w;
  w.name = std::move(name);
  w.absent = true;
  return w;
}
Want s(std::string name, Pat value, Ttl t) {
  Want w;
  w.name = std::move(name);
  w.value = std::move(value);
  w.ttl = t;
  return w;
}
Want h(std::string name, std::vector<std::pair<std::string, Pat>> fields, Ttl t) {
  Want w;
  w.name = std::move(name);
  w.type = sim::Type::kHash;
  w.fields = std::move(fields);
  w.ttl = t;
  return w;
}
Want z(std::string name, std::vector<std::pair<std::string, Pat>> members, Ttl t) {
  Want w = h(std::move(name), std::move(members), t);
  w.type = sim::Type::kZset;
  return w;
}
Want kept_list(std::string name, std::vector<std::string> items, Ttl t) {
  Want w;
  w.name = std::move(name);
  w.type = sim::Type::kList;
  w.items = std::move(items);
  w.ttl = t;
  return w;
}

namespace {

std::int64_t server_time(Backend& b) {
  const Resp t = b.command({"TIME"});
  return std::stoll(t.items.at(0).text) * 1000000 + std::stoll(t.items.at(1).text);
}

void create(Backend& b, const Key& k, const Clock& clock) {
  std::vector<std::string> cmd;
  switch (k.type) {
    case sim::Type::kString: cmd = {"SET", k.name, expand(k.value, clock)}; break;
    case sim::Type::kHash:
      cmd = {"HSET", k.name};
      for (const auto& [f, v] : k.fields) cmd.insert(cmd.end(), {f, expand(v, clock)});
      break;
    case sim::Type::kZset:
      cmd = {"ZADD", k.name};
      for (const auto& [m, score] : k.fields) cmd.insert(cmd.end(), {expand(score, clock), m});
      break;
    case sim::Type::kList:
      cmd = {"RPUSH", k.name};
      cmd.insert(cmd.end(), k.items.begin(), k.items.end());
      break;
  }
  const Resp made = b.command(cmd);
  ASSERT_FALSE(made.is_error()) << "setting up " << k.name << ": " << made.text;
  if (k.ttl >= 0) {
    ASSERT_EQ(b.command({"PEXPIRE", k.name, std::to_string(k.ttl)}), Resp::num(1)) << k.name;
  }
}

/// The given key as a Want: unchanged (its TTL may have run down a little).
Want unchanged(const Key& k, const Clock& clock) {
  Want w;
  w.name = k.name;
  w.type = k.type;
  w.value = S(expand(k.value, clock));
  auto fields = k.fields;
  if (k.type == sim::Type::kZset) {
    // Rank order: by score, then member.
    std::sort(fields.begin(), fields.end(), [&](const auto& a, const auto& b) {
      const double sa = std::stod(expand(a.second, clock)), sb = std::stod(expand(b.second, clock));
      return sa != sb ? sa < sb : a.first < b.first;
    });
  }
  for (const auto& [f, v] : fields) w.fields.emplace_back(f, S(expand(v, clock)));
  w.items = k.items;
  w.ttl = k.ttl >= 0 ? ttl(k.ttl) : no_ttl();
  return w;
}

void check_key(Backend& b, const Want& w, const Clock& clock) {
  SCOPED_TRACE("key " + w.name);
  const Resp type = b.command({"TYPE", w.name});
  if (w.absent) {
    EXPECT_EQ(type.text, "none") << w.name << " should be gone";
    return;
  }
  ASSERT_EQ(type.text, sim::type_name(w.type));
  std::string why;
  switch (w.type) {
    case sim::Type::kString:
      EXPECT_TRUE(w.value.match(b.command({"GET", w.name}), clock, &why)) << why;
      break;
    case sim::Type::kHash: {
      const Resp all = b.command({"HGETALL", w.name});
      std::map<std::string, Resp> got;
      for (std::size_t i = 0; i + 1 < all.items.size(); i += 2) got[all.items[i].text] = all.items[i + 1];
      EXPECT_EQ(got.size(), w.fields.size()) << "fields: " << to_string(all);
      for (const auto& [f, pat] : w.fields) {
        auto it = got.find(f);
        if (it == got.end()) {
          ADD_FAILURE() << "field " << f << " missing: " << to_string(all);
          continue;
        }
        EXPECT_TRUE(pat.match(it->second, clock, &why)) << "field " << f << ": " << why;
      }
      break;
    }
    case sim::Type::kZset: {
      const Resp all = b.command({"ZRANGE", w.name, "0", "-1", "WITHSCORES"});
      ASSERT_EQ(all.items.size(), 2 * w.fields.size()) << "members: " << to_string(all);
      for (std::size_t i = 0; i < w.fields.size(); ++i) {
        EXPECT_EQ(all.items[2 * i].text, w.fields[i].first) << "rank " << i << ": " << to_string(all);
        EXPECT_TRUE(w.fields[i].second.match(all.items[2 * i + 1], clock, &why)) << "score of " << w.fields[i].first << ": " << why;
      }
      break;
    }
    case sim::Type::kList: {
      const Resp all = b.command({"LRANGE", w.name, "0", "-1"});
      std::vector<std::string> got;
      for (const auto& e : all.items) got.push_back(e.text);
      EXPECT_EQ(got, w.items);
      break;
    }
  }
  const Resp pttl = b.command({"PTTL", w.name});
  EXPECT_TRUE(pttl.integer >= w.ttl.lo && pttl.integer <= w.ttl.hi)
      << "PTTL " << pttl.integer << ", want [" << w.ttl.lo << ", " << w.ttl.hi << "]";
}

std::set<std::string> all_keys(Backend& b) {
  std::set<std::string> out;
  std::string cursor = "0";
  do {
    const Resp r = b.command({"SCAN", cursor, "COUNT", "1000"});
    cursor = r.items.at(0).text;
    for (const auto& k : r.items.at(1).items) out.insert(k.text);
  } while (cursor != "0");
  return out;
}

void run_row(Backend& b, const Table& table, const Row& row) {
  b.age(row.age);
  b.reset();
  Clock clock;
  clock.t0 = server_time(b);
  for (const auto& k : row.given) create(b, k, clock);
  for (const auto& ch : row.listeners) b.listen(ch);
  std::vector<std::string> cmd;
  if (table.source.empty()) {
    for (const auto& a : row.argv) cmd.push_back(expand(a, clock));
  } else {
    cmd = {"EVAL", table.source, std::to_string(row.keys.size())};
    for (const auto& k : row.keys) cmd.push_back(expand(k, clock));
    for (const auto& a : row.argv) cmd.push_back(expand(a, clock));
  }
  const Resp reply = b.command(cmd, row.acl);
  clock.t1 = server_time(b);
  std::string why;
  EXPECT_TRUE(row.reply.match(reply, clock, &why)) << "reply: " << why;
  if (!table.source.empty() && !reply.is_error()) {
    EXPECT_EQ(understood(table.source, reply, row.keys.size()), true)
        << "its parser (lock/replies*.h) does not understand the reply " << to_string(reply);
  }

  std::set<std::string> named;
  for (const auto& w : row.after) {
    check_key(b, w, clock);
    named.insert(w.name);
  }
  for (const auto& k : row.given) {
    if (named.insert(k.name).second) check_key(b, unchanged(k, clock), clock);
  }
  for (const auto& k : all_keys(b)) {
    EXPECT_TRUE(named.count(k)) << "unexpected key " << k << " (" << b.command({"TYPE", k}).text << ")";
  }
  std::set<std::string> channels(row.listeners.begin(), row.listeners.end());
  for (const auto& ch : channels) {
    std::vector<std::string> want;
    for (const auto& [c, msgs] : row.heard) {
      if (c == ch) {
        for (const auto& m : msgs) want.push_back(expand(m, clock));
      }
    }
    EXPECT_EQ(b.heard(ch), want) << "messages on " << ch;
  }
  for (const auto& [c, msgs] : row.heard) {
    EXPECT_TRUE(channels.count(c)) << "row expects messages on " << c << " but has no listener there";
  }
}

}  // namespace

void run_table(Backend& backend, const Table& table) {
  for (const auto& row : table.rows) {
    SCOPED_TRACE(table.name + " / " + row.name + " (" + backend.name() + ")");
    run_row(backend, table, row);
  }
}

}  // namespace redisgo::luatable
