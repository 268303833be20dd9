#pragma once
/// Where a Lua table row runs: a real redis-server (over hiredis) or the simulated node
/// (tests/sim). The table runner (table.h) only sends commands, so one table runs the same
/// way on both, and the two must agree (the simulator's fidelity).

#include <memory>
#include <string>
#include <vector>

#include "sim/resp.h"

namespace redisgo::luatable {

using sim::Resp;

/// An ACL user missing some rights: Redis 7's `user NAME on >pw ~* &* +@all -cmd ...`, or with
/// `resetchannels` instead of `&*` (Redis 7's default for a new user: no channel).
struct Acl {
  std::vector<std::string> denied{};  ///< command names in lower case; "pubsub|numsub" for a subcommand
  bool channels = true;
  std::vector<std::string> only_channels{};  ///< with channels = false: the channels it may use
  bool empty() const { return denied.empty() && channels; }
  /// A user name that says which rights are missing ("no_zrem_pttl", "no_channels").
  std::string user() const;
};

/// How long the server the row runs on has been up: the restart guard reads INFO's uptime.
enum class Age {
  kAny,    ///< whatever is at hand (rows whose outcome does not depend on it)
  kYoung,  ///< freshly (re)started: uptime_in_seconds 0 or 1 as the row starts (2 at most by its end)
  kOld,    ///< up 2 s or more: a 1 s guard (guard_ms "1000") is over
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// Chooses the server for the next row (a real backend may start one, or wait).
  virtual void age(Age age) = 0;
  /// Every key gone and the last row's listeners closed.
  virtual void reset() = 0;
  /// One command, as the default user or as `acl`'s user.
  virtual Resp command(const std::vector<std::string>& argv, const Acl& acl = {}) = 0;
  /// A new subscriber of `channel` (PUBLISH counts it).
  virtual void listen(const std::string& channel) = 0;
  /// The messages the first subscriber of `channel` got since it subscribed (everything
  /// published before this call: no waiting on time).
  virtual std::vector<std::string> heard(const std::string& channel) = 0;
};

/// A redis-server of this machine (tests/support/redis_server.h), and a second, freshly
/// started one for the rows that need a young server.
std::unique_ptr<Backend> make_real_backend();
/// The simulated node; its clock starts at a fixed instant and moves only when a row asks for
/// an old server.
std::unique_ptr<Backend> make_sim_backend();

}  // namespace redisgo::luatable
