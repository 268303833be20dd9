#pragma once
/// The seam between the lease and the wire (docs/DESIGN.md "Layers", "The seam"): what the
/// lock layer asks of one node (a Link) and of the network that carries them all (a
/// Network: it makes the links, drives them until a round is decided, and is the clock the
/// lock layer measures retries and waits by). The process uses sockets (sockets():
/// AsyncConnection and one poll() loop, redis/poller.h); the deterministic simulator
/// delivers the same calls to simulated nodes on a simulated clock, so the lease's real
/// decisions run against its scheduler instead of the kernel's.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis/call.h"

namespace redisgo::redis {

/// One node's link: commands queued in order and answered in order (RESP pipelining), each
/// Call completed by the link when its reply comes or the link fails. Not thread-safe.
class Link {
 public:
  virtual ~Link() = default;

  /// Queues a command (argv form); connects first if needed. Never throws for a node
  /// failure: the call fails instead (possibly already when this returns).
  virtual CallPtr send(std::vector<std::string> argv) = 0;
  /// A command that blocks on the server for up to `blocks` (WAIT, WAITAOF): its reply is
  /// given io_timeout plus that long.
  virtual CallPtr send(std::vector<std::string> argv, Millis blocks) = 0;
  /// `script` with these keys and args (EVAL, or EVALSHA once the server has it).
  virtual CallPtr eval(const Script& script, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args) = 0;

  /// A call outstanding, or a connection being set up.
  virtual bool busy() const noexcept = 0;
  /// Open, with commands queued that have not gone out yet.
  virtual bool unsent() const noexcept = 0;
  /// Connected, or connecting (a command sent now is not the first of a new connection).
  virtual bool connected() const noexcept = 0;

  /// "redis 127.0.0.1:6379": the prefix of every message of this node.
  virtual std::string describe() const = 0;
  virtual const ConnectionOptions& options() const noexcept = 0;
  /// The server connected to (or last tried); with a locator, empty until located.
  virtual const Endpoint& current() const noexcept = 0;
  /// The peer line of the transport (TLS certificate), while open; "" otherwise.
  virtual std::string peer_info() const = 0;
  /// Its server is found by a locator (and so can move).
  bool located() const noexcept { return options().locator != nullptr; }

 protected:
  Link() = default;
  Link(const Link&) = default;
  Link(Link&&) noexcept = default;
  Link& operator=(const Link&) = default;
  Link& operator=(Link&&) noexcept = default;

  /// How a link completes a call (a caller only reads it). `reply` is the server's, an
  /// error reply with its `fault` (classify_error_reply) and `error`, the message that
  /// names the node ("<describe()>: <text>").
  static void replied(Call& call, Reply reply, Fault fault = Fault::kNone, std::string error = {}) noexcept {
    call.reply_ = std::move(reply);
    call.fault_ = fault;
    call.error_ = std::move(error);
    call.state_ = Call::State::kReplied;
  }
  /// No reply will come: the link failed (`error` names the node).
  static void failed(Call& call, Fault fault, std::string error) noexcept {
    call.fault_ = fault;
    call.error_ = std::move(error);
    call.state_ = Call::State::kFailed;
  }
};

struct DriveOptions {
  /// Give up waiting at this instant (the calls stay pending on their links).
  SteadyClock::time_point deadline = SteadyClock::time_point::max();
  /// Readable: stop waiting at once (the daemon's signalfd, a thread's stop eventfd). -1: none.
  int cancel_fd = -1;
  /// Called at least every `heartbeat_every` while waiting (the systemd watchdog's proof
  /// that the main loop is alive). Empty: none.
  std::function<void()> heartbeat;
  Millis heartbeat_every{1000};
};

enum class DriveEnd {
  kDone,       ///< done() returned true
  kIdle,       ///< no link has anything outstanding
  kDeadline,   ///< options.deadline passed
  kCancelled,  ///< cancel_fd became readable
};

/// The links of one process and the time they are measured by. Thread-safe: the renewal
/// thread and the main loop drive their own links through the same network.
class Network {
 public:
  virtual ~Network() = default;

  /// A link to the node of `options` (not connected yet: its first command connects). The
  /// lock layer makes every link through here, a Cluster ASK detour's too.
  virtual std::unique_ptr<Link> link(ConnectionOptions options) = 0;
  /// Drives `links` (made by this network; null entries skipped) until `done()` (checked
  /// after every step; may be empty), until none of them is busy, until the deadline, or
  /// until a cancel. Never throws for a node's failure (its calls fail instead).
  virtual DriveEnd drive(const std::vector<Link*>& links, const std::function<bool()>& done,
                         const DriveOptions& options) = 0;
  /// One look at every link without waiting: what arrived is read (an idle link whose
  /// server closed it is reset quietly, so the next command opens a fresh one), and the
  /// deadlines are enforced.
  virtual void poll_once(const std::vector<Link*>& links) noexcept = 0;
  /// The steady clock that links' deadlines, drive()'s deadline and the lock layer's
  /// per-node retry times are on.
  virtual SteadyClock::time_point now() const noexcept = 0;
  /// The wall clock (µs since the Unix epoch) as this process reads it: what a fencing
  /// token proposal is made of (lock/fencing.h).
  virtual std::int64_t wall_us() const noexcept = 0;
};

/// The process's network: AsyncConnections over sockets, driven by poll() (redis/poller.h).
/// Stateless; one for the process.
Network& sockets();

}  // namespace redisgo::redis
