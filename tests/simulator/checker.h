#pragma once
/// The invariants (docs/DESIGN.md "Simulation"), checked from the simulated clients' own
/// records, never from Redis:
///  - mutual exclusion: at no instant do more than `limit` clients run a child while their
///    local lease deadline (on their own clock) has not passed, and no two of them on one slot;
///  - tokens: concurrent holders never share a token, and a holding that begins on a slot has a
///    token above every other lease's that held the slot before it;
///  - (an operator's DEL of a lease key is outside the protocol: its holder is excused from
///    both until its next confirmed renewal, which must then pass the token check as a
///    holding that begins: a renewal may set the key again only if nobody held it since);
///  - liveness, stage 1: after the last fault has healed, a free slot with a live waiter is
///    taken within expire + backoff max + the restart guard's wait (and the margins named in
///    liveness_bound()).
/// A holding begins when a child starts under a valid deadline, or when a deadline that had
/// passed is moved forward again while the child runs (a renewal confirmed late): either way
/// the client acts as the holder from then on, and both are checked alike. The count can only
/// grow at those instants, so checking there is checking at every step.

#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "simulator/world.h"

namespace redisgo::simulator {

/// What the checker reads of one client at an instant.
struct HolderView {
  bool child_alive = false;
  bool deadline_valid = false;  ///< its local deadline has not passed, on its own clock
  std::uint64_t token = 0;
  int slot = 0;
  std::string holder;           ///< the lease's holder id (with the token: which lease)
  bool leading = false;         ///< in the leader phase: it holds a lease as far as it knows
  std::string lease;            ///< the lease id its key holds
};

class Checker {
 public:
  Checker(World& world, int limit) : world_(world), limit_(limit) {}

  /// Registers a client; `view` reads its records at the current instant.
  void add_client(std::string name, std::function<HolderView()> view);

  /// A holding begins for client `c` (its view already says so).
  void holding_began(int c);

  /// An operator deleted the key holding `lease` on a node (FaultKind::kDelete).
  void lease_deleted(const std::string& lease);
  /// Client `c`'s renewal round, sent at `sent`, was confirmed (its view already shows the
  /// deadline it set). Only a round sent after the key was deleted ends the excuse: one that
  /// ran before the DEL confirms a key that is gone.
  void renewal_confirmed(int c, Time sent);

  /// Liveness: client `c` waits (standby, live) or stops waiting; a lease was taken.
  void waiting(int c, bool on);
  void acquired(int c);
  /// From `at` on no fault is set any more: liveness is checked, with `bound` per wait.
  void quiet_from(Time at, Time bound) {
    quiet_from_ = at;
    bound_ = bound;
  }
  /// Checks liveness at the current instant (call on a timer).
  void check_liveness();

  bool violated() const { return violation_.has_value(); }
  const std::optional<std::string>& violation() const { return violation_; }
  std::uint64_t holdings() const { return holdings_; }

 private:
  struct Client {
    std::string name;
    std::function<HolderView()> view;
    bool waiting = false;
  };
  struct Holding {  // a holding that began
    Time at;
    std::uint64_t token;
    int slot;
    std::string holder;
  };
  void fail(std::string what);
  int holders_now(std::vector<HolderView>& views) const;
  bool counts(const HolderView& v) const {
    return v.child_alive && v.deadline_valid && excused_.count(v.lease) == 0;
  }

  World& world_;
  int limit_;
  std::vector<Client> clients_;
  std::vector<Holding> history_;  // one entry per lease and slot that held
  std::map<std::string, Time> excused_;  // leases whose key an operator deleted (when), until renewed
  std::optional<std::string> violation_;
  std::uint64_t holdings_ = 0;
  Time quiet_from_ = kNever;
  Time bound_ = kNever;
  Time needy_since_ = kNever;  // since when a slot is free with someone waiting
  int waiters_ = 0;
  int holding_ = 0;
  Time last_acquired_ = 0;
};

}  // namespace redisgo::simulator
