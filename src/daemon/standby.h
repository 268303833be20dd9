#pragma once
/// The standby phase as a state machine (docs/DESIGN.md "The phases"): contend for the
/// lease, wait, be woken.
///
/// It holds what the phase knows (attempts made, the last attempt's news, when the next
/// attempt may go out) and decides; the driver (daemon/standby_driver.cpp) attempts, waits on its
/// poll loop and reports. So the pacing rules of redisgo_task(1) "Modes" and invariant 7
/// (no waiter sends a node more than ~40 requests/s) are unit-tested with a fake clock.
///
///   Attempting --Attempted(acquired)--> Leading
///   Attempting --Attempted(miss)--> Waiting | GaveUp
///   Waiting | Pacing | Attempting --(give_up_at came: oneshot --wait-timeout)--> GaveUp
///   Attempting --Attempted(cancelled by a stray signal)--> Pacing --> Attempting
///   Waiting --WaitEnded(timer | release heard, paced)--> Attempting
///   Waiting --WaitEnded(our turn: the line woke us)--> Attempting (at once)
///   Waiting --WaitEnded(next: the head before us was woken)--> Waiting (until its window ends)
///   any --StopAsked / WaitEnded(shutdown)--> Stopped

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backoff/backoff.h"
#include "config/config.h"
#include "daemon/rules.h"
#include "lock/lease.h"
#include "lock/verdict.h"
#include "util/clock.h"
#include "util/exit_status.h"

namespace redisgo::daemon {

struct StandbySettings {
  config::Mode mode = config::Mode::kOneshot;
  bool wait_flag = true;  ///< --wait / --no-wait
  bool monitor_try_all = true;
  int retries_count = 4;
  Millis backoff_max{1000};
  Millis turn_window{1000};  ///< the waiting line's window (RedisConfig::turn_window)
  /// Nodes asked and how many must answer for an attempt to win: the backend's (from() leaves
  /// one of one; the runner sets them).
  std::size_t quorum = 1;
  std::size_t nodes = 1;
  /// oneshot: no quorum answered for this long: give up (69).
  Millis unreachable_timeout{60'000};
  /// oneshot --wait-timeout / [task] wait_timeout above 0: the instant the wait ends, whatever
  /// the other keys say (the run's start plus the timeout; 0 is wait_flag = false). Past it,
  /// no wait goes on and no attempt is made: the run gives up (GiveUp::timed_out).
  std::optional<Clock::time_point> give_up_at;

  static StandbySettings from(const config::Config& config, bool wait_flag);
};

namespace standby {

// ---- events ----
struct Begin {};      ///< a wait for the lease begins
struct StopAsked {};  ///< TERM/INT before an attempt
struct Attempted {    ///< an attempt came back
  lock::Acquisition acquisition;
  Clock::time_point started;  ///< when it was sent
  bool stop = false;          ///< a stop was requested meanwhile
  bool subscribed = false;    ///< a release message will wake us
};
/// How a wait ended. kTurn: the waiting line woke us (a message on our own wake channel: the
/// lease is our turn); kNext: the waiter before us was woken, and `window` is how long it has
/// to come.
enum class End { kTimer, kReleased, kSubscribed, kShutdown, kTurn, kNext };
struct WaitEnded {  ///< the Wait action ended (kTimer: its instant came)
  End end = End::kTimer;
  Millis window{0};  ///< kNext
  /// kTurn: how many nodes have woken us since our last attempt was sent (each node's line
  /// hands out its own turns; 0: not counted).
  int turn_nodes = 0;
};
using Event = std::variant<Begin, StopAsked, Attempted, WaitEnded>;

// ---- actions ----
struct Attempt {};  ///< try to acquire now
/// Why an attempt reached fewer nodes than a quorum (redisgo_task(1) "Never silent"): what
/// STATUS=, the log and redisgo_task_state say while it lasts, so that a host
/// that can never run the job does not look like a healthy standby.
struct Blocked {
  /// What kind of block (metrics::state_of_cause names its state): "credentials" (AUTH or
  /// ACL refused), "tls" (verification failed), "error" (another error reply), "unreachable".
  const char* cause = "";
  /// "this host cannot acquire: ..." (a refusal of this host's credentials, rights or TLS:
  /// other hosts may use those nodes) or "cannot acquire: ..." (nodes down, a broken key).
  std::string text;
  /// Its own credentials, rights or TLS: nothing can be said of what the other hosts see.
  bool this_host = false;
  /// An error reply every host of this config would get (a broken key, a replica).
  bool every_host = false;
  bool operator==(const Blocked&) const = default;
};
struct Report {  ///< log the attempt's news (nodes, the restart guard, a holder without TTL)
  lock::Acquisition acquisition;
  lock::Verdict verdict;
  std::optional<Blocked> blocked;  ///< no quorum answered, in words
  bool giving_up = false;          ///< this attempt is the run's last: its give-up line says it
  /// A quorum answered a miss that is not the last: it can answer the mixed-limit look too.
  bool look_for_larger_limit = false;
};
struct Wait {       ///< wait until `until`; with `wake_on_release`, a release message ends it
  Clock::time_point until;
  bool wake_on_release = true;
};
/// The terminal line / quiet log of a long wait: another miss, as the attempt sent at
/// `attempt_started` found it.
struct ShowMiss {
  std::string holder;
  std::int64_t holder_ttl_ms = -1;
  std::int64_t guard_wait_ms = -1;
  std::int64_t position = 0;
  std::int64_t line_length = 0;
  bool quorum_answered = true;
  int attempts = 0;
  Clock::time_point began{};
  Clock::time_point attempt_started{};
  /// The same miss redrawn at `now`: the holder's TTL and the guard's wait counted down.
  ShowMiss aged(Clock::time_point now) const;
};
struct Debug {       ///< a debug log line
  std::string text;
};
struct Lead {  ///< the lease is ours: the leader phase begins
  lock::Acquisition acquisition;
  Clock::time_point began{};  ///< when the wait for it began
};
/// oneshot gives up: how the last attempt ended decides the exit status and the last line.
struct GiveUp {
  int attempts = 0;
  /// give_up_at came: stop listening for wakes, leave the line (handing on a turn of ours).
  bool timed_out = false;
  int exit_status = kExitTempFail;
  enum class Why {
    kBusy,      ///< 75: another holder (or a pause) has the lease, or nothing decided it
    kRefused,   ///< 77: nodes refused this host's credentials, rights or TLS
    kGuarded,   ///< 75: the restart guard held a free lease back
    kNoQuorum,  ///< 69: too few nodes answered
  } why = Why::kBusy;
  lock::Acquisition acquisition;  ///< the last attempt
  lock::Verdict verdict;
};
struct Stopped {  ///< stopped while waiting: oneshot 75, supervise 0
  int exit_status = 0;
};
using Action = std::variant<Attempt, Report, Wait, ShowMiss, Debug, Lead, GiveUp, Stopped>;
using Actions = std::vector<Action>;

}  // namespace standby

using standby::Blocked;
/// nullopt when the lease was acquired or a quorum of `nodes` answered (granted or busy).
/// A refusal names the cause before an error reply, and an error reply before a timeout
/// elsewhere: the fix an operator must make comes first. A refusal names the right the ACL
/// user lacks where Redis names it, and the holder a node that accepted us named, if any.
std::optional<Blocked> blocked_by(const lock::Acquisition& acq, std::size_t nodes, std::size_t quorum);
/// The same, for `acq`'s verdict.
std::optional<Blocked> blocked_of(const lock::Acquisition& acq, const lock::Verdict& verdict, std::size_t nodes,
                                  std::size_t quorum);
/// How a oneshot run that gives up after `acq` ends (redisgo_task(1), EXIT STATUS).
standby::GiveUp give_up_of(const lock::Acquisition& acq, const lock::Verdict& verdict, std::size_t nodes,
                           std::size_t quorum);
/// What a node that refused us refused, in words about this host (`whose`: "its", "our"):
/// "Redis refused its credentials", "its ACL user lacks +set", ...
std::string refused_what(const lock::NodeError& e, const std::string& whose);

/// A miss that no quorum decided either way: some node granted it (undone), or another
/// holder has the key on some of the nodes we reached but too few to name it (the others
/// had it free: they granted too).
bool split_vote(const lock::Acquisition& acq);
/// The least gap after `splits` split votes in a row against a lease (one against a turn
/// neither counts nor starts the count again): kMinAttemptGap for none or one, growing by
/// kMinAttemptGap per split vote up to kSplitAttemptGap.
Millis attempt_gap(int splits);

enum class StandbyState { kAttempting, kPacing, kWaiting, kLeading, kGaveUp, kStopped };
const char* to_string(StandbyState s);

class StandbyMachine {
 public:
  /// `backoff` is the configured strategy (observed and asked after every miss).
  StandbyMachine(StandbySettings settings, backoff::Backoff& backoff);

  standby::Actions step(const standby::Event& event, Clock::time_point now);

  StandbyState state() const { return state_; }
  /// Attempts counted so far in this wait.
  int attempts() const { return attempts_; }
  /// When this wait began, and the last attempt went out.
  Clock::time_point began() const { return began_; }
  Clock::time_point attempt_started() const { return started_; }
  /// The last attempt's result, and its verdict.
  const lock::Acquisition& last() const { return last_; }
  const lock::Verdict& verdict() const { return verdict_; }
  /// oneshot --wait-timeout: when the wait ends, whatever else happens.
  const std::optional<Clock::time_point>& give_up_at() const { return s_.give_up_at; }
  /// When the wait in progress ends unless a release ends it sooner.
  Clock::time_point wake_at() const { return wake_at_; }

 private:
  using Actions = standby::Actions;
  void on(const standby::Begin&, Clock::time_point now, Actions& out);
  void on(const standby::StopAsked&, Clock::time_point now, Actions& out);
  void on(const standby::Attempted& e, Clock::time_point now, Actions& out);
  void on(const standby::WaitEnded& e, Clock::time_point now, Actions& out);
  /// A turn came while waiting (from `nodes` nodes so far): whether it made an attempt (else
  /// the wait goes on).
  bool on_turn(Clock::time_point now, int nodes, Actions& out);
  /// `turn`: an attempt that answers a turn (spends the credit; any other attempt earns it
  /// back).
  void attempt(Actions& out, bool turn = false);
  /// oneshot: refused credentials with no quorum left, or no quorum for unreachable_timeout.
  bool oneshot_gives_up(const lock::Verdict& verdict, Clock::time_point now);
  void stop(Actions& out);
  /// Ends the wait: GiveUp from the last attempt, said by the Report of this step if any.
  void give_up(Actions& out, bool timed_out);
  /// Waits until `until`, or give_up_at if that comes first.
  void wait(Actions& out, Clock::time_point until, bool wake_on_release);
  /// give_up_at has come: true after emitting GiveUp (timed out).
  bool timed_out(Clock::time_point now, Actions& out);
  /// oneshot without a quorum: when unreachable_timeout ends (nullopt: not counting).
  std::optional<Clock::time_point> unreachable_until() const;
  /// The earliest a paced retry may go out: attempt_gap(splits_) after the last attempt
  /// began, and a quorum of nodes out of its retry backoff.
  Clock::time_point paced() const;

  StandbySettings s_;
  backoff::Backoff& backoff_;
  StandbyState state_ = StandbyState::kAttempting;
  Clock::time_point began_{};
  Clock::time_point started_{};
  Clock::time_point wake_at_{};
  /// The last attempt re-run after a stray signal (kept across waits: a flood of signals
  /// never re-runs attempts more often than every 100 ms).
  Clock::time_point last_stray_retry_{};
  lock::Acquisition last_;
  lock::Verdict verdict_;  ///< last_'s
  int attempts_ = 0;
  bool recheck_ = false;    ///< the coming attempt re-checks after a new subscription (not counted)
  bool turn_credit_ = true; ///< a turn may be answered at once (see kTurn)
  /// When the first turn since the last attempt was heard (several nodes: see kTurn).
  std::optional<Clock::time_point> first_turn_;
  int splits_ = 0;          ///< split votes in a row, up to the last attempt (attempt_gap)
  /// oneshot: since when no attempt has reached a quorum (unreachable_timeout).
  std::optional<Clock::time_point> unreachable_since_;
  bool rechecking_ = false; ///< the wait in progress ends in such a re-check
};

}  // namespace redisgo::daemon
