#pragma once
/// RAII over a hiredis 0.14 synchronous context (STYLE.md "Redis").
///
/// - Connects with redisConnectWithTimeout / redisConnectUnixWithTimeout, then sets
///   FD_CLOEXEC (0.14 has no REDIS_OPT_SET_SOCK_CLOEXEC), the I/O timeout and TCP keepalive.
/// - AUTH (password, or ACL username + password) and SELECT db on every (re)connect.
/// - After any I/O or protocol error the context is unusable: it is dropped and the next
///   command reconnects (redis-plus-plus Connection::broken()).
/// - Errors are thrown as IoError / TimeoutError / ClosedError / ReplyError, with the
///   node's address and Redis's own message; the password never appears in one.
/// - Not thread-safe: one Connection per thread.

#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace redisgo::redis {

using Millis = std::chrono::milliseconds;

/// A node address: "host:port" (IPv4, hostname or [IPv6]:port) or "unix:///path".
struct Endpoint {
  enum class Kind { kTcp, kUnix };
  Kind kind = Kind::kTcp;
  std::string host;   ///< kTcp
  int port = 0;       ///< kTcp
  std::string path;   ///< kUnix
  /// Parses; on failure returns nullopt and sets *why ("port out of range", ...).
  static std::optional<Endpoint> parse(std::string_view text, std::string* why = nullptr);
  /// Printable form, as it was given ("127.0.0.1:6379", "unix:///run/redis.sock").
  std::string str() const;
};

/// Settings of one connection (defaults as in SPEC.md).
struct ConnectionOptions {
  Endpoint endpoint;
  Millis connect_timeout{500};  ///< 0 means no timeout (block)
  Millis io_timeout{500};       ///< per command; 0 means no timeout (block forever)
  std::string username;         ///< empty: AUTH <password> (pre-ACL form)
  std::string password;         ///< empty: no AUTH. Secret: never logged.
  int db = 0;                   ///< SELECT when non-zero
  bool keepalive = true;
};

struct ContextDeleter {
  void operator()(redisContext* c) const noexcept { redisFree(c); }
};
struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

/// An owned reply. Error replies never reach the caller as Reply: they are thrown as
/// ReplyError by Connection::command().
class Reply {
 public:
  Reply() = default;
  explicit Reply(ReplyPtr r) : r_(std::move(r)) {}
  const redisReply* get() const { return r_.get(); }
  const redisReply* operator->() const { return r_.get(); }
  bool is_nil() const { return r_ && r_->type == REDIS_REPLY_NIL; }
  bool is_integer() const { return r_ && r_->type == REDIS_REPLY_INTEGER; }
  bool is_string() const { return r_ && (r_->type == REDIS_REPLY_STRING || r_->type == REDIS_REPLY_STATUS); }
  bool is_array() const { return r_ && r_->type == REDIS_REPLY_ARRAY; }
  std::int64_t integer() const;      ///< throws ReplyError if not an integer
  std::string str() const;           ///< throws ReplyError if not a string/status
  std::size_t size() const;          ///< array length; 0 if not an array
  /// Element i of an array reply, as a borrowed pointer (lifetime of this Reply).
  const redisReply* element(std::size_t i) const;

 private:
  ReplyPtr r_;
};

/// A Lua script with its SHA1, loaded lazily per connection.
struct Script {
  std::string_view source;
};

class Connection {
 public:
  explicit Connection(ConnectionOptions options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&&) noexcept;
  Connection& operator=(Connection&&) noexcept;

  /// Connects now if not connected (throws). Commands connect lazily anyway.
  void connect();
  /// Drops the context; the next command reconnects.
  void disconnect() noexcept;
  bool connected() const noexcept { return ctx_ != nullptr; }

  /// Runs one command in argv form. Throws on I/O error (and drops the context) or on
  /// an error reply (ReplyError; the context stays usable).
  Reply command(const std::vector<std::string>& argv);

  /// Runs `script` with EVALSHA (SHA from SCRIPT LOAD, cached per connection); on
  /// NOSCRIPT (a restarted Redis) falls back to EVAL, which also re-caches it.
  Reply eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string>& args);

  /// Pipelined variant for quorum operations across many connections at once:
  /// send_eval() writes the command without waiting; the caller then polls fd() and
  /// calls read_reply() (see lock/redlock). Both throw like command().
  void send_eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string>& args);
  /// Reads the reply of a send_eval() if complete. Returns nullopt if more bytes are
  /// needed (poll fd() for POLLIN and call again). Handles NOSCRIPT by re-sending with
  /// EVAL transparently (then returns nullopt until that reply arrives).
  std::optional<Reply> read_reply();
  /// The socket, or -1 when not connected.
  int fd() const noexcept;

  const ConnectionOptions& options() const { return options_; }
  /// "redis 127.0.0.1:6379" — used as the prefix of every error message.
  std::string describe() const;

 private:
  ConnectionOptions options_;
  ContextPtr ctx_;
  std::unordered_map<std::string_view, std::string> sha_by_source_;  // keyed by source address
  // state for send_eval/read_reply NOSCRIPT fallback
  const Script* pending_script_ = nullptr;
  std::vector<std::string> pending_keys_, pending_args_;
};

}  // namespace redisgo::redis
