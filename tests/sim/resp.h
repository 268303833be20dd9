#pragma once
/// A RESP2 reply as a value: what a simulated node answers, and what the table tests compare
/// (a real server's hiredis reply is converted to the same shape). RESP2 has one nil: a nil
/// bulk and a nil array are both Nil here, as hiredis reports them.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace redisgo::sim {

struct Resp {
  enum class Kind { kNil, kInt, kStatus, kError, kBulk, kArray };
  Kind kind = Kind::kNil;
  std::int64_t integer = 0;
  std::string text;  ///< bulk, status or error text (an error without its leading '-')
  std::vector<Resp> items;

  static Resp nil() { return {}; }
  static Resp num(std::int64_t v) {
    Resp r;
    r.kind = Kind::kInt;
    r.integer = v;
    return r;
  }
  static Resp bulk(std::string s) { return with(Kind::kBulk, std::move(s)); }
  static Resp status(std::string s) { return with(Kind::kStatus, std::move(s)); }
  static Resp ok() { return status("OK"); }
  static Resp error(std::string s) { return with(Kind::kError, std::move(s)); }
  static Resp array(std::vector<Resp> v = {}) {
    Resp r;
    r.kind = Kind::kArray;
    r.items = std::move(v);
    return r;
  }
  static Resp strings(const std::vector<std::string>& v);

  bool is_nil() const { return kind == Kind::kNil; }
  bool is_error() const { return kind == Kind::kError; }
  bool is_int() const { return kind == Kind::kInt; }
  bool is_bulk() const { return kind == Kind::kBulk; }
  bool is_array() const { return kind == Kind::kArray; }

  bool operator==(const Resp& o) const {
    return kind == o.kind && integer == o.integer && text == o.text && items == o.items;
  }

 private:
  static Resp with(Kind k, std::string s) {
    Resp r;
    r.kind = k;
    r.text = std::move(s);
    return r;
  }
};

/// Shown as redis-cli would, on one line: 1, "x", (nil), (error) ..., [a, b].
std::string to_string(const Resp& r);

/// The standard error texts (Redis's own wording) that several commands share.
namespace errors {
inline constexpr const char* kWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr const char* kSyntax = "ERR syntax error";
inline constexpr const char* kNotInteger = "ERR value is not an integer or out of range";
inline constexpr const char* kNotFloat = "ERR value is not a valid float";
inline constexpr const char* kNoScript = "NOSCRIPT No matching script. Please use EVAL.";
}  // namespace errors

}  // namespace redisgo::sim
