#include "redis/reply.h"

#include <cstring>
#include <new>
#include <utility>

#include "util/error.h"

namespace redisgo::redis {
namespace {

// hiredis's own object functions, with an array-size limit in front: redisReader hands
// createArray a count straight from the wire, and a count of two billion must be a
// protocol error, not an allocation. The defaults are read from a reader (they are
// static in hiredis), once.
redisReplyObjectFunctions* default_functions() {
  static redisReplyObjectFunctions* fn = [] {
    redisReader* r = redisReaderCreate();
    if (!r) throw std::bad_alloc();
    redisReplyObjectFunctions* f = r->fn;
    redisReaderFree(r);
    return f;
  }();
  return fn;
}

// The count's type: int in hiredis 0.14 (Debian 12), size_t from 1.0 (Debian 13).
#if HIREDIS_MAJOR >= 1
using ArrayCount = std::size_t;
#else
using ArrayCount = int;
#endif

void* limited_create_array(const redisReadTask* task, ArrayCount elements) {
  if (std::cmp_less(elements, 0) || std::cmp_greater(elements, ReplyReader::kMaxArrayElements)) {
    return nullptr;  // reader: OOM error
  }
  return default_functions()->createArray(task, elements);
}

redisReplyObjectFunctions* limited_functions() {
  static redisReplyObjectFunctions fn = [] {
    redisReplyObjectFunctions f = *default_functions();
    f.createArray = limited_create_array;
    return f;
  }();
  return &fn;
}

}  // namespace

const char* type_name(const redisReply* r) {
  if (!r) return "none";
  switch (r->type) {
    case REDIS_REPLY_STRING: return "string";
    case REDIS_REPLY_ARRAY: return "array";
    case REDIS_REPLY_INTEGER: return "integer";
    case REDIS_REPLY_NIL: return "nil";
    case REDIS_REPLY_STATUS: return "status";
    case REDIS_REPLY_ERROR: return "error";
    default: return "unknown";
  }
}

std::optional<std::string> as_string(const redisReply* e) {
  if (e && (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS || e->type == REDIS_REPLY_ERROR)) {
    return std::string(e->str ? e->str : "", e->len);
  }
  return std::nullopt;
}

std::optional<std::int64_t> as_integer(const redisReply* e) {
  if (e && e->type == REDIS_REPLY_INTEGER) return e->integer;
  return std::nullopt;
}

std::int64_t Reply::integer() const {
  if (!is_integer()) throw ReplyError(std::string("expected an integer reply, got ") + type_name(r_.get()));
  return r_->integer;
}

std::string Reply::str() const {
  auto s = as_string(r_.get());
  if (!s) throw ReplyError(std::string("expected a string reply, got ") + type_name(r_.get()));
  return *s;
}

std::size_t Reply::size() const { return is_array() ? r_->elements : 0; }

const redisReply* Reply::element(std::size_t i) const { return i < size() ? r_->element[i] : nullptr; }

ReplyReader::ReplyReader() : r_(redisReaderCreateWithFunctions(limited_functions())) {
  if (!r_) throw std::bad_alloc();
}

ReplyReader::~ReplyReader() { redisReaderFree(r_); }

bool ReplyReader::feed(const char* data, std::size_t n) {
  if (!error_.empty()) return false;
  pending_ += n;
  if (pending_ > kMaxPendingBytes) {
    error_ = "protocol error: a reply larger than " + std::to_string(kMaxPendingBytes >> 20) + " MiB";
    return false;
  }
  if (redisReaderFeed(r_, data, n) != REDIS_OK) {
    error_ = std::string("protocol error (is this a Redis server?): ") + r_->errstr;
    return false;
  }
  return true;
}

ReplyPtr ReplyReader::next() {
  if (!error_.empty()) return nullptr;
  void* raw = nullptr;
  if (redisReaderGetReply(r_, &raw) != REDIS_OK) {
    // Our array limit makes the reader report "Out of memory"; say what it really was.
    error_ = r_->err == REDIS_ERR_OOM ? "protocol error: an array reply with too many elements"
                                      : std::string("protocol error (is this a Redis server?): ") + r_->errstr;
    return nullptr;
  }
  if (raw) pending_ = 0;
  return ReplyPtr(static_cast<redisReply*>(raw));
}

}  // namespace redisgo::redis
