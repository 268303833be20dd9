#pragma once
/// Replies and the RESP parser: hiredis 0.14's redisReader does the parsing, with limits
/// of our own on top so that a server that is not Redis, or a broken one, costs a clear
/// protocol error rather than memory or a crash.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace redisgo::redis {

struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

/// An owned reply (possibly an error reply: is_error()).
class Reply {
 public:
  Reply() = default;
  explicit Reply(ReplyPtr r) : r_(std::move(r)) {}
  const redisReply* get() const { return r_.get(); }
  const redisReply* operator->() const { return r_.get(); }
  explicit operator bool() const { return r_ != nullptr; }
  bool is_nil() const { return r_ && r_->type == REDIS_REPLY_NIL; }
  bool is_integer() const { return r_ && r_->type == REDIS_REPLY_INTEGER; }
  bool is_string() const { return r_ && (r_->type == REDIS_REPLY_STRING || r_->type == REDIS_REPLY_STATUS); }
  bool is_array() const { return r_ && r_->type == REDIS_REPLY_ARRAY; }
  bool is_error() const { return r_ && r_->type == REDIS_REPLY_ERROR; }
  std::int64_t integer() const;      ///< throws ReplyError if not an integer
  std::string str() const;           ///< string, status or error text; throws ReplyError otherwise
  std::size_t size() const;          ///< array length; 0 if not an array
  /// Element i of an array reply, as a borrowed pointer (lifetime of this Reply); nullptr
  /// when out of range or not an array.
  const redisReply* element(std::size_t i) const;

 private:
  ReplyPtr r_;
};

/// "string", "array", "integer", ... for messages.
const char* type_name(const redisReply* r);
/// The text of a string/status/error element, nullopt for other types or nullptr.
std::optional<std::string> as_string(const redisReply* e);
/// The value of an integer element.
std::optional<std::int64_t> as_integer(const redisReply* e);

/// Incremental RESP parser over hiredis's redisReader.
class ReplyReader {
 public:
  /// Largest reply accepted, in bytes buffered without a complete reply.
  static constexpr std::size_t kMaxPendingBytes = 16u << 20;
  /// Largest array accepted (a lease reply has a handful of elements; CLUSTER SLOTS of a
  /// large cluster some thousands).
  static constexpr int kMaxArrayElements = 1 << 20;

  ReplyReader();
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  /// Adds received bytes. False on a protocol error (see error()).
  bool feed(const char* data, std::size_t n);
  /// The next complete reply, nullptr when more bytes are needed. On a protocol error
  /// returns nullptr and error() is non-empty; the reader is then unusable.
  ReplyPtr next();
  /// Empty while healthy; else why the stream cannot be parsed.
  const std::string& error() const { return error_; }

 private:
  redisReader* r_;
  std::size_t pending_ = 0;  // bytes fed since the last complete reply
  std::string error_;
};

}  // namespace redisgo::redis
