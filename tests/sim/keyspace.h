#pragma once
/// The simulated node's data: strings, hashes, sorted sets and lists (the last only so that a
/// test can put "a key of another type" where the scripts expect theirs), each with an optional
/// absolute expiry in ms. Expiry is lazy, as Redis's is on access: a key whose time has passed
/// is removed when it is looked up (Redis: `now > when`, so a key is still there at its exact
/// expiry millisecond and PTTL says 0).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace redisgo::sim {

enum class Type { kString, kHash, kZset, kList };
/// TYPE's word for it: "string", "hash", "zset", "list".
const char* type_name(Type t);

/// A sorted set: member -> score, ordered by (score, member) as Redis's skiplist is.
class ZSet {
 public:
  /// Adds or moves `member`; returns true when it was new.
  bool put(const std::string& member, double score);
  bool erase(const std::string& member);
  std::optional<double> score(const std::string& member) const;
  std::optional<std::size_t> rank(const std::string& member) const;
  std::size_t size() const { return scores_.size(); }
  /// Members by rank, [start, stop] inclusive after Redis's index normalisation.
  std::vector<std::pair<std::string, double>> range(std::int64_t start, std::int64_t stop) const;
  /// Removes ranks [start, stop] (normalised as ZRANGE's); returns how many.
  std::size_t erase_range(std::int64_t start, std::int64_t stop);

 private:
  /// Redis's index arithmetic: negative from the end, clamped; false when empty.
  bool normalise(std::int64_t& start, std::int64_t& stop) const;
  std::map<std::string, double> scores_;
  std::set<std::pair<double, std::string>> order_;
};

struct Value {
  Type type = Type::kString;
  std::string str;
  /// A hash in insertion order, as a small Redis hash (listpack) keeps it.
  std::vector<std::pair<std::string, std::string>> hash;
  ZSet zset;
  std::vector<std::string> list;
  std::int64_t expire_ms = -1;  ///< absolute, ms since the epoch; -1: none
};

class Keyspace {
 public:
  /// The live key (nullptr when absent or expired; an expired key is removed).
  Value* find(const std::string& key, std::int64_t now_ms);
  /// A new empty value of `type` at `key` (replacing what was there), without expiry.
  Value& create(const std::string& key, Type type);
  bool erase(const std::string& key, std::int64_t now_ms);
  void clear() { data_.clear(); }
  /// Every live key (sorted), removing the expired ones on the way.
  std::vector<std::string> keys(std::int64_t now_ms);
  std::size_t size(std::int64_t now_ms) { return keys(now_ms).size(); }

 private:
  std::map<std::string, Value> data_;
};

/// Redis's glob (stringmatch): * ? [a-z] [^x] and \ escapes; case-sensitive.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace redisgo::sim
