#pragma once
/// Byte streams to a Redis node, all non-blocking and close-on-exec from birth, so that
/// one poll() loop can drive every node at once (docs/DESIGN.md "Layers"): name resolution off
/// the caller's thread, a non-blocking connect, and a Transport that reads and writes
/// without blocking and says which poll event it waits for. A TLS transport plugs in
/// under the same interface (its handshake is one more step before the stream is ready).

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "redis/endpoint.h"
#include "util/socket_address.h"
#include "util/unique_fd.h"

namespace redisgo::redis {


/// A name lookup in progress. Numeric addresses and unix paths are done at once; a host
/// name is looked up by getaddrinfo() on a detached thread (it can block for seconds when
/// DNS is down, and a stop must not wait for it), which signals fd() when done. Dropping
/// the last reference abandons the lookup; the thread then finishes on its own.
///
/// A locator (redis/topology.h) hands out deferred ones: "which server" is answered by
/// another thread (the sentinels, the cluster's slot map) through settle() or fail().
/// Why a deferred resolution failed: the sources could not be reached or did not agree
/// (kUnreachable), or they refused our credentials (kAuth) or TLS verification (kTls),
/// which the connection reports as such (exit 77), not as an unreachable server.
enum class ResolveFailure { kUnreachable, kAuth, kTls };

class Resolution {
 public:
  static std::shared_ptr<Resolution> start(const Endpoint& endpoint);
  /// Not done until settle() or fail() is called (from any thread).
  static std::shared_ptr<Resolution> deferred();
  /// Readable once done(); -1 when it was done at once.
  int fd() const noexcept { return event_.get(); }
  bool done() const;
  /// After done(): the addresses (in getaddrinfo's order) or, if none, why.
  std::vector<SocketAddress> addresses() const;
  std::string error() const;
  /// The server it is for (a deferred one: as settled).
  Endpoint endpoint() const;
  /// Deferred: the server is `endpoint`; its addresses are looked up by the caller of
  /// addresses() (empty with no error means "resolve endpoint() yourself").
  void settle(const Endpoint& endpoint);
  /// Deferred: no server can be named; `why` says so.
  void fail(const std::string& why, ResolveFailure kind = ResolveFailure::kUnreachable);
  ResolveFailure failure() const;

 private:
  void finish(std::vector<SocketAddress> addresses, std::string error);
  mutable std::mutex mu_;
  bool done_ = false;
  Endpoint endpoint_;
  std::vector<SocketAddress> addresses_;
  std::string error_;
  ResolveFailure failure_ = ResolveFailure::kUnreachable;
  UniqueFd event_;
};

/// Creates a SOCK_NONBLOCK | SOCK_CLOEXEC socket and starts connecting it. Returns the
/// socket; *in_progress says whether connect_finished() must be awaited (POLLOUT).
/// Throws IoError ("<who>: <strerror>") on an immediate failure.
UniqueFd start_connect(const SocketAddress& address, bool keepalive, bool* in_progress, const std::string& who);
/// After POLLOUT on a socket from start_connect(): throws IoError if the connect failed.
void connect_finished(int fd, const std::string& who);

/// A connected byte stream. read()/write() never block: 0 means "would block", and
/// *want says which poll event to wait for. EOF is ClosedError, other failures IoError.
class Transport {
 public:
  explicit Transport(UniqueFd fd) : fd_(std::move(fd)) {}
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int fd() const noexcept { return fd_.get(); }
  /// Continues setting up the stream once the socket is connected (the TLS handshake).
  /// Returns the poll events still awaited, 0 once ready. Throws.
  virtual short handshake() { return 0; }
  virtual std::size_t read(char* buf, std::size_t n, short* want);
  virtual std::size_t write(const char* buf, std::size_t n, short* want);
  /// Data already decrypted and buffered inside the transport, which poll() cannot see.
  virtual bool has_buffered() const { return false; }
  /// A line about the peer for `check` (TLS: certificate subject and expiry); "" if none.
  virtual std::string peer_info() const { return {}; }

 protected:
  UniqueFd fd_;
};

}  // namespace redisgo::redis
