#pragma once
/// Table tests of the lease scripts (src/lock/scripts.h): each row is a crafted starting state,
/// one EVAL with KEYS and ARGV (or one plain command), the expected reply, the expected state
/// after, and what subscribers heard. What TIME decides is normalised: "{now}" in a value is the
/// server's TIME (µs) read just before the row, "{t1}" the one read just after it; Token() is a
/// decimal in [{now}, {t1}] (a token or ticket the script took from TIME).
///
/// The state after is checked whole: every key a row names in `after` as it says, every key it
/// gave and does not name unchanged (TTL at most 1.5 s less), and no other key.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "lua/backend.h"
#include "sim/keyspace.h"

namespace redisgo::luatable {

/// TIME around a row (µs).
struct Clock {
  std::int64_t t0 = 0, t1 = 0;
};

/// "{now}", "{now+N}", "{now-N}", "{t1...}", "{now_ms...}", "{t1_ms...}" replaced.
std::string expand(const std::string& text, const Clock& clock);

/// A pattern for a reply or a stored value.
class Pat {
 public:
  enum class Kind { kAny, kNil, kInt, kIntIn, kBulk, kBulkIn, kStatus, kErr, kErrStarts, kErrHas, kArr };
  Pat() = default;
  Pat(Kind kind, std::int64_t lo = 0, std::int64_t hi = 0, std::string text = {}, std::string text2 = {})
      : kind_(kind), lo_(lo), hi_(hi), text_(std::move(text)), text2_(std::move(text2)) {}
  static Pat arr(std::vector<Pat> items) {
    Pat p(Kind::kArr);
    p.items_ = std::move(items);
    return p;
  }
  bool match(const Resp& r, const Clock& clock, std::string* why) const;
  std::string show(const Clock& clock) const;

 private:
  Kind kind_ = Kind::kAny;
  std::int64_t lo_ = 0, hi_ = 0;
  std::string text_, text2_;
  std::vector<Pat> items_;
};

inline Pat Any() { return Pat(Pat::Kind::kAny); }
inline Pat Nil() { return Pat(Pat::Kind::kNil); }
inline Pat I(std::int64_t v) { return Pat(Pat::Kind::kInt, v); }
inline Pat In(std::int64_t lo, std::int64_t hi) { return Pat(Pat::Kind::kIntIn, lo, hi); }
/// A bulk string ("{now}" etc. expanded).
inline Pat S(std::string s) { return Pat(Pat::Kind::kBulk, 0, 0, std::move(s)); }
/// A bulk decimal within [lo, hi] (both expanded).
inline Pat SIn(std::string lo, std::string hi) { return Pat(Pat::Kind::kBulkIn, 0, 0, std::move(lo), std::move(hi)); }
/// A decimal that TIME decided during the row: in [{now}, {t1}].
inline Pat Token() { return SIn("{now}", "{t1}"); }
inline Pat St(std::string s) { return Pat(Pat::Kind::kStatus, 0, 0, std::move(s)); }
inline Pat Err(std::string s) { return Pat(Pat::Kind::kErr, 0, 0, std::move(s)); }
/// An error reply that starts with `s` (a script error's " script: <sha>, on ..." tail).
inline Pat ErrStarts(std::string s) { return Pat(Pat::Kind::kErrStarts, 0, 0, std::move(s)); }
inline Pat ErrHas(std::string s) { return Pat(Pat::Kind::kErrHas, 0, 0, std::move(s)); }
inline Pat A(std::initializer_list<Pat> items) { return Pat::arr(items); }

/// A key to create before the row. For a sorted set, `fields` is member -> score.
struct Key {
  std::string name;
  sim::Type type = sim::Type::kString;
  std::string value;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<std::string> items;
  std::int64_t ttl = -1;  ///< ms; -1: no expiry
};
Key str(std::string name, std::string value, std::int64_t ttl = -1);
Key hash(std::string name, std::vector<std::pair<std::string, std::string>> fields, std::int64_t ttl = -1);
Key zset(std::string name, std::vector<std::pair<std::string, std::string>> members, std::int64_t ttl = -1);
Key list(std::string name, std::vector<std::string> items = {"x"}, std::int64_t ttl = -1);

/// A PTTL range in ms; {-1, -1}: no expiry.
struct Ttl {
  std::int64_t lo = -1, hi = -1;
};
/// Set to `ms` during the row: within 1.5 s below it (a real server's clock moves).
inline Ttl ttl(std::int64_t ms) { return {ms - 1500, ms}; }
inline Ttl no_ttl() { return {}; }

/// A key as it must be after the row. A sorted set's members in rank order.
struct Want {
  std::string name;
  bool absent = false;
  sim::Type type = sim::Type::kString;
  Pat value;
  std::vector<std::pair<std::string, Pat>> fields;
  std::vector<std::string> items;
  Ttl ttl;
};
Want gone(std::string name);
Want s(std::string name, Pat value, Ttl t = {});
Want h(std::string name, std::vector<std::pair<std::string, Pat>> fields, Ttl t = {});
Want z(std::string name, std::vector<std::pair<std::string, Pat>> members, Ttl t = {});
/// The key as given (a list, or anything kept by type only).
Want kept_list(std::string name, std::vector<std::string> items = {"x"}, Ttl t = {});

struct Row {
  std::string name{};
  Age age = Age::kAny;
  Acl acl{};                    ///< run as a user without these rights
  std::vector<Key> given{};
  std::vector<std::string> listeners{};  ///< one subscriber per entry (twice: two)
  std::vector<std::string> keys{};
  std::vector<std::string> argv{};  ///< the script's ARGV; a command table's whole command
  Pat reply{};
  std::vector<Want> after{};
  /// channel -> every message its (first) subscriber got, in order; a listener's channel
  /// not named here must have heard nothing.
  std::vector<std::pair<std::string, std::vector<std::string>>> heard{};
};

struct Table {
  std::string name;
  std::string source;  ///< the script; empty: each row's argv is a command
  std::vector<Row> rows;
};

/// Runs every row on `backend` (gtest expectations, each under the row's name).
void run_table(Backend& backend, const Table& table);

}  // namespace redisgo::luatable
