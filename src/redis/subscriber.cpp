#include "redis/subscriber.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "util/error.h"

namespace redisgo::redis {
namespace {

bool element_is(const redisReply* e, std::string_view text) {
  return e && (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS) &&
         std::string_view(e->str, e->len) == text;
}

// ["message", channel, payload] for our channel.
bool is_message(const redisReply* r, const std::string& channel) {
  return r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 && element_is(r->element[0], "message") &&
         element_is(r->element[1], channel);
}

// Bounds one drain() so a flood cannot starve the caller's loop; poll() is level-triggered,
// so whatever is left wakes it again.
constexpr int kMaxReadsPerDrain = 64;

}  // namespace

Subscriber::Subscriber(ConnectionOptions options) : options_(std::move(options)) {}

void Subscriber::subscribe(const std::string& channel, int cancel_fd) {
  close();
  const std::string who = detail::describe(options_.endpoint);
  ContextPtr c = detail::open_context(options_);
  // Send, then wait for the confirmation in poll() (bounded by io_timeout) so a stop
  // request can end the wait on a hung server.
  if (int err = 0; !detail::send_argv(c.get(), {"SUBSCRIBE", channel}, &err)) {
    detail::throw_context_error(c.get(), err, who, options_.io_timeout);
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.io_timeout;
  ReplyPtr r;
  while (!r) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(c.get(), &raw) != REDIS_OK) detail::throw_context_error(c.get(), errno, who, options_.io_timeout);
    if (raw) {
      r.reset(static_cast<redisReply*>(raw));
      break;
    }
    pollfd fds[2] = {{c->fd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    auto left = std::chrono::ceil<Millis>(deadline - std::chrono::steady_clock::now());
    if (options_.io_timeout > Millis(0) && left <= Millis(0)) {
      throw TimeoutError(who + ": no SUBSCRIBE confirmation within " + std::to_string(options_.io_timeout.count()) + "ms");
    }
    int timeout = options_.io_timeout > Millis(0) ? static_cast<int>(left.count()) : -1;
    int rc = ::poll(fds, cancel_fd >= 0 ? 2 : 1, timeout);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) throw_errno(who + ": poll", errno);
    if (cancel_fd >= 0 && fds[1].revents != 0) throw Error(who + ": SUBSCRIBE cancelled");
    if (fds[0].revents != 0) {
      errno = 0;
      if (redisBufferRead(c.get()) != REDIS_OK) detail::throw_context_error(c.get(), errno, who, options_.io_timeout);
    }
  }
  if (r->type == REDIS_REPLY_ERROR) {
    throw ReplyError(who + ": SUBSCRIBE failed: " + std::string(r->str, r->len));
  }
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || !element_is(r->element[0], "subscribe") ||
      !element_is(r->element[1], channel)) {
    throw IoError(who + ": unexpected reply to SUBSCRIBE");
  }
  ctx_ = std::move(c);
  channel_ = channel;
}

bool Subscriber::active() const noexcept { return ctx_ != nullptr; }

int Subscriber::fd() const noexcept { return ctx_ ? ctx_->fd : -1; }

void Subscriber::close() noexcept { ctx_.reset(); }

bool Subscriber::take_buffered(int* count) noexcept {
  for (;;) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(ctx_.get(), &raw) != REDIS_OK) return false;
    if (!raw) return true;
    ReplyPtr r(static_cast<redisReply*>(raw));
    if (is_message(r.get(), channel_)) ++*count;
  }
}

int Subscriber::drain() noexcept {
  if (!ctx_) return 0;
  int count = 0;
  if (!take_buffered(&count)) {
    close();
    return count;
  }
  // Our own non-blocking recv() rather than redisBufferRead(): the socket stays blocking
  // for hiredis, and EAGAIN / EOF / errors are told apart here without touching its flags.
  char buf[16 * 1024];
  for (int reads = 0; reads < kMaxReadsPerDrain; ++reads) {
    ssize_t n = ::recv(ctx_->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {  // EOF (server went away) or a socket error
      close();
      return count;
    }
    if (redisReaderFeed(ctx_->reader, buf, static_cast<size_t>(n)) != REDIS_OK || !take_buffered(&count)) {
      close();
      return count;
    }
  }
  return count;
}

}  // namespace redisgo::redis
