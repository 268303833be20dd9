#include "sim/keyspace.h"

#include <string_view>

namespace redisgo::sim {

const char* type_name(Type t) {
  switch (t) {
    case Type::kString: return "string";
    case Type::kHash: return "hash";
    case Type::kZset: return "zset";
    case Type::kList: return "list";
  }
  return "none";
}

bool ZSet::put(const std::string& member, double score) {
  auto it = scores_.find(member);
  if (it != scores_.end()) {
    order_.erase({it->second, member});
    it->second = score;
    order_.insert({score, member});
    return false;
  }
  scores_.emplace(member, score);
  order_.insert({score, member});
  return true;
}

bool ZSet::erase(const std::string& member) {
  auto it = scores_.find(member);
  if (it == scores_.end()) return false;
  order_.erase({it->second, member});
  scores_.erase(it);
  return true;
}

std::optional<double> ZSet::score(const std::string& member) const {
  auto it = scores_.find(member);
  if (it == scores_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::size_t> ZSet::rank(const std::string& member) const {
  auto it = scores_.find(member);
  if (it == scores_.end()) return std::nullopt;
  std::size_t r = 0;
  for (const auto& e : order_) {
    if (e.second == member) return r;
    ++r;
  }
  return std::nullopt;
}

bool ZSet::normalise(std::int64_t& start, std::int64_t& stop) const {
  const auto n = static_cast<std::int64_t>(scores_.size());
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  if (start < 0) start = 0;
  if (start > stop || start >= n) return false;
  if (stop >= n) stop = n - 1;
  return true;
}

std::vector<std::pair<std::string, double>> ZSet::range(std::int64_t start, std::int64_t stop) const {
  std::vector<std::pair<std::string, double>> out;
  if (!normalise(start, stop)) return out;
  std::int64_t i = 0;
  for (const auto& e : order_) {
    if (i > stop) break;
    if (i >= start) out.emplace_back(e.second, e.first);
    ++i;
  }
  return out;
}

std::size_t ZSet::erase_range(std::int64_t start, std::int64_t stop) {
  auto doomed = range(start, stop);
  for (const auto& e : doomed) erase(e.first);
  return doomed.size();
}

Value* Keyspace::find(const std::string& key, std::int64_t now_ms) {
  auto it = data_.find(key);
  if (it == data_.end()) return nullptr;
  if (it->second.expire_ms >= 0 && now_ms > it->second.expire_ms) {
    data_.erase(it);
    return nullptr;
  }
  return &it->second;
}

Value& Keyspace::create(const std::string& key, Type type) {
  Value& v = data_[key];
  v = Value{};
  v.type = type;
  return v;
}

bool Keyspace::erase(const std::string& key, std::int64_t now_ms) {
  if (!find(key, now_ms)) return false;
  data_.erase(key);
  return true;
}

std::vector<std::string> Keyspace::keys(std::int64_t now_ms) {
  std::vector<std::string> out;
  for (auto it = data_.begin(); it != data_.end();) {
    if (it->second.expire_ms >= 0 && now_ms > it->second.expire_ms) {
      it = data_.erase(it);
    } else {
      out.push_back(it->first);
      ++it;
    }
  }
  return out;
}

namespace {

// One bracket class at p (just past '['): advances p past ']' and says whether c matched.
bool class_match(std::string_view pat, std::size_t& p, char c) {
  bool negate = p < pat.size() && pat[p] == '^';
  if (negate) ++p;
  bool hit = false;
  while (p < pat.size() && pat[p] != ']') {
    if (pat[p] == '\\' && p + 1 < pat.size()) {
      ++p;
      hit = hit || pat[p] == c;
    } else if (p + 2 < pat.size() && pat[p + 1] == '-' && pat[p + 2] != ']') {
      char lo = pat[p], hi = pat[p + 2];
      if (lo > hi) std::swap(lo, hi);
      hit = hit || (c >= lo && c <= hi);
      p += 2;
    } else {
      hit = hit || pat[p] == c;
    }
    ++p;
  }
  if (p < pat.size()) ++p;  // the ']'
  return negate ? !hit : hit;
}

}  // namespace

bool glob_match(std::string_view pat, std::string_view s) {
  std::size_t p = 0, i = 0;
  while (p < pat.size()) {
    switch (pat[p]) {
      case '*': {
        while (p + 1 < pat.size() && pat[p + 1] == '*') ++p;
        if (p + 1 == pat.size()) return true;
        for (std::size_t j = i; j <= s.size(); ++j) {
          if (glob_match(pat.substr(p + 1), s.substr(j))) return true;
        }
        return false;
      }
      case '?':
        if (i >= s.size()) return false;
        ++i;
        ++p;
        break;
      case '[': {
        if (i >= s.size()) return false;
        ++p;
        if (!class_match(pat, p, s[i])) return false;
        ++i;
        break;
      }
      case '\\':
        if (p + 1 < pat.size()) ++p;
        [[fallthrough]];
      default:
        if (i >= s.size() || pat[p] != s[i]) return false;
        ++i;
        ++p;
    }
  }
  return i == s.size();
}

}  // namespace redisgo::sim
