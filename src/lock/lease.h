#pragma once
/// The lease over one or more independent Redis nodes (docs/DESIGN.md, invariants 2-4, 7, 8,
/// 10): as the daemon holds it (LeaseBackend: acquire / renew / release, the line, once_per's
/// claims) and as the other subcommands read and steer it (LeaseAdmin: inspect, the line,
/// pause and resume, control messages, adopt).
///
/// Every ownership check runs inside Lua (lock/scripts.h): acquire is SET NX PX plus the
/// fence counter in one script, renew is compare-and-PEXPIRE, release is compare-and-DEL
/// plus PUBLISH on the release channel, and the undo of a failed attempt is a
/// compare-and-DEL that publishes nothing.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lock/once.h"
#include "redis/call.h"
#include "redis/link.h"
#include "util/clock.h"

namespace redisgo::lock {

using Millis = std::chrono::milliseconds;

/// Names derived from the lock key. They share its Redis Cluster hash slot: the key's
/// {tag} if it has one, else the whole key becomes the tag ("{key}:fence").
struct LeaseKeys {
  std::string key;      ///< the lease itself (value = holder id); slot 0 of a semaphore
  std::string fence;    ///< fencing counter (one for every slot)
  std::string channel;  ///< release notifications (PUBLISH by the release script)
  std::string control;  ///< control messages to the leader (`handover`)
  std::string base;     ///< "{key}" or the key itself when it has a hash tag
  std::string line;     ///< the waiting line (fair = true): a sorted set of holder ids by ticket
  static LeaseKeys derive(const std::string& key);
  /// The channel on which the line wakes `holder` (its own: one release wakes one waiter).
  std::string wake(const std::string& holder) const;
  /// Semaphore slot `i`'s lease key: the key itself for slot 0 (limit = 1 is the plain
  /// lease, and daemons configured with different limits never hold more than the larger
  /// limit), "<base>:slot:<i>" for the others.
  std::string slot(int i) const;
  /// The slot keys from `first` to the last a key can have (kMaxSlots - 1).
  std::vector<std::string> slots_from(int first) const;
  /// once_per: the claim of the slot that starts at `slot_start_s` (seconds since the epoch).
  std::string claim(std::int64_t slot_start_s) const;
  /// once_per: the witness and the `adopt` record (lock/once_scripts.h), "<base>:once:witness"
  /// (no slot's start: `list` and `status` take no claim for it).
  std::string witness() const { return base + ":once:witness"; }
  /// `pause`: while this key exists (always with a TTL), no host starts the job.
  std::string pause() const { return base + ":pause"; }
  /// Renewals refused: the note a daemon leaves while it holds back (RefusalNote), and the
  /// key its probe of the rights names (never written: it only has to be in the key's slot).
  std::string refused() const { return base + ":refused"; }
  std::string probe() const { return base + ":probe"; }
  /// The key whose derived names start with `base` ("{worker}" -> "worker", "{app}:x" ->
  /// "{app}:x"); nullopt when no key derives it (`list` finds keys by their fence counters).
  static std::optional<std::string> key_of_base(const std::string& base);
};

/// The most slots a key can have (config::kMaxLimit, the largest `limit`).
inline constexpr int kMaxSlots = 64;

/// once_per (redisgo_task(1), MODES): the start (seconds since the Unix epoch) of the slot of length
/// `period` nearest to `now_ms` (milliseconds since the epoch); a tie rounds up.
std::int64_t nearest_slot(std::int64_t now_ms, Millis period);

/// What a lease key holds while a holder has it: the id of the attempt that set it,
/// "<holder id>#<attempt>", the attempt numbered by the process (docs/DESIGN.md, invariant 3;
/// lock/lua/lib/lease_id.lua). A release or undo that arrives late, after the same holder took
/// the key again, compares its own attempt's id and deletes nothing.
/// Numbered by `attempts` (LeaseOptions::attempts; null: a count of the whole process).
std::string make_lease_id(const std::string& holder, std::atomic<std::uint64_t>* attempts);
/// The holder id in a lease id; a value without "#<attempt>" (an older version's, a value set
/// by hand), a turn or a pause is left as it is.
std::string holder_of(const std::string& lease_id);

/// The value a lease key holds while it is `holder`'s turn ("\1turn:<holder>",
/// lock/lua/lib/line.lua): the holder, or nullopt for any other value.
std::optional<std::string> turn_of(const std::string& value);
/// A pause (`pause`), as the acquire scripts answer it while it lasts: a "holder"
/// "\1pause:<until ms>:<by>:<reason>" whose TTL is the pause's.
struct PauseRecord {
  std::string by;
  std::string reason;
  std::int64_t since_ms = 0;
  std::int64_t until_ms = 0;
  std::int64_t ttl_ms = -2;  ///< as PTTL: -2 none
};
/// The pause a busy reply's holder stands for, or nullopt for a real holder.
std::optional<PauseRecord> pause_of(const std::string& value);
/// The control channel's message of `pause --stop`: this prefix and the holder asked to stop
/// (a `handover` sends the bare holder id, or "any").
inline const std::string kPauseStopPrefix = "pause ";
/// "paused by alice@ops1 until 2026-11-27T16:30:00Z: schema migration".
std::string describe_pause(const PauseRecord& pause);
/// Renewals refused (redisgo_task(1) "Renewals refused"): what a daemon that holds back because
/// the ACL refuses its renewals leaves beside the key ({K}:refused, a string with a TTL of a
/// few probes, so a daemon that dies leaves it for minutes at most), for `status` and `list`:
/// "<holder>\n<since ms>\n<ACL user>\n<right>\n<what Redis answered>". The probe script
/// writes the last two fields (it names the right on Redis 7.0, whose error does not).
struct RefusalNote {
  std::string holder;
  std::int64_t since_ms = 0;
  std::string user;   ///< the ACL user ("default" when the config names none)
  std::string right;  ///< "+pexpire"
  std::string error;
};
/// The note's first three fields, as the probe script completes them.
std::string refusal_note_head(const std::string& holder, std::int64_t since_ms, const std::string& user);
/// nullopt for a value of another shape.
std::optional<RefusalNote> parse_refusal_note(const std::string& value);
/// "renewals refused since 2026-11-27T16:30:00Z: the ACL user 'redisgo' of host1 lacks
/// +pexpire; its daemon does not take the lease until it is granted".
std::string describe_refusal(const RefusalNote& note);

/// How a lease key's value reads in logs and `status`: the holder, "<holder> (its turn:
/// ...)", or the pause that stands in for one.
std::string describe_holder(const std::string& value);

/// docs/DESIGN.md "Keys": the fence counter lives the longer of 7 days and 100 × expire.
Millis fence_ttl(Millis lease_ttl);

/// Whether `holder` has the shape of a daemon's holder id, "<prefix>:<pid>:<32 hex digits>"
/// (wiring::default_holder_id). A value set by hand (a maintenance hold, a test) does not,
/// and says nothing about another daemon's `expire`.
bool is_daemon_holder(const std::string& holder);

/// The holder id without its ":<pid>:<random>" tail: the host (or `value` prefix); the value
/// itself when it has no such tail.
std::string holder_prefix(const std::string& holder);

/// The restart guard (docs/DESIGN.md "Restart guard"): how long a server that says it has
/// been up `uptime_s` whole seconds must still stay up before it may grant an absent lease
/// key under a guard of `guard` (0 = open). Redis counts uptime in whole seconds of a
/// cached clock, so a server up for 0.1 s can already say 1: one second less is counted.
/// The acquire scripts (lock/scripts.h guard_left) do the same arithmetic in Lua.
Millis restart_guard_left(std::int64_t uptime_s, Millis guard);

struct LeaseOptions {
  std::vector<redis::ConnectionOptions> nodes;  ///< 1 = single instance; N = Redlock, quorum N/2+1
  std::string key;
  std::string holder;                           ///< this holder's id
  /// The lease id (make_lease_id) of the lease held, the value its key holds: acquire() makes
  /// one per attempt; the renewal thread's backend is told the lease's, as its slot and token.
  std::string lease_id;
  /// What lease ids are numbered by: one count per process, shared by its backends, so that no
  /// two attempts of this holder ever write the same id (null: the whole process's). The
  /// simulator gives each simulated process its own.
  std::shared_ptr<std::atomic<std::uint64_t>> attempts;
  Millis ttl{5000};
  double drift_factor = 0.01;                   ///< validity = ttl - elapsed - (ttl*drift_factor + drift_fixed)
  Millis drift_fixed{2};
  /// An acquisition that leaves less validity than this is undone and counts as failed:
  /// a child started under it could not be stopped before the lease ends (the daemon
  /// passes kill_grace + kill margin). 0 = any positive validity will do.
  Millis min_validity{0};
  /// Sentinel (sentinel_wait_replicas): after an acquisition, WAIT until this many
  /// replicas have it (bounded by io_timeout); fewer, and the acquisition is undone. 0 = no WAIT.
  int wait_replicas = 0;
  /// A node that failed (refused, timed out, broken) is not contacted by acquire/renew
  /// again before its own retry time: node_retry_initial after the first failure,
  /// doubling up to node_retry_max, reset by a success. So a dead node costs the others'
  /// renewals nothing and is never retried faster than this.
  /// Semaphore: slot leases 0..limit-1 (LeaseKeys::slot); acquire() takes any free one.
  int limit = 1;
  /// The slot that renew(), release() and inspect() act on until acquire() takes one
  /// (the renewal thread's backend is told the slot its lease is on).
  int slot = 0;
  /// The token of the lease held (acquire() sets it; the renewal thread's backend is told
  /// it). With several nodes, a renewal that finds the key gone from a node sets it there
  /// again and raises that node's fence to this token (kRenew). 0 = never repair.
  std::uint64_t token = 0;
  /// Per node, whether the acquisition was granted there (the renewal thread's backend is told
  /// it; empty = every node). A renewal says nothing of a node that never had the lease: its
  /// key there was another contender's at that instant, an ordinary split under contention.
  std::vector<bool> granted_on;
  /// once_per: a claim of this holder's that every renewal keeps for claim_ttl from then
  /// (empty = none).
  std::string claim_key;
  Millis claim_ttl{0};
  /// The claim's recorded start (ms since the epoch): a renewal that finds the claim gone
  /// (the node restarted empty) writes it again with this start and the token. 0 = never.
  std::int64_t claim_start_ms = 0;
  /// Set (by the daemon) once the claim counted on a quorum: until then a renewal writes no
  /// claim again (it would claim the slot where the rule did not let it, or bring back a
  /// claim that was dropped because it fell short). Null: as if set.
  std::shared_ptr<const std::atomic<bool>> claim_made;
  /// The restart guard: a node where the key is absent and that has been up for less than
  /// this grants nothing to a new holder (kAcquireFair). The daemon passes `expire`
  /// (restart_guard = true) or 0 (off). A busy lease seen with more TTL left than this
  /// (another daemon of the key runs a longer `expire`) raises it to that TTL for the
  /// rest of the process: the guard must outlast the longest lease.
  Millis restart_guard{0};
  Millis node_retry_initial{100};
  Millis node_retry_max{2000};
  /// The waiting line (docs/DESIGN.md "The waiting line", invariant 11): acquire and release
  /// always run the line's scripts; `fair` says whether this holder joins the line (false:
  /// it never does, and takes a free lease only when nobody waits). turn_window: how long a
  /// woken head has to take its turn.
  bool fair = false;
  Millis turn_window{1000};
  /// An fd that, when readable, cancels an acquisition in flight (the daemon passes its
  /// signalfd, the renewer its stop eventfd). -1 = none.
  int cancel_fd = -1;
  /// What carries the commands to the nodes and what the waits and per-node retry times are
  /// measured by (redis/link.h). Null: sockets() (the process's). The deterministic
  /// simulator passes its own; it must outlive the backend.
  redis::Network* network = nullptr;
  /// Called at least every heartbeat_every while an operation waits on the network (the
  /// systemd watchdog's proof that the main loop lives).
  std::function<void()> heartbeat;
  Millis heartbeat_every{1000};
};

/// One node's failure in an operation.
struct NodeError {
  std::string node;          ///< endpoint, "127.0.0.1:7001"
  redis::Fault fault = redis::Fault::kNone;
  std::string message;       ///< names the node
};

/// Outcome of one acquisition attempt.
struct Acquisition {
  bool acquired = false;
  bool cancelled = false;               ///< cancel_fd ended it
  std::uint64_t token = 0;              ///< fencing token (acquired only)
  int slot = 0;                         ///< the semaphore slot taken (acquired only)
  std::string lease_id;                 ///< the value our key holds (acquired only)
  Clock::time_point started{};          ///< when the attempt was sent (the lease's start)
  Clock::time_point valid_until{};      ///< local lease deadline (acquired only)
  int votes = 0;                        ///< nodes that granted it
  int busy = 0;                         ///< nodes where another holder has the key
  /// Not acquired: the holder that a quorum of nodes named, if any, and how long (ms)
  /// until fewer than a quorum still hold its lease. -1 when no holder has a quorum in
  /// what the nodes answered (free, split between would-be holders, nodes unreachable).
  std::string holder;
  std::int64_t holder_ttl_ms = -1;
  bool holder_never_expires = false;    ///< that holder's key has no TTL on a quorum (set by hand?)
  /// Without a quorum's holder, `holder` is the first one a node named, and this that node:
  /// all that a host whose credentials most nodes refuse can say of who leads.
  std::string holder_node;
  /// Not before this instant can a quorum of nodes be asked again (nodes in their retry
  /// backoff); {} = now. A waiter never tries sooner: there would be nothing to send.
  Clock::time_point not_before{};
  std::vector<NodeError> errors;        ///< per-node failures
  std::vector<std::string> answered;    ///< nodes that answered (granted or busy): healthy
  /// Per node, in LeaseOptions::nodes order: the token that node's acquire script
  /// returned (before the quorum raise), 0 where it did not grant.
  std::vector<std::uint64_t> node_tokens;
  /// Per node, in LeaseOptions::nodes order: whether its grant of the lease won had come when
  /// the quorum decided (acquired only).
  std::vector<bool> granted;
  /// Restart guard: nodes where the key was free but whose server has been up for less
  /// than the guard (they granted nothing), with how long each must still stay up.
  struct Guarded {
    std::string node;
    std::int64_t left_ms = 0;
  };
  std::vector<Guarded> guarded;
  /// Not acquired, no holder with a quorum, and guarded nodes in the way: how long (ms)
  /// until enough of them open for a quorum to be possible. -1 otherwise.
  std::int64_t guard_wait_ms = -1;
  /// Nodes that granted although the guard could not apply there (INFO refused: an ACL
  /// user without +info).
  std::vector<std::string> unguarded;
  /// Restart guard on: another daemon's lease (is_daemon_holder) seen with more TTL left
  /// (ms) than the guard (our ttl, or a longer lease seen before): daemons of this key run
  /// different `expire`s, and the guard now covers the longer one. -1: none seen.
  std::int64_t longer_lease_ms = -1;
  /// The waiting line (fair): our place in it as of this attempt (1 = head; 0 = not in
  /// line), and how many wait (the longest line a node reported).
  std::int64_t position = 0;
  std::int64_t line_length = 0;
  /// Nodes where we had a ticket but were no longer in line (we lost our turn, or a release
  /// found us not listening): this attempt joined there again at the tail.
  bool rejoined = false;
  /// A semaphore's slot keys found holding another type (a hash written over one): skipped,
  /// so the other slots serve on, until someone deletes them.
  struct OtherType {
    std::string node;
    std::string key;
    std::string type;
  };
  std::vector<OtherType> other_type_slots;
};

/// Outcome of one renewal round.
struct Renewal {
  bool confirmed = false;               ///< a quorum extended our lease
  /// A quorum can no longer be ours: enough nodes answered that the key is not ours
  /// (expired or taken) that fewer than a quorum could still confirm.
  bool lost = false;
  Clock::time_point valid_until{};      ///< confirmed only: new local deadline
  Clock::time_point sent{};             ///< when the round was sent (valid_until counts from it)
  int votes = 0;
  int repaired = 0;                     ///< of the votes, nodes where the key was gone and is set again
  /// Nodes that refused the renewal (credentials, or an ACL user without a right the renew
  /// script needs), and whether so many did that no quorum could confirm it. Not a loss by
  /// itself: a password rotated on the server before the daemon's file, or an ACL being edited,
  /// may be put right before the deadline; a lease that reaches its deadline this way is lost to
  /// a refusal (exit 77, a supervise leader steps down).
  int refused = 0;
  bool refused_quorum = false;
  std::vector<NodeError> errors;
  std::vector<std::string> answered;    ///< nodes that answered (renewed or "not ours"): healthy
  Clock::duration took{};               ///< from sending the round to its outcome (metrics)
};

/// One probe of the rights the renewals need, made without the lease (probe_rights).
struct RightsProbe {
  int allowed = 0;                ///< nodes that ran every command (a refused key does not count)
  std::string command;            ///< the first command a node's ACL refused ("PEXPIRE"); "" none
  std::string error;              ///< what that node answered
  std::vector<NodeError> errors;  ///< nodes the probe did not run on (down, credentials, TLS)
};

/// Outcome of a release.
struct Release {
  int released = 0;     ///< nodes where a lease of ours was deleted
  int unpublished = 0;  ///< of those, nodes that refused the release message (ACL)
  int unanswered = 0;   ///< nodes it was sent to whose answer had not come (a quorum's had)
  /// Fair: waiters outside the line (fair = false, an older version) that heard the release.
  long long unfair_listeners = 0;
  int line_broken = 0;  ///< nodes whose line is not a sorted set (released, nobody woken)
  std::string error;    ///< the first error a node answered (a refused right: the lease stays to its TTL)
  /// Where another holder's lease stood in place of ours (a node where the lease had been
  /// ours): it was lost while held (deleted, evicted or expired, or the node restarted empty)
  /// and granted again, so two children may have run at once.
  struct Taken {
    std::string node;
    std::string holder;  ///< as shown_holder() cuts it
    std::string fence;   ///< the key's fence counter then: the other holder's token or a later one ("" = unread)
  };
  std::vector<Taken> taken;
  /// A node where the key holds another type (something else wrote over it): "node: type".
  std::string other_type;
};

/// One waiter in the line, as `status` shows it.
struct LineEntry {
  std::string holder;
  /// Subscribers of its wake channel: 0 = gone (killed without leaving; the next release
  /// drops it), -1 = unknown.
  std::int64_t listeners = -1;
  std::uint64_t ticket = 0;  ///< server TIME in µs when it joined (or later, see lock/lua/lib/line.lua)
};
/// One node's line.
struct LineView {
  std::string node;
  bool reachable = false;
  std::string error;
  std::int64_t length = 0;
  std::vector<LineEntry> entries;  ///< from the head, at most the number asked for
  /// Subscribers of the shared release channel: waiters outside the line (fair = false, an
  /// older version); -1 unknown.
  std::int64_t outside = -1;
};

/// One node's view of the key (for `status`).
struct NodeView {
  std::string node;          ///< endpoint string
  bool reachable = false;
  redis::Fault fault = redis::Fault::kNone;  ///< when unreachable
  std::string error;         ///< when unreachable
  bool held = false;
  std::string holder;
  std::int64_t pttl_ms = -2; ///< as PTTL: -2 no key, -1 no expiry
  std::uint64_t token = 0;   ///< current fence counter (0 = none, or bad_fence)
  /// Non-empty: the fence counter is unreadable (not a token; no acquisition succeeds
  /// here until it is fixed or deleted), and what it holds (lock::InspectReply::bad_fence).
  std::string bad_fence;
  std::int64_t uptime_s = -1;  ///< the server's uptime (-1: INFO refused or not said)
  /// The server that answered, when found by Sentinel or Cluster ("10.0.0.5:6379"); and
  /// with TLS, its certificate ("TLS TLSv1.3, certificate /CN=..., expires ...").
  std::string server;
  std::string peer;
};

/// once_per: what the daemon asks when it claims a slot under its lease.
struct ClaimRequest {
  std::string claim_key;
  std::string witness_key;
  std::int64_t slot_s = 0;          ///< the slot's start, s since the epoch
  std::uint64_t token = 0;
  std::int64_t start_ms = 0;        ///< when this run started
  Millis ttl{0};                    ///< the claim's TTL
  /// Restart guard: the earliest time a run of the slot can have started (ms since the
  /// epoch); 0 = no guard (every node counts, nothing is fsynced or witnessed).
  std::int64_t guard_from_ms = 0;
  std::int64_t highest_witness = 0; ///< the highest witness the nodes showed before (0: none)
  Millis witness_ttl{0};
};

/// once_per: the outcome of claiming a slot.
struct Claim {
  enum class Kind {
    kClaimed,     ///< a quorum recorded our claim, each where it counts, durable: run
    kTaken,       ///< the slot was claimed already (by `previous`): do not run
    kGuarded,     ///< too few nodes count as unclaimed: one may have lost a run's claim
    kNotDurable,  ///< a quorum took the claim, but too few made it durable in time
    kFailed,      ///< neither: too few nodes answered, or the lease was gone
  } kind = Kind::kFailed;
  ClaimRecord previous;
  std::string error;     ///< kFailed: why (each node's error is in `notes`)
  bool refused = false;  ///< kFailed: a node refused our credentials or the script (ACL): exit 77
  /// kFailed: a signal ended the round before it was decided (our claim dropped again); the
  /// caller decides whether that signal stops the run.
  bool cancelled = false;
  /// Per node, what it said: "<node>: counts as unclaimed (...)", "<node>: does not count:
  /// started ...", "<node>: WAITAOF did not confirm ...". For the log of a slot not run, and
  /// at debug of one run.
  std::vector<std::string> notes;
  /// Nodes that counted as unclaimed (before the claim was made durable).
  int counted = 0;
  /// Nodes that counted through an `adopt` record, with who wrote it and when.
  std::vector<std::string> adopted;
  /// Sentinel, Cluster: masters that took the claim with no replica to acknowledge it (a
  /// failover now may lose it).
  std::vector<std::string> unreplicated;
};

/// The outcome of publishing a control message.
struct Published {
  int accepted = 0;          ///< nodes that took it
  long long receivers = 0;   ///< subscribers that received it, over every node
  bool refused = false;      ///< a node refused it (ACL: the user lacks the channel)
  std::string error;         ///< why a node did not take it (the first one)
  /// pause/resume: nodes that took it but could not wake the waiters (PUBLISH refused).
  int unwoken = 0;
};

/// `adopt`'s outcome: declares the slot unclaimed on every node that has no claim of it.
struct Adoption {
  std::vector<std::int64_t> written_ms;   ///< per node: the node's TIME of the record, 0 where it was not written
  std::vector<std::string> errors;        ///< per node that failed, its error
  std::optional<ClaimRecord> claimed;     ///< a claim found on the way: nothing adopted there
  std::string claimed_on;                 ///< ... on this node
  bool refused = false;                   ///< a node refused (ACL)
};

/// The lease as the daemon holds it: the seam between the daemon (its main loop and its
/// renewal thread) and Redis. A fake implements it in daemon tests (tests/support/fake_lease.h).
class LeaseBackend {
 public:
  virtual ~LeaseBackend() = default;
  /// One attempt. Keys of this holder's met while it holds no lease are undone (see
  /// released_elsewhere()), not counted as busy.
  virtual Acquisition acquire() = 0;
  virtual Renewal renew() = 0;
  /// Compare-and-delete (publishing the release) on every node, also those that did not
  /// answer the acquire. Never throws.
  virtual Release release() noexcept = 0;
  /// Lets requests already queued (the undo of a failed attempt) reach their nodes:
  /// waits up to `limit` until they are written. For before the process exits. Never throws.
  virtual void settle(Millis limit) noexcept = 0;
  virtual int node_count() const = 0;
  int quorum() const { return node_count() / 2 + 1; }
  /// The lease this backend acquired was released through other connections (the renewal
  /// thread's): from now on a key of this holder's that acquire() meets is a leftover
  /// (an attempt that ran late at a paused node, a release that did not arrive), undone
  /// rather than waited for. While it holds a lease, acquire() refuses like anyone's.
  virtual void released_elsewhere() = 0;
  /// Acquisition attempts from now on end at `at` (oneshot --wait-timeout): a node that has
  /// not answered by then counts as not answered, and what it may yet grant is undone behind
  /// the attempt, as any failed attempt's grants are. time_point::max(): no bound.
  virtual void bound_attempts(Clock::time_point at) = 0;
  /// The waiting line (fair): whether this waiter listens on its wake channel on each node
  /// (in LeaseOptions::nodes order). Where it does, the next attempts join the line there;
  /// elsewhere they only look (a waiter that cannot be woken must not hold up the line).
  virtual void line_listening(const std::vector<bool>& per_node) = 0;
  /// Leaves the line on every node and forgets the ticket (stopped, gave up, exiting).
  /// Bounded by the nodes' timeouts; never throws. Returns why a node kept our entry (the
  /// error it answered: an ACL user without +zrem), or "" (left, or nothing was sent there).
  virtual std::string leave_line() noexcept = 0;
  /// once_per: claims the slot for this holder while the lease is held (lock/once.h). A
  /// node that already has a claim makes it kTaken (at most once per slot, whoever else
  /// claimed). Restart guard: a node counts only as the rule says, and a claim there counts
  /// only once fsynced (WAITAOF) where the node can, and acknowledged by a replica where a
  /// Sentinel or Cluster master has one. A claim that does not reach a quorum is dropped.
  virtual Claim claim(const ClaimRequest& request) = 0;
  /// once_per: every node's side of the rule and its claims of `claim_keys` (each
  /// OnceNode's `claim` is that of the first key; `claims` per node, per key).
  virtual std::vector<OnceNode> read_once(const std::string& witness_key, const std::vector<std::string>& claim_keys,
                                          std::vector<std::vector<std::optional<ClaimRecord>>>* claims = nullptr) = 0;
  /// Records the run's exit status in our claim ("" drops our claim: the slot did not run).
  /// Never throws.
  virtual void finish_claim(const std::string& claim_key, const std::string& status) noexcept = 0;
  /// The claims found under `claim_keys` (any reachable node's), in that order; nullopt where none.
  virtual std::vector<std::optional<ClaimRecord>> read_claims(const std::vector<std::string>& claim_keys) = 0;
  /// Semaphore slots held beyond LeaseOptions::limit (a daemon of this key runs a larger
  /// `limit`): the most any node has; -1 when no node could tell.
  virtual int slots_beyond_limit() = 0;
  /// Renewals refused: runs each of `commands` ("GET", "PEXPIRE", "SET") on every node in a
  /// form that changes nothing, on LeaseKeys::probe, and says which one the ACL refuses. Where
  /// one is refused and `note_head` is not empty, leaves the RefusalNote for `note_ttl`; where
  /// none is, deletes a note of this holder's. Never takes or touches the lease.
  virtual RightsProbe probe_rights(const std::vector<std::string>& commands, const std::string& note_head,
                                   Millis note_ttl) = 0;
};

/// The key as the other subcommands see and steer it (status, list, check, pause and resume,
/// handover, adopt): they read what each node holds and write only pauses, adoptions and
/// control messages, never a lease.
class LeaseAdmin {
 public:
  virtual ~LeaseAdmin() = default;
  virtual int node_count() const = 0;
  int quorum() const { return node_count() / 2 + 1; }
  /// Each node's view of the key (of the slot select_slot() chose).
  virtual std::vector<NodeView> inspect() = 0;
  /// The semaphore slot that inspect() reads.
  virtual void select_slot(int slot) = 0;
  /// The line on each node, its first `limit` entries.
  virtual std::vector<LineView> read_line(int limit) = 0;
  /// The pause that a quorum of nodes holds, if any (nullopt: none, or unreadable).
  virtual std::optional<PauseRecord> read_pause() = 0;
  /// The newest RefusalNote any node has (one node's is enough: it only informs), if any.
  virtual std::optional<RefusalNote> read_refusal() = 0;
  /// As LeaseBackend::read_once, read_claims and slots_beyond_limit.
  virtual std::vector<OnceNode> read_once(const std::string& witness_key, const std::vector<std::string>& claim_keys,
                                          std::vector<std::vector<std::optional<ClaimRecord>>>* claims = nullptr) = 0;
  virtual std::vector<std::optional<ClaimRecord>> read_claims(const std::vector<std::string>& claim_keys) = 0;
  virtual int slots_beyond_limit() = 0;
  /// PUBLISH `message` on `channel` on every node.
  virtual Published publish(const std::string& channel, const std::string& message) = 0;
  /// `pause`: writes `pause` (for `ttl`) on every node; accepted = nodes that took it.
  virtual Published pause(const PauseRecord& pause, Millis ttl) = 0;
  /// `resume`: drops the pause on every node and wakes the waiters it held back; receivers
  /// = nodes where there was one.
  virtual Published resume() = 0;
  /// `adopt`: declares the slot unclaimed on every node that has no claim of it.
  virtual Adoption adopt(const std::string& claim_key, const std::string& witness_key, std::int64_t slot_s,
                         const std::string& by, Millis witness_ttl) = 0;
  /// Drops an `adopt` record that did not reach a quorum, where it was written.
  virtual void drop_adoption(const std::string& witness_key, std::int64_t slot_s,
                             const std::vector<std::int64_t>& written_ms) noexcept = 0;
};

/// Both sides over the same nodes: what make_redis_backend() builds. The members the two
/// interfaces share are declared again here, so that a call through this type names one.
class RedisLease : public LeaseBackend, public LeaseAdmin {
 public:
  int node_count() const override = 0;
  int quorum() const { return node_count() / 2 + 1; }
  std::vector<OnceNode> read_once(const std::string& witness_key, const std::vector<std::string>& claim_keys,
                                  std::vector<std::vector<std::optional<ClaimRecord>>>* claims = nullptr) override = 0;
  std::vector<std::optional<ClaimRecord>> read_claims(const std::vector<std::string>& claim_keys) override = 0;
  int slots_beyond_limit() override = 0;
};

/// The real backend: N >= 1 independent Redis nodes driven concurrently by one poll loop
/// (lock/redlock.h). Not thread-safe; the renewal thread makes its own instance.
std::unique_ptr<RedisLease> make_redis_backend(const LeaseOptions& options,
                                                 const Clock& clock = SystemClock::instance());

}  // namespace redisgo::lock
