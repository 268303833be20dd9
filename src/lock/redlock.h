#pragma once
/// The real LeaseBackend and LeaseAdmin: N >= 1 independent Redis nodes, quorum N/2 + 1.
/// One node is the N = 1 case of the same code.
///
/// Every operation is one round over non-blocking connections (redis/connection.h) driven
/// by one poll loop (redis/poller.h): the script goes to every node at once, each node
/// bounded by its own connect and reply timeouts, and the round ends as soon as its
/// outcome is decided — a quorum granted or renewed, or too many refused for one to be
/// possible. So a minority of nodes that accept TCP and never answer cost a renewal
/// nothing (docs/DESIGN.md, invariant 8), and neither does a node that must reconnect first: its
/// connect, AUTH, SELECT and SCRIPT LOAD run concurrently with the others' requests.
/// Requests still in flight when a round ends stay on their connections; their replies
/// are read (and their nodes' health accounted) at the start of the next round.
///
/// A node that fails (refused, timeout, closed, not Redis, credentials refused) is a "no"
/// vote and is left alone until its own retry time (LeaseOptions::node_retry_*), so a
/// dead node costs one connection attempt per retry period, never more. A node that
/// answers with an error reply (OOM, LOADING, READONLY, BUSY) is a "no" vote too, but
/// alive. acquire() reports when a quorum of nodes can be asked again (not_before).
///
/// A failed attempt is undone with a compare-and-DEL that publishes nothing, on the nodes
/// that granted and on those whose reply is still outstanding (pipelined behind the
/// acquire on the same connection, so Redis runs it after the SET). Never on a node
/// whose connection is gone: reconnecting to a hung node to undo would cost every failed
/// attempt a connect timeout, and what the attempt set there expires by its TTL.
///
/// A node that comes back empty (restarted without persistence) cannot break exclusion
/// if it grants nothing new until one TTL after it went down: by then every lease it had
/// granted has expired on the clock of every holder too (validity subtracts the drift).
/// The Redlock design leaves that delayed restart to the operator; the restart guard
/// enforces it (LeaseOptions::restart_guard, docs/DESIGN.md "Restart guard"): a node up
/// for less than the guard does not grant an absent key, while the holder whose key
/// vanished sets it again at its next renewal. Its fence counter restarts from its TIME
/// floor (lock/fencing.h).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lock/fencing.h"
#include "lock/lease.h"
#include "redis/link.h"

namespace redisgo::lock {

struct AcquireReply;
struct ReleaseReply;

/// The local lease deadline of an operation sent at `start`:
/// start + ttl - (ttl * drift_factor + drift_fixed). (Elapsed time is accounted for by
/// the caller comparing it with the clock after the replies.)
Clock::time_point validity_deadline(Clock::time_point start, Millis ttl, double drift_factor, Millis drift_fixed);

/// Per-node retry schedule after failures: initial, doubling, capped at max.
Millis next_node_backoff(Millis previous, Millis initial, Millis max);

class RedlockBackend final : public RedisLease {
 public:
  /// Throws std::invalid_argument for no nodes or a non-positive ttl. Does not connect.
  RedlockBackend(LeaseOptions options, const Clock& clock);

  /// Quorum acquire + fencing raise (lock/fencing.h). On failure undoes what it can.
  Acquisition acquire() override;
  /// Quorum compare-and-PEXPIRE. confirmed moves the deadline from the send time.
  Renewal renew() override;
  Release release() noexcept override;
  std::vector<NodeView> inspect() override;
  void settle(Millis limit) noexcept override;
  int node_count() const override { return static_cast<int>(nodes_.size()); }
  void select_slot(int slot) override;
  void released_elsewhere() override { holding_ = false; }
  void bound_attempts(Clock::time_point at) override { attempt_bound_ = at; }
  Claim claim(const ClaimRequest& request) override;
  std::vector<OnceNode> read_once(const std::string& witness_key, const std::vector<std::string>& claim_keys,
                                  std::vector<std::vector<std::optional<ClaimRecord>>>* claims = nullptr) override;
  Adoption adopt(const std::string& claim_key, const std::string& witness_key, std::int64_t slot_s,
                 const std::string& by, Millis witness_ttl) override;
  void drop_adoption(const std::string& witness_key, std::int64_t slot_s,
                     const std::vector<std::int64_t>& written_ms) noexcept override;
  void finish_claim(const std::string& claim_key, const std::string& status) noexcept override;
  std::vector<std::optional<ClaimRecord>> read_claims(const std::vector<std::string>& claim_keys) override;
  Published publish(const std::string& channel, const std::string& message) override;
  Published pause(const PauseRecord& pause, Millis ttl) override;
  Published resume() override;
  std::optional<PauseRecord> read_pause() override;
  RightsProbe probe_rights(const std::vector<std::string>& commands, const std::string& note_head,
                           Millis note_ttl) override;
  std::optional<RefusalNote> read_refusal() override;
  int slots_beyond_limit() override;
  void line_listening(const std::vector<bool>& per_node) override { listening_ = per_node; }
  std::string leave_line() noexcept override;
  std::vector<LineView> read_line(int limit) override;

  const LeaseKeys& keys() const { return keys_; }

 private:
  struct Node {
    Node(redis::Network& network, redis::ConnectionOptions options);
    std::unique_ptr<redis::Link> conn;  ///< made by the network (LeaseOptions::network)
    /// Cluster: the link to the node an ASK redirect named (slot migration).
    std::unique_ptr<redis::Link> detour;
    std::string name;
    redis::SteadyClock::time_point retry_at{};  // acquire/renew skip the node until then
    Millis backoff{0};                          // 0 = healthy
    redis::Fault last_fault = redis::Fault::kNone;
    std::string last_error;
    std::vector<redis::CallPtr> inflight;       // sent; outcome not yet accounted
  };
  enum class Send { kRespectBackoff, kAlways };

  /// Sends `script` to the nodes selected by `only` (all when empty). Under
  /// kRespectBackoff a node before its retry time is skipped: its call is null.
  std::vector<redis::CallPtr> send(const redis::Script& script, const std::vector<std::string>& keys,
                                   const std::vector<std::string>& args, const std::vector<bool>& only, Send how);
  /// As send(), with each node's own arguments.
  std::vector<redis::CallPtr> send_each(const redis::Script& script, const std::vector<std::string>& keys,
                                        const std::function<std::vector<std::string>(std::size_t)>& args_of,
                                        const std::vector<bool>& only, Send how);
  /// Drives every node until `decided()` or no call of `calls` is pending. Returns false
  /// when cancel_fd ended the wait (only if `cancellable`). Cluster redirects are
  /// followed on the way: a call answered MOVED or ASK is sent again where the reply
  /// says (at most kMaxRedirects times), and `calls` then holds the new call.
  bool wait(std::vector<redis::CallPtr>& calls, const std::function<bool()>& decided, bool cancellable);
  /// The redirects of `calls` that can be followed, followed.
  void follow_redirects(std::vector<redis::CallPtr>& calls);
  /// acquire(): one round's replies, read as votes for a slot (redlock_acquire.cpp).
  struct Ballot;
  /// acquire(): what the round left on each node.
  struct Tally {
    std::vector<bool> granted;       ///< voted for the slot won
    std::vector<std::string> taken;  ///< the slot key it gave us, if any ("" = none)
    /// It holds a key of ours that this attempt did not set (a late SET of an earlier
    /// attempt, a release that did not reach it): no holder to wait for, undone.
    std::vector<bool> leftover;
    std::map<std::string, std::vector<std::int64_t>> busy_ttls;  ///< holder -> its nodes' PTTLs
  };
  /// acquire(): so many nodes refused our credentials or rights that no quorum is possible.
  bool refused_beyond_quorum(const std::vector<redis::CallPtr>& calls) const;
  /// acquire(): sends the acquire script (the slot keys in this attempt's order).
  std::vector<redis::CallPtr> send_acquire(bool semaphore);
  /// acquire(): reads every node's reply into `a` and the tally.
  Tally count_votes(const Ballot& ballot, int slot, Acquisition& a);
  /// acquire(): fencing across quorums (lock/fencing.h): raises the fence where a node
  /// stores less than the quorum's token. False when fewer than a quorum store it.
  bool raise_fence(Acquisition& a);
  /// acquire(): whether enough of the lease is left to stop a child in time (else why, in `a`).
  bool still_valid(Clock::time_point start, Acquisition& a);
  /// acquire(): on the nodes `late` (unanswered when the votes were counted), undoes every
  /// slot but `keep` behind the acquisition: what a late grant of another slot set.
  void undo_late_slots(const std::vector<bool>& late, int keep);
  /// acquire(): undoes our leftover keys, except on the slot `keep` (-1: none).
  void undo_leftovers(const std::vector<bool>& leftover, int keep);
  /// Sentinel: WAIT for the replicas on the nodes that granted; false if too few have it.
  bool replicated(const std::vector<bool>& granted, std::vector<NodeError>& errors);
  /// claim(): what each node's claim reply says, for the counting (redlock_once.cpp).
  struct ClaimTally;
  /// claim(): reads every node's reply into `t` (and a claim found there into `out`).
  void tally_claims(const ClaimRequest& q, const std::vector<redis::CallPtr>& calls, ClaimTally& t, Claim& out);
  /// claim(): WAITAOF where the claim must be fsynced, WAIT where a Sentinel or Cluster
  /// master has a replica; marks in `t` the claims that became durable. False: cancelled.
  bool make_durable(const ClaimRequest& q, ClaimTally& t, Claim& out);
  /// Reads what arrived for earlier rounds and accounts each node's health from the
  /// calls that completed (one failure per broken connection, not per call).
  void sweep() noexcept;
  /// The error for node i: its call's failure, or why it was skipped.
  NodeError error_of(std::size_t i, const redis::CallPtr& call) const;
  /// Node i had not answered an attempt when the wait's bound cut it: its last refusal if it
  /// refused us before, else a timeout.
  NodeError unanswered_at_bound(std::size_t i) const;
  /// count_votes: a node whose acquire script did not answer, or failed: its error, when it
  /// has one to give (see unanswered_at_bound).
  void note_unanswered(std::size_t i, const redis::CallPtr& c, Acquisition& a) const;
  /// Undo (no publish) on the nodes whose acquire granted (the slot key each one took,
  /// in `taken`; "" = none) or is still in flight (every slot key: which one it takes is
  /// not known yet).
  void undo(const std::vector<redis::CallPtr>& acquire_calls, const std::vector<std::string>& taken);
  /// Sends `script` to every node and waits for every answer (each bounded by its node's
  /// timeouts; cancellable by cancel_fd when `cancellable`).
  std::vector<redis::CallPtr> round(const redis::Script& script, const std::vector<std::string>& keys,
                                    const std::vector<std::string>& args, bool cancellable);
  /// As round(), but the wait ends once a quorum has answered: for what a quorum's answers
  /// decide, so that a minority of nodes that never answer costs nothing (docs/DESIGN.md,
  /// invariant 8). The calls still pending then are accounted by a later sweep().
  std::vector<redis::CallPtr> quorum_round(const redis::Script& script, const std::vector<std::string>& keys,
                                           const std::vector<std::string>& args, bool cancellable);
  /// renew(): node i's report that our key was gone there and is set again.
  NodeError set_again_error(std::size_t i) const;
  /// renew(): whether the lease has been ours on node i (ours_).
  bool was_ours(std::size_t i) const { return i >= ours_.size() || ours_[i]; }
  /// A script's keys and arguments.
  struct ScriptCall {
    std::vector<std::string> keys;
    std::vector<std::string> args;
  };
  /// renew(): reports what the previous round's late answers said (set again there).
  void report_late_renewals(Renewal& rn);
  /// renew(): the renew script's keys and arguments for the lease held.
  ScriptCall renew_call() const;
  /// renew(): reads every node's reply into `rn`; returns how many said "not ours".
  int count_renewals(const std::vector<redis::CallPtr>& calls, Renewal& rn);
  const std::string& held_key() const { return slot_keys_[static_cast<std::size_t>(held_)]; }
  /// When a quorum of nodes will be past their retry times ({} = now).
  Clock::time_point quorum_available_at() const;
  std::vector<redis::Link*> connections();

  LeaseOptions options_;
  const Clock& clock_;
  /// The links' network (LeaseOptions::network, sockets() by default): every link, wait,
  /// look and per-node retry time goes through it.
  redis::Network& network_;
  LeaseKeys keys_;
  std::vector<std::string> slot_keys_;  // LeaseKeys::slot(0..limit-1)
  int held_ = 0;                        // the slot renew/release/inspect act on
  Clock::time_point attempt_bound_ = Clock::time_point::max();  ///< bound_attempts()
  bool holding_ = false;                // acquired, and not released through this backend since
  std::uint64_t rotation_ = 0;          // semaphore: the slot each attempt tries first
  std::string ttl_arg_;
  std::string fence_ttl_arg_;
  std::vector<Node> nodes_;
  /// What each call sent (to send it again after a redirect) and how often it was redirected.
  struct Sent {
    const redis::Script* script;
    std::vector<std::string> keys;
    std::vector<std::string> args;
    int redirects = 0;
  };
  std::map<const redis::Call*, Sent> sent_;
  /// renew(): the calls of the last round still unanswered when it was decided.
  std::vector<redis::CallPtr> late_renewals_;
  /// Per node, whether the lease has been ours there (granted with the quorum, renewed or set
  /// since). A node the grant missed (another contender's key or turn there at that instant:
  /// ordinary under contention) is no fault when a renewal finds it not ours or sets it: only a
  /// node that had our key and lost it is said (a healthy cluster logged 5-15 such warnings a
  /// minute under contention).
  std::vector<bool> ours_;
  /// The waiting line (fair): per node, whether we listen on our wake channel there (join
  /// the line) and the ticket to write back (the largest any node gave us; 0 = none yet).
  std::vector<bool> listening_;
  std::uint64_t ticket_ = 0;
  /// Per node, the ticket it is known to hold for us (sent and answered in line): not sent again.
  std::vector<std::uint64_t> written_;
  std::vector<std::uint64_t> sent_tickets_;  ///< acquire(): the ticket sent to each node (0 none)
  /// acquire(): the fence proposal's lead over our wall clock, and when it was last sent
  /// (µs since the epoch; 0: not proposed, one node). lock/fencing.h.
  std::uint64_t lead_us_ = kInitialLeadUs;
  std::uint64_t proposed_at_us_ = 0;
  std::string window_arg_;
  std::string line_ttl_arg_;
  /// release(): what node i's "not ours" reply says, into `out` (Release::taken, other_type).
  void note_not_released(std::size_t i, const ReleaseReply& r, Release& out) const;
  /// release(): the release script to the nodes of `only` (all when empty).
  std::vector<redis::CallPtr> send_release(const std::vector<bool>& only);
  /// acquire(): reads the line's part of node i's reply (fair).
  void note_line(const AcquireReply& r, Acquisition& a, bool& first);
  /// acquire(): what node i now holds as our ticket (written_).
  void note_written(std::size_t i, const AcquireReply& r);
};

}  // namespace redisgo::lock
