#include "redis/connection.h"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "util/error.h"
#include "util/unique_fd.h"

namespace redisgo::redis {
namespace {

timeval to_timeval(Millis ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

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

bool is_error(const ReplyPtr& r) { return r && r->type == REDIS_REPLY_ERROR; }

std::string reply_text(const redisReply* r) { return r->str ? std::string(r->str, r->len) : std::string(); }

// A restarted (or SCRIPT FLUSHed) server no longer knows the SHA.
bool is_noscript(const ReplyPtr& r) {
  return is_error(r) && r->len >= 8 && std::memcmp(r->str, "NOSCRIPT", 8) == 0;
}

std::vector<std::string> eval_argv(const char* verb, std::string_view script_or_sha,
                                   const std::vector<std::string>& keys, const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.emplace_back(verb);
  argv.emplace_back(script_or_sha);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// hiredis wants parallel arrays of pointers and lengths (binary-safe argv form).
struct ArgvView {
  explicit ArgvView(const std::vector<std::string>& argv) {
    ptrs.reserve(argv.size());
    lens.reserve(argv.size());
    for (const auto& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  int argc() const { return static_cast<int>(ptrs.size()); }
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
};

bool parse_port(std::string_view text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  *port = value;
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------- Endpoint

std::optional<Endpoint> Endpoint::parse(std::string_view text, std::string* why) {
  auto fail = [why](const char* reason) -> std::optional<Endpoint> {
    if (why) *why = reason;
    return std::nullopt;
  };
  constexpr std::string_view kUnix = "unix://";
  Endpoint ep;
  if (text.substr(0, kUnix.size()) == kUnix) {
    std::string_view path = text.substr(kUnix.size());
    if (path.empty() || path.front() != '/') return fail("unix socket path must be absolute (unix:///path)");
    ep.kind = Kind::kUnix;
    ep.path = std::string(path);
    return ep;
  }
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return fail("expected host:port or unix:///path");
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of("[]") != std::string_view::npos) {
    return fail("malformed [IPv6] address");
  }
  if (host.empty()) return fail("missing host");
  int p = 0;
  if (!parse_port(port, &p)) return fail("port is not a number");
  if (p < 1 || p > 65535) return fail("port out of range (1-65535)");
  ep.kind = Kind::kTcp;
  ep.host = std::string(host);
  ep.port = p;
  return ep;
}

std::string Endpoint::str() const {
  if (kind == Kind::kUnix) return "unix://" + path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

// ------------------------------------------------------------------------------- Reply

std::int64_t Reply::integer() const {
  if (!is_integer()) throw ReplyError(std::string("expected an integer reply, got ") + type_name(r_.get()));
  return r_->integer;
}

std::string Reply::str() const {
  if (!is_string()) throw ReplyError(std::string("expected a string reply, got ") + type_name(r_.get()));
  return reply_text(r_.get());
}

std::size_t Reply::size() const { return is_array() ? r_->elements : 0; }

const redisReply* Reply::element(std::size_t i) const { return i < size() ? r_->element[i] : nullptr; }

// ------------------------------------------------------------------------------ detail

namespace detail {

SigpipeGuard::SigpipeGuard() noexcept {
  int saved = errno;
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  // One already pending is someone else's; leave it alone.
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  errno = saved;
}

SigpipeGuard::~SigpipeGuard() {
  int saved = errno;  // callers read errno after hiredis calls; keep it intact
  if (!was_pending_) {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      timespec zero{};
      while (sigtimedwait(&pipe, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  errno = saved;
}

std::string describe(const Endpoint& endpoint) { return "redis " + endpoint.str(); }

void throw_context_error(const redisContext* c, int err, const std::string& who, Millis timeout) {
  if (!c) throw IoError(who + ": cannot allocate a redis context");
  const std::string errstr = c->errstr;
  switch (c->err) {
    case REDIS_ERR_IO:
      // A socket timeout (SO_RCVTIMEO/SO_SNDTIMEO) surfaces as EAGAIN; hiredis's own
      // connect timeout sets ETIMEDOUT. errstr is the fallback in case errno was lost.
      if (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT || errstr == std::strerror(ETIMEDOUT) ||
          errstr == std::strerror(EAGAIN)) {
        throw TimeoutError(who + ": timed out after " + std::to_string(timeout.count()) + "ms");
      }
      if (err != 0) throw IoError(who + ": " + errstr + " (errno " + std::to_string(err) + ")");
      throw IoError(who + ": " + errstr);
    case REDIS_ERR_EOF:
      throw ClosedError(who + ": connection closed by server");
    case REDIS_ERR_PROTOCOL:
      throw IoError(who + ": protocol error: " + errstr);
    case 0:
      throw IoError(who + ": out of memory");
    default:  // REDIS_ERR_OTHER (e.g. name resolution), REDIS_ERR_OOM
      throw IoError(who + ": " + errstr);
  }
}

ReplyPtr run_argv(redisContext* c, const std::vector<std::string>& argv, int* err) {
  ArgvView view(argv);
  detail::SigpipeGuard guard;
  errno = 0;
  void* raw = redisCommandArgv(c, view.argc(), view.ptrs.data(), view.lens.data());
  *err = errno;
  return ReplyPtr(static_cast<redisReply*>(raw));
}

bool send_argv(redisContext* c, const std::vector<std::string>& argv, int* err) {
  ArgvView view(argv);
  detail::SigpipeGuard guard;
  errno = 0;
  if (redisAppendCommandArgv(c, view.argc(), view.ptrs.data(), view.lens.data()) != REDIS_OK) {
    *err = errno;
    return false;
  }
  // The socket is blocking with SO_SNDTIMEO, so each write either makes progress or
  // times out; a command is small, so this normally takes one write.
  int done = 0;
  while (!done) {
    errno = 0;
    if (redisBufferWrite(c, &done) != REDIS_OK) {
      *err = errno;
      return false;
    }
  }
  return true;
}

ContextPtr open_context(const ConnectionOptions& options) {
  const std::string who = describe(options.endpoint);
  const Endpoint& ep = options.endpoint;
  // A zero timeval would make hiredis poll() with 0 ms, i.e. fail at once: 0 means "no
  // timeout", which is the plain blocking connect.
  const bool timed = options.connect_timeout.count() > 0;
  const timeval ctv = to_timeval(options.connect_timeout);
  ContextPtr c;
  errno = 0;
  if (ep.kind == Endpoint::Kind::kUnix) {
    c.reset(timed ? redisConnectUnixWithTimeout(ep.path.c_str(), ctv) : redisConnectUnix(ep.path.c_str()));
  } else {
    c.reset(timed ? redisConnectWithTimeout(ep.host.c_str(), ep.port, ctv) : redisConnect(ep.host.c_str(), ep.port));
  }
  int err = errno;
  if (!c || c->err) throw_context_error(c.get(), err, who, options.connect_timeout);

  // hiredis 0.14 cannot create the socket with SOCK_CLOEXEC; close the window as early
  // as we can so a child forked by another thread does not inherit the connection.
  try {
    set_cloexec(c->fd);
  } catch (const Error& e) {
    throw IoError(who + ": " + e.what());
  }
  // Always set it: 0 clears any socket timeout (block forever), as documented.
  if (redisSetTimeout(c.get(), to_timeval(options.io_timeout)) != REDIS_OK) {
    throw_context_error(c.get(), errno, who, options.io_timeout);
  }
  if (ep.kind == Endpoint::Kind::kTcp && options.keepalive && redisEnableKeepAlive(c.get()) != REDIS_OK) {
    throw_context_error(c.get(), errno, who, options.io_timeout);
  }

  if (!options.password.empty()) {
    std::vector<std::string> argv{"AUTH"};
    if (!options.username.empty()) argv.push_back(options.username);
    argv.push_back(options.password);
    ReplyPtr r = run_argv(c.get(), argv, &err);
    if (!r) throw_context_error(c.get(), err, who, options.io_timeout);
    // Redis's message (WRONGPASS ...) never echoes the password; neither do we.
    if (is_error(r)) {
      std::string user = options.username.empty() ? "" : " as user " + options.username;
      throw ReplyError(who + ": AUTH failed" + user + ": " + reply_text(r.get()));
    }
  }
  if (options.db != 0) {
    ReplyPtr r = run_argv(c.get(), {"SELECT", std::to_string(options.db)}, &err);
    if (!r) throw_context_error(c.get(), err, who, options.io_timeout);
    if (is_error(r)) throw ReplyError(who + ": SELECT " + std::to_string(options.db) + " failed: " + reply_text(r.get()));
  }
  return c;
}

}  // namespace detail

// -------------------------------------------------------------------------- Connection

Connection::Connection(ConnectionOptions options) : options_(std::move(options)) {}
Connection::~Connection() = default;
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;

std::string Connection::describe() const { return detail::describe(options_.endpoint); }

int Connection::fd() const noexcept { return ctx_ ? ctx_->fd : -1; }

void Connection::connect() {
  if (!ctx_) ctx_ = detail::open_context(options_);
}

void Connection::disconnect() noexcept {
  ctx_.reset();
  pending_ = false;
  pending_retried_ = false;
  pending_script_load_ = false;
}

void Connection::ensure_connected() {
  // A reply still in flight would be read as the answer to the next command.
  if (pending_) disconnect();
  connect();
}

void Connection::fail(int err, Millis timeout) {
  // The context is unusable after any I/O or protocol error (hiredis README): drop it so
  // the next command reconnects. It lives until the message has been built.
  ContextPtr dead = std::move(ctx_);
  pending_ = false;
  pending_retried_ = false;
  pending_script_load_ = false;
  detail::throw_context_error(dead.get(), err, describe(), timeout);
}

ReplyPtr Connection::run(const std::vector<std::string>& argv) {
  ensure_connected();
  int err = 0;
  ReplyPtr r = detail::run_argv(ctx_.get(), argv, &err);
  if (!r) fail(err, options_.io_timeout);
  return r;
}

Reply Connection::command(const std::vector<std::string>& argv) {
  ReplyPtr r = run(argv);
  if (is_error(r)) throw ReplyError(describe() + ": " + reply_text(r.get()));
  return Reply(std::move(r));
}

const std::string& Connection::script_sha(std::string_view source) {
  if (auto it = sha_by_source_.find(source); it != sha_by_source_.end()) return it->second;
  ReplyPtr r = run({"SCRIPT", "LOAD", std::string(source)});
  if (is_error(r)) throw ReplyError(describe() + ": SCRIPT LOAD failed: " + reply_text(r.get()));
  if (r->type != REDIS_REPLY_STRING) {
    throw IoError(describe() + ": SCRIPT LOAD returned " + type_name(r.get()) + ", expected a SHA1");
  }
  return sha_by_source_.emplace(std::string(source), reply_text(r.get())).first->second;
}

Reply Connection::eval(const Script& script, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args) {
  const std::string& sha = script_sha(script.source);
  ReplyPtr r = run(eval_argv("EVALSHA", sha, keys, args));
  if (is_noscript(r)) r = run(eval_argv("EVAL", script.source, keys, args));  // also caches it server-side
  if (is_error(r)) throw ReplyError(describe() + ": " + reply_text(r.get()));
  return Reply(std::move(r));
}

void Connection::append_and_flush(const std::vector<std::string>& argv) {
  int err = 0;
  if (!detail::send_argv(ctx_.get(), argv, &err)) fail(err, options_.io_timeout);
}

void Connection::send_eval(const Script& script, const std::vector<std::string>& keys,
                           const std::vector<std::string>& args) {
  ensure_connected();
  pending_source_.assign(script.source);
  pending_keys_ = keys;
  pending_args_ = args;
  pending_retried_ = false;
  pending_script_load_ = false;
  if (auto it = sha_by_source_.find(script.source); it != sha_by_source_.end()) {
    append_and_flush(eval_argv("EVALSHA", it->second, keys, args));
  } else {
    // First use on this connection: SCRIPT LOAD (to learn the SHA for later EVALSHA) and
    // EVAL go out together, so this call never waits for a reply: the caller's poll()
    // stays the only place that waits, and it can be cancelled there.
    pending_script_load_ = true;
    append_and_flush({"SCRIPT", "LOAD", pending_source_});
    append_and_flush(eval_argv("EVAL", pending_source_, keys, args));
  }
  pending_ = true;
}

std::optional<Reply> Connection::read_reply() {
  if (!pending_ || !ctx_) throw Error(describe() + ": read_reply() without a send_eval() in flight");
  bool read_once = false;
  for (;;) {
    void* raw = nullptr;
    errno = 0;
    if (redisGetReplyFromReader(ctx_.get(), &raw) != REDIS_OK) fail(errno, options_.io_timeout);
    if (!raw) {
      // At most one read(): the caller saw POLLIN, so it returns at once.
      if (read_once) return std::nullopt;
      read_once = true;
      errno = 0;
      if (redisBufferRead(ctx_.get()) != REDIS_OK) fail(errno, options_.io_timeout);
      continue;
    }
    ReplyPtr r(static_cast<redisReply*>(raw));
    if (pending_script_load_) {
      // The SCRIPT LOAD sent with the first EVAL: remember the SHA; an error here is not
      // fatal (the EVAL that follows still runs the script).
      pending_script_load_ = false;
      if (r->type == REDIS_REPLY_STRING) sha_by_source_.emplace(pending_source_, reply_text(r.get()));
      continue;
    }
    if (is_noscript(r) && !pending_retried_) {
      // Restarted or flushed server: send the source once; the caller keeps polling.
      pending_retried_ = true;
      append_and_flush(eval_argv("EVAL", pending_source_, pending_keys_, pending_args_));
      return std::nullopt;
    }
    pending_ = false;
    if (is_error(r)) throw ReplyError(describe() + ": " + reply_text(r.get()));
    return Reply(std::move(r));
  }
}

}  // namespace redisgo::redis
