#pragma once
/// A simulated Redis node for the deterministic simulator and for the Lua table tests: one
/// thread, no sockets, no wall clock. Time is what the caller says (set_now, µs since the
/// epoch), so expiry, TIME and INFO's uptime follow the simulated clock; a script runs
/// atomically (nothing else can run while a call is in progress); crash() is a restart with an
/// empty dataset (no persistence), as the restart guard has to face.
///
/// Fidelity: the commands the lease scripts and the daemon send, with Redis 7.0's replies and
/// error texts (WRONGTYPE, NOPERM for a direct call, "The user executing the script can't ..."
/// inside a script; 7.2's and later's ACL texts with NodeOptions::version), EVAL/EVALSHA/SCRIPT in an embedded Lua 5.1 with Redis's conversions
/// (sim/lua_engine.h), and pub/sub with PUBLISH's receiver count. tests/lua runs the same table
/// tests against it and a real redis-server. What it does not model is listed in
/// tests/sim/README.md.

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/resp.h"

namespace redisgo::sim {

/// An ACL user (Redis 7: `user NAME on >pass ~* &* +@all -cmd ...`). `denied` holds command
/// names in lower case, a container's subcommand as "pubsub|numsub" (denying "pubsub" denies
/// all of its subcommands). Every key is allowed; channels all (`&*`) or only those matching
/// `channels` (an empty list: `resetchannels`, Redis 7's default for a new user).
struct User {
  std::string name;
  std::string password;
  std::set<std::string> denied;
  bool all_channels = true;
  std::vector<std::string> channels;
};

struct NodeOptions {
  /// INFO's redis_version, and which ACL refusal texts: 7.0's ("can't run this command"), or
  /// from 7.2 on ("User u has no permissions to run the 'get' command"; Debian 13's 8.0).
  std::string version = "7.0.15";
  int port = 6379;                 ///< INFO's tcp_port
  std::uint64_t seed = 1;          ///< run_id's source (a new one at every restart)
};

class Node {
 public:
  using ClientId = std::uint64_t;

  explicit Node(std::int64_t now_us, NodeOptions options = {});
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// The simulated clock (µs since the epoch). It may step back as a real clock can; keys
  /// expire by it and TIME reports it.
  void set_now(std::int64_t now_us);
  std::int64_t now_us() const;
  /// When the process (re)started; INFO's uptime_in_seconds is the difference of the two
  /// clocks' whole seconds, as Redis's cached unixtime minus its start time.
  std::int64_t started_us() const;

  /// The process dies and starts again at now(): no keys, no scripts, no subscriptions, every
  /// client disconnected (calls on them fail). The ACL users stay (they are configuration).
  void crash();

  /// Adds or replaces an ACL user. The "default" user (no password, every right) exists.
  void set_user(User user);

  /// A new connection, logged in as "default".
  ClientId connect();
  void disconnect(ClientId id);
  bool connected(ClientId id) const;

  /// One command on one connection, run to completion (an EVAL runs its whole script). A call
  /// on a closed connection (crash, disconnect) answers an error starting "SIMCLOSED".
  Resp call(ClientId id, const std::vector<std::string>& argv);
  /// What the connection received besides replies, in order: ["message", channel, payload]
  /// for each PUBLISH it heard, and the confirmations of a SUBSCRIBE's second and later
  /// channels. Taken, so a second call returns only what came since.
  std::vector<Resp> take_pushes(ClientId id);

  /// Evaluations run so far (EVAL + EVALSHA), like INFO commandstats' calls.
  std::uint64_t script_calls() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace redisgo::sim
