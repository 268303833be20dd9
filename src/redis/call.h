#pragma once
/// What a command on one node is, whatever carries it (docs/DESIGN.md "Layers"): the node's
/// settings (ConnectionOptions), the outcome of one command (Call) and why a node could not
/// be used (Fault). A Link (redis/link.h) sends commands and completes their Calls; the
/// socket one is AsyncConnection (redis/connection.h).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "redis/endpoint.h"
#include "redis/reply.h"

namespace redisgo::redis {

using Millis = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

/// Why a node could not be used. Exit codes, log suppression (one line per cause) and
/// `status` are decided from it, never from message text.
enum class Fault {
  kNone,
  kResolve,    ///< the host name did not resolve
  kConnect,    ///< refused, unreachable, reset while connecting
  kTimeout,    ///< connect or a reply did not come within its timeout
  kClosed,     ///< the server closed or reset an open connection
  kProtocol,   ///< the bytes were not RESP (not a Redis server, or a broken one)
  kAuth,       ///< credentials refused: WRONGPASS, NOAUTH, NOPERM
  kTls,        ///< TLS handshake or certificate verification failed
  kReply,      ///< the server answered with an error (OOM, LOADING, READONLY, BUSY, ...)
  kCancelled,  ///< a stop request ended the wait
};
/// "refused", "timeout", "auth", ... (short, for logs and JSON).
const char* to_string(Fault fault);
/// The server refused our credentials (kAuth) or TLS verification failed (kTls): a setup
/// fault no retry fixes, exit 77 wherever it decides.
constexpr bool is_refusal(Fault fault) { return fault == Fault::kAuth || fault == Fault::kTls; }
/// NOAUTH / WRONGPASS / NOPERM -> kAuth; any other error reply -> kReply.
Fault classify_error_reply(std::string_view text);

/// A Lua script and its SHA-1 (what EVALSHA names it by).
/// The SHA-1 is computed on first use, not at construction: the scripts are globals, and
/// hashing all of them at every start is CPU that a run of `task -- true` pays for nothing:
/// a connection sends a script with EVAL the first time anyway, so a short run never needs
/// a SHA at all.
class Script {
 public:
  constexpr explicit Script(std::string_view src) : source(src) {}
  Script(const Script&) = delete;
  Script& operator=(const Script&) = delete;
  std::string_view source;
  /// Thread-safe (the renewal thread and the main loop share the globals).
  const std::string& sha() const;

 private:
  mutable std::once_flag sha_once_;
  mutable std::string sha_;
};

class TransportFactory;
class Locator;
class Credentials;

/// Settings of one node's connection (defaults as in the manual).
struct ConnectionOptions {
  Endpoint endpoint;            ///< the server; unused when `locator` is set
  /// Sentinel / Cluster (redis/topology.h): asked for the server at every connect; a
  /// connection made before the locator's answer changed reconnects before its next
  /// command. Shared by every connection of a process. Null: `endpoint`, fixed.
  std::shared_ptr<Locator> locator;
  Millis connect_timeout{500};  ///< name lookup + TCP connect + TLS handshake (> 0)
  Millis io_timeout{500};       ///< each reply, from when its command was sent (> 0)
  std::string username;         ///< empty: AUTH <password> (the pre-ACL form)
  std::string password;         ///< empty: no AUTH. Secret: never logged. Unused with `credentials`.
  /// A password that may change while the process runs (re-read from its file when AUTH is
  /// refused; redis/credentials.h); shared by every connection that uses it. Null: `password`.
  std::shared_ptr<Credentials> credentials;
  int db = 0;                   ///< SELECT when non-zero
  bool keepalive = true;        ///< TCP keepalive (a silent peer is noticed on idle sockets)
  /// TLS when set (redis/tls.h); shared by every connection of a process.
  std::shared_ptr<const TransportFactory> transport;
  /// Told of each failure, once: a connection that could not be made or failed (however
  /// many calls it fails), and each call answered with an error reply (but a Cluster
  /// redirect, which is followed). Never of kCancelled (our own doing). Called on the
  /// thread that drives the connection, inside it: it must be quick and not throw.
  /// Empty: nobody is told.
  std::function<void(Fault)> on_fault;
};

/// The outcome of one command. Pending until its reply arrives or its connection fails.
class Call {
 public:
  enum class State { kPending, kReplied, kFailed };
  State state() const noexcept { return state_; }
  bool done() const noexcept { return state_ != State::kPending; }
  /// Replied with a non-error reply.
  bool ok() const noexcept { return state_ == State::kReplied && !reply_.is_error(); }
  /// kReplied: the reply, which may be an error reply.
  const Reply& reply() const noexcept { return reply_; }
  /// kFailed: why; kReplied with an error reply: kAuth or kReply; else kNone.
  Fault fault() const noexcept { return fault_; }
  /// A message that names the node: the failure, or the error reply's text.
  const std::string& error() const noexcept { return error_; }

 private:
  friend class Link;  // the link the call went out on completes it (redis/link.h)
  State state_ = State::kPending;
  Reply reply_;
  Fault fault_ = Fault::kNone;
  std::string error_;
};
using CallPtr = std::shared_ptr<Call>;

}  // namespace redisgo::redis
