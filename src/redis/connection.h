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
#include <signal.h>

#include <chrono>
#include <functional>
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
  ///
  /// Reads at most once from the socket per call, and only if no complete reply is
  /// already buffered: call it when poll() reported POLLIN on fd(), or right after
  /// send_eval(). Called without POLLIN it blocks for up to io_timeout (the socket is
  /// blocking with SO_RCVTIMEO) and then throws TimeoutError.
  /// An error reply is thrown as ReplyError (the context stays usable).
  std::optional<Reply> read_reply();
  /// True between send_eval() and the read_reply() that returns or throws its reply.
  /// Any other command while a reply is pending drops the connection first (the stale
  /// reply could otherwise be taken for the new command's).
  bool reply_pending() const noexcept { return pending_; }
  /// The socket, or -1 when not connected.
  int fd() const noexcept;

  const ConnectionOptions& options() const { return options_; }
  /// "redis 127.0.0.1:6379" — used as the prefix of every error message.
  std::string describe() const;

 private:
  // Transparent hashing so a string_view source finds its owned key without a copy.
  struct SourceHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  void ensure_connected();
  const std::string& script_sha(std::string_view source);
  ReplyPtr run(const std::vector<std::string>& argv);
  void append_and_flush(const std::vector<std::string>& argv);
  [[noreturn]] void fail(int err, Millis timeout);

  ConnectionOptions options_;
  ContextPtr ctx_;
  // source text -> SHA1 from SCRIPT LOAD. Kept across reconnects on purpose: the SHA is a
  // property of the text, and a restarted server answers NOSCRIPT, which falls back to
  // EVAL (issue: "a restarted Redis has none"); a server that merely dropped our socket
  // still has the script and EVALSHA just works.
  std::unordered_map<std::string, std::string, SourceHash, std::equal_to<>> sha_by_source_;
  // State of the send_eval()/read_reply() in flight, for the NOSCRIPT fallback. The
  // source is copied: the caller's Script may be a temporary.
  bool pending_ = false;
  bool pending_retried_ = false;
  bool pending_script_load_ = false;  // a SCRIPT LOAD reply comes before the EVAL's
  std::string pending_source_;
  std::vector<std::string> pending_keys_, pending_args_;
};

namespace detail {
/// Shared by Connection and Subscriber (one place for connect, AUTH, SELECT and the
/// mapping of hiredis errors to the Error tree).

/// Connects, sets FD_CLOEXEC, the I/O timeout and keepalive, AUTHs and SELECTs. Throws
/// IoError/TimeoutError/ClosedError/ReplyError prefixed by describe(endpoint).
ContextPtr open_context(const ConnectionOptions& options);
/// "redis " + endpoint.str()
std::string describe(const Endpoint& endpoint);
/// Sends argv and waits for its reply (bounded by the socket's I/O timeout), with
/// SIGPIPE suppressed for this thread. Returns the reply, which may be an error reply;
/// on an I/O or protocol error returns nullptr and stores the errno seen in *err.
ReplyPtr run_argv(redisContext* c, const std::vector<std::string>& argv, int* err);
/// Sends argv without waiting for the reply (append, then flush the output buffer), with
/// SIGPIPE suppressed. False on failure, with errno in *err (see throw_context_error).
bool send_argv(redisContext* c, const std::vector<std::string>& argv, int* err);
/// Throws the exception for c->err (after a failed hiredis call that saw errno `err`):
/// TimeoutError ("timed out after <timeout>"), IoError (errstr and errno), ClosedError
/// (EOF) or IoError (protocol). `who` is the describe() prefix.
[[noreturn]] void throw_context_error(const redisContext* c, int err, const std::string& who, Millis timeout);
/// Blocks SIGPIPE for the calling thread while alive and swallows one raised meanwhile:
/// hiredis write()s to sockets, and a peer that went away must be an error, not a kill.
class SigpipeGuard {
 public:
  SigpipeGuard() noexcept;
  ~SigpipeGuard();
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_{};
  bool was_pending_ = false;
};
}  // namespace detail

}  // namespace redisgo::redis
