#pragma once
/// The simulated network and Redis nodes (docs/DESIGN.md "Simulation"): every simulated Redis
/// node is a sim::Node (tests/sim: the real scripts in Lua 5.1 with Redis's semantics) on a
/// simulated clock, and every client connection to one is a Wire, which behaves as a TCP
/// connection under AsyncConnection does:
///  - requests are delivered in order and replies come back in order (TCP), each message after
///    a transit time drawn per message; connections are independent, so two connections' messages
///    reorder freely;
///  - a connection is made on first use (a round trip), refused while its node is down, and given
///    up at connect_timeout when nothing answers;
///  - every call has io_timeout from when it went out; one that misses it closes the connection
///    and fails every call on it (the client's own timer: frozen with its process);
///  - a partition between a host and a node holds the messages sent across it (TCP retransmits)
///    and delivers them once it heals: the client has long timed out, and the server runs the
///    stale request all the same;
///  - a lost message is, at random, late by more than io_timeout or gone, and the connection with
///    it (what follows it on that connection never arrives): either way the client times out;
///  - a node crash resets its connections (the client hears of it one transit later, unless a
///    partition holds the reset back) and refuses new ones until it restarts empty.
/// Pub/sub: what a node pushes to a subscribed connection travels as its replies do.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis/connection.h"
#include "sim/node.h"
#include "simulator/world.h"

namespace redisgo::simulator {

class Wire;

/// One simulated host's connection faults and transit times to one node.
struct Link {
  Time partitioned_until = 0;  ///< messages sent before then arrive after it
  Time slow_until = 0;         ///< until then, each message takes up to slow_extra more
  Time slow_extra = 0;
  int loss_per_mille = 0;      ///< per message: late past io_timeout, or gone with its connection
  Time lossy_until = 0;
};

struct NetworkSettings {
  Time transit_min = 50;   ///< µs, one way
  Time transit_max = 800;
};

class Network {
 public:
  /// `node_wall_offsets_us`: each node's wall clock against the simulated epoch.
  Network(World& world, int hosts, std::vector<std::int64_t> node_wall_offsets_us, NetworkSettings settings = {});
  ~Network();

  World& world() { return world_; }
  int nodes() const { return static_cast<int>(sites_.size()); }
  sim::Node& node(int i);
  /// The node is serving (not crashed, or restarted).
  bool up(int i) const;

  Link& link(int host, int node) { return links_[static_cast<std::size_t>(host * nodes() + node)]; }
  /// A message's arrival time if sent now from `host` to `node` (or back): kNever when lost
  /// outright. `io_timeout` is how late a late message is at least.
  Time arrival(int host, int node, Time io_timeout);

  /// Faults.
  void partition(int host, int node, Time until);
  void crash(int node, Time down_for);
  /// Ends every fault now (partitions, slowness, loss; crashed nodes stay down until their
  /// restart time).
  void heal();
  /// The last instant a fault set so far ends (a crashed node's restart included).
  Time faults_end() const { return faults_end_; }
  /// Nodes that restarted empty in this run so far.
  int restarts() const { return restarts_; }
  /// An operator's `DEL` of `keys` on a serving node, from a connection of its own (no host's
  /// link: it is not delayed, and no client hears of it). Returns the string values it deleted.
  std::vector<std::string> operator_delete(int node, const std::vector<std::string>& keys);

  /// Commands run on the nodes (scripts count once).
  std::uint64_t commands() const { return commands_; }

  /// A script text that a mutant replaces (docs/DESIGN.md "Simulation", mutants): EVAL of
  /// `from` runs `to` on every node.
  void rewrite_script(std::string from, std::string to);

 private:
  friend class Wire;
  struct Site;
  /// Runs argv on the node for the connection `client` of `wire` (incarnation checked by
  /// the caller) and hands what it pushed to the subscribed wires.
  sim::Resp run(int node, int host, sim::Node::ClientId client, std::vector<std::string> argv);
  /// What a trace line says of a command: the script's file name for an EVAL, else argv.
  std::string describe_command(const std::vector<std::string>& argv) const;
  void deliver_pushes(int node);
  void attach(Wire* w);
  void detach(Wire* w);
  void sync_clock(int node);
  void note_fault_end(Time t) { faults_end_ = std::max(faults_end_, t); }

  World& world_;
  int hosts_;
  NetworkSettings settings_;
  std::vector<std::unique_ptr<Site>> sites_;
  std::vector<Link> links_;
  Time faults_end_ = 0;
  int restarts_ = 0;
  std::uint64_t commands_ = 0;
  std::vector<std::pair<std::string, std::string>> rewrites_;
};

/// One call on a Wire: pending until its reply comes or its connection fails.
struct WireCall {
  enum class State { kPending, kReplied, kFailed };
  State state = State::kPending;
  sim::Resp reply;
  redis::Fault fault = redis::Fault::kNone;
  std::string error;
  /// Called once when it completes (the seam completes its redis::Call there).
  std::function<void(WireCall&)> on_done;
  bool done() const { return state != State::kPending; }
};
using WireCallPtr = std::shared_ptr<WireCall>;

struct WireOptions {
  Time connect_timeout = 500 * kMs;
  Time io_timeout = 500 * kMs;
};

/// A client's connection to one node (see Network).
class Wire {
 public:
  /// `client`: the process whose timers enforce the timeouts (frozen with it).
  Wire(Network& net, int host, int node, Process* client, WireOptions options);
  ~Wire();
  Wire(const Wire&) = delete;
  Wire& operator=(const Wire&) = delete;

  /// Queues a command; connects first if needed. The call may already have failed.
  WireCallPtr send(std::vector<std::string> argv);
  /// Connected or connecting (as AsyncConnection::connected: not idle).
  bool connected() const { return state_ != State::kIdle; }
  bool open() const { return state_ == State::kOpen; }
  /// A call outstanding or a connection being made.
  bool busy() const { return state_ == State::kConnecting || !pending_.empty(); }
  /// Fails every outstanding call with `fault` and drops the connection.
  void close(redis::Fault fault, const std::string& why);
  /// The fiber to notify of every change (a reply, a failure, a push); null: none.
  void set_listener(Fiber* f) { listener_ = f; }
  /// The pushes received (pub/sub messages, subscription confirmations) since the last take.
  std::vector<sim::Resp> take_pushes();
  bool has_pushes() const { return !pushes_.empty(); }
  /// The connection was closed by a failure since this was last called (one per failure).
  bool take_failed();
  redis::Fault last_fault() const { return last_fault_; }
  const std::string& last_error() const { return last_error_; }
  int node() const { return node_; }
  int host() const { return host_; }
  /// "redis node2:6379", the prefix of every message.
  const std::string& describe() const { return name_; }
  /// The server's ClientId of the current connection (meaningful while open).
  sim::Node::ClientId server_client() const { return server_client_; }
  int incarnation() const { return incarnation_; }

 private:
  friend class Network;
  enum class State { kIdle, kConnecting, kOpen };
  struct Pending {
    std::vector<std::string> argv;
    WireCallPtr call;
    Time deadline = kNever;  // set when it goes out
    bool sent = false;
  };
  void begin_connect();
  void connected_at_server(std::uint64_t generation);
  void opened(sim::Node::ClientId id, int incarnation);
  void transmit(Pending& p);
  void reply_arrived(std::uint64_t generation, sim::Resp reply);
  void push_arrived(std::uint64_t generation, std::vector<sim::Resp> pushes);
  void reset_by_server(std::uint64_t generation, const std::string& why);
  void check_deadline(std::uint64_t generation);
  /// One message to the node or back: its arrival instant, in order on this connection.
  Time to_server();
  Time to_client();
  void changed();

  Network& net_;
  int host_;
  int node_;
  Process* client_;
  WireOptions options_;
  std::string name_;
  State state_ = State::kIdle;
  std::uint64_t generation_ = 0;  // one per connection made: events of an older one are stale
  sim::Node::ClientId server_client_ = 0;
  int incarnation_ = -1;          // the node's incarnation this connection reached
  std::deque<Pending> pending_;   // sent or queued, in order; the front is answered next
  bool subscriber_ = false;       // a SUBSCRIBE went out on this connection: pushes come
  Time up_last_ = 0;              // last arrival at the server (TCP order)
  Time down_last_ = 0;            // last arrival at the client
  std::vector<sim::Resp> pushes_;
  bool failed_ = false;
  redis::Fault last_fault_ = redis::Fault::kNone;
  std::string last_error_;
  Fiber* listener_ = nullptr;
  std::shared_ptr<Wire*> handle_;  // what events hold: null once this Wire is gone
};

}  // namespace redisgo::simulator
