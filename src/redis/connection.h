#pragma once
/// One Redis node as a non-blocking state machine (docs/DESIGN.md "Layers"):
///
///   idle -> resolving -> connecting -> handshake (TLS) -> open
///
/// Commands are queued at once and answered in order (RESP pipelining); on a new
/// connection AUTH and SELECT go first, on the same write: a (re)connect costs no extra
/// round trip and no blocking step. A script runs as EVAL until an EVAL of it has been
/// answered on the connection (which cached it on the server) and as EVALSHA after. An
/// EVALSHA that meets NOSCRIPT with nothing sent behind it is sent again as EVAL; with
/// commands pipelined behind it, it is a failed call and a fresh connection, never a retry
/// that could make an acquire run after its own undo. The owner
/// drives it from its own poll() loop: fd()/events() say what to wait for, on_ready()
/// does the I/O, check_deadlines() enforces the timeouts. Nothing here ever blocks.
///
/// The connection set-up is bounded by connect_timeout, and every reply by io_timeout
/// from when its command went out (when the connection opened, for commands queued
/// while it was being set up). A call that misses its deadline drops the connection and
/// fails every call on it: replies come back in order, so a late reply could otherwise be
/// taken for a later command's. After any error the connection is closed; the next send()
/// reconnects (redis-plus-plus Connection::broken()).
///
/// Failures carry a Fault (why: refused, timeout, auth, ...) and a message that starts
/// with the node ("redis 127.0.0.1:6379: ..."); the password never appears in one.
/// Not thread-safe: each thread owns its connections.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redis/call.h"
#include "redis/endpoint.h"
#include "redis/link.h"
#include "redis/reply.h"
#include "redis/transport.h"

namespace redisgo::redis {

/// Makes the Transport for a freshly connected socket (TLS); null means plain TCP/unix.
class TransportFactory {
 public:
  virtual ~TransportFactory() = default;
  virtual std::unique_ptr<Transport> make(UniqueFd fd, const Endpoint& endpoint) const = 0;
};


/// The Link of sockets (redis/link.h): a TCP, unix or TLS connection under a poll() loop.
class AsyncConnection final : public Link {
 public:
  explicit AsyncConnection(ConnectionOptions options);
  ~AsyncConnection() override;
  AsyncConnection(AsyncConnection&&) noexcept;
  AsyncConnection& operator=(AsyncConnection&&) noexcept;
  AsyncConnection(const AsyncConnection&) = delete;
  AsyncConnection& operator=(const AsyncConnection&) = delete;

  /// Queues a command (argv form); starts connecting if needed. Never throws for a node
  /// failure: the call fails instead (possibly already when this returns).
  CallPtr send(std::vector<std::string> argv) override;
  /// A command that blocks on the server for up to `blocks` (WAIT, WAITAOF): its reply is
  /// given io_timeout plus that long.
  CallPtr send(std::vector<std::string> argv, Millis blocks) override;
  /// `script` with these keys and args: EVAL until one has run on this connection, EVALSHA after.
  CallPtr eval(const Script& script, const std::vector<std::string>& keys,
               const std::vector<std::string>& args) override;

  /// What to poll: the fd (-1: nothing) and its events.
  int fd() const noexcept;
  short events() const noexcept;
  /// Earliest instant at which check_deadlines() has something to do: a timeout to
  /// enforce, or (at once) bytes already decrypted inside the TLS layer, which poll()
  /// cannot report.
  SteadyClock::time_point next_deadline() const noexcept;
  /// Does the I/O that poll() reported (`revents` of fd()). Never throws.
  void on_ready(short revents) noexcept;
  /// Reads what the TLS layer holds already decrypted, and closes the connection (failing
  /// its calls) if a deadline has passed. Never throws.
  void check_deadlines(SteadyClock::time_point now) noexcept;

  /// A call outstanding, or a connection being set up.
  bool busy() const noexcept override;
  /// Open, with bytes queued that the socket has not taken yet.
  bool unsent() const noexcept override { return state_ == State::kOpen && out_offset_ < out_.size(); }
  /// Connected (the socket is up, AUTH may still be in flight).
  bool connected() const noexcept override { return state_ != State::kIdle; }
  /// Fails every outstanding call with `fault`/`why` and closes the socket. Never throws.
  void close(Fault fault, const std::string& why) noexcept;

  /// "redis 127.0.0.1:6379": the prefix of every message (with a locator: the server
  /// connected to and the locator's name, "redis 10.0.0.5:6379 (master 'mymaster')").
  std::string describe() const override;
  /// The server connected to (or last tried); with a locator, empty until located.
  const Endpoint& current() const noexcept override { return current_; }
  /// Connected under a locator answer that has changed since (a failover, a MOVED): the
  /// next command reconnects first.
  bool stale() const noexcept;
  const ConnectionOptions& options() const noexcept override { return options_; }
  /// The cause of the last close(), kNone if it never failed.
  Fault last_fault() const noexcept { return last_fault_; }
  /// The peer line of the transport (TLS certificate), while open; "" otherwise.
  std::string peer_info() const override;

  /// Pub/sub: after a SUBSCRIBE call succeeded, messages ("message" pushes) collect here.
  struct Message {
    std::string channel;
    std::string payload;
  };
  bool subscribed() const noexcept { return subscribed_; }
  std::vector<Message> take_messages();

 private:
  bool buffered() const noexcept;
  enum class State { kIdle, kResolving, kConnecting, kHandshake, kOpen };
  enum class Kind { kUser, kAuth, kSelect, kScriptLoad, kRole };
  struct Pending {
    CallPtr call;
    SteadyClock::time_point deadline;
    Kind kind;
    /// A command that blocks on the server (WAIT, WAITAOF): when it may end at the latest.
    SteadyClock::time_point blocked_until{};
    const Script* script = nullptr;   // a script call (EVAL or EVALSHA)
    std::vector<std::string> by_sha;  // an EVALSHA's argv, to send as EVAL if the server lost it
  };

  CallPtr submit(std::vector<std::string> argv, const Script* script, Millis blocks = Millis(0));
  void begin_connect();
  void after_resolution();
  void connect_next_address();
  void socket_connected();
  void continue_handshake();
  void enqueue(std::vector<std::string> argv, Kind kind, CallPtr call, SteadyClock::time_point deadline,
               SteadyClock::time_point blocked_until = {});
  void flush();
  void read_available();
  void dispatch(ReplyPtr reply);
  /// A reply to the connection's own set-up (AUTH, SELECT, SCRIPT LOAD, ROLE): an error closes
  /// the connection; AUTH's OK lets the commands held behind it go.
  void setup_answered(Kind kind, const Reply& reply, bool error, const std::string& text, const std::string& shown);
  /// A script call's reply: notes the script as cached once it ran; sends a lone EVALSHA
  /// that met NOSCRIPT again as EVAL (true: the call is pending again).
  bool script_answered(Pending& p, bool error, const std::string& text);
  void fail_with(const std::exception& e, Fault during);
  /// close() without telling on_fault: a failure already told, or none of the server's.
  void reset(Fault fault, const std::string& why) noexcept;
  /// Tells on_fault of a failure (not of kNone or kCancelled).
  void report(Fault fault) noexcept;
  /// AUTH was refused: when the credentials have a newer password, starts over on a new
  /// connection that sends it, the caller's commands kept in order behind it. Once per
  /// connection the caller opened. False: the refusal stands.
  bool retry_auth();
  /// With a locator: tells it the server failed us in a way that may mean it moved.
  void report_wrong(Fault fault, const std::string& why) noexcept;

  ConnectionOptions options_;
  Endpoint current_;             // the server of this connection (options_.endpoint without a locator)
  std::uint64_t generation_ = 0; // the locator's generation when it was asked
  State state_ = State::kIdle;
  std::deque<Pending> pending_;
  std::string out_;
  std::size_t out_offset_ = 0;
  /// With a password, the caller's commands wait here until AUTH has answered OK: a server
  /// without a password answers a pipelined AUTH with an error and then runs what follows
  /// (an acquire that takes the lease for a daemon that has already given the connection up).
  std::string held_;
  bool auth_gate_ = false;
  std::string auth_password_;          // what the last AUTH sent (masked in any text we pass on)
  std::uint64_t auth_generation_ = 0;  // its generation in options_.credentials
  bool auth_retried_ = false;          // retry_auth() has been used for this connection
  short transport_wants_ = 0;   // an extra event the transport asked for (TLS)
  std::shared_ptr<Resolution> resolution_;
  std::vector<SocketAddress> addresses_;
  std::size_t next_address_ = 0;
  std::string last_connect_error_;
  UniqueFd connecting_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<ReplyReader> reader_;
  SteadyClock::time_point connect_deadline_{};
  bool subscribed_ = false;
  std::vector<Message> messages_;
  std::vector<std::string_view> loaded_;  // sources of the scripts an EVAL here has run
  Fault last_fault_ = Fault::kNone;
};

}  // namespace redisgo::redis
