#pragma once
/// The leader phase as a state machine (docs/DESIGN.md "The phases").
///
/// It holds what the phase knows (the child's state, why it is being stopped, when it is
/// killed, when it restarts) and decides; it does nothing itself. Each step(event) returns
/// the actions a driver carries out (leader_driver.cpp: the poll loop, the keeper, the health
/// check), so every rule of redisgo_task(1) "Modes", "Stepping down", signals and the
/// lease deadline is unit-tested with a fake clock and no process at all.
///
///   Starting --Spawned--> Running --(lease lost, deadline, timeout, step-down, stop)--> Stopping
///   Stopping --(kill time)--> Killing --(200 ms more)--> Forced
///   Running/Stopping/Killing/Forced --ChildExited--> Restarting | Done
///   Restarting --(restart_at)--> Starting;  Starting --SpawnFailed--> Done
///
/// The driver's loop, once per turn: Tick (the lease, escalation, a restart that is due, the
/// keeper's word); poll until next_wakeup() or keeper_due(); then Woke (the lease again,
/// before anything else after a pause), HandoverAsked / HealthFailed as heard, Signals, and
/// ChildExited when reaped. Tick and Woke say whether the child's tree is already gone (the
/// driver reaps without blocking first): a turn after a pause must know whether the child
/// outlived the lease or was stopped by its keeper meanwhile.

#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config/config.h"
#include "daemon/rules.h"
#include "util/clock.h"

namespace redisgo::daemon {

/// What the leader phase knows of its lease, read from the renewal thread for each event.
struct LeaseView {
  Clock::time_point valid_until{};
  /// When the acquisition or renewal that set valid_until was sent: when it was decided.
  Clock::time_point renewed_at{};
  bool lost = false;
  bool refused = false;  ///< the renewals are refused (credentials, ACL): a lease that ends so is 77, not 75
  std::string lost_reason;
};

/// The settings the leader phase decides by (from [task] and [redis] expire).
struct LeaderSettings {
  config::Mode mode = config::Mode::kOneshot;
  config::Restart restart = config::Restart::kOnFailure;
  Millis restart_delay{1000};
  Millis restart_window{60'000};
  int restart_limit = 5;
  Millis kill_grace{2000};
  Millis ttl{5000};
  /// The renewal interval ([redis] cron): while the child runs, the keeper hears from the
  /// daemon at least every half of it, and takes a daemon silent for longer as one that
  /// cannot act (process/deadline_rule.h).
  Millis tick{1000};
  int kill_signal = SIGTERM;
  std::optional<Millis> timeout;  ///< oneshot only
  std::string control_channel;    ///< named when a handover is heard
  std::uint64_t token = 0;        ///< this lease's fencing token (named when it may have overlapped)

  static LeaderSettings from(const config::Config& config);
};

namespace leader {

// ---- events ----
/// What the driver saw of the child just before a Tick or a Woke.
struct ChildSeen {
  bool ended = false;             ///< its tree is gone (ChildExited follows this turn)
  int keeper_signal = 0;          ///< its keeper stopped it on its own, with this signal first
  Clock::time_point keeper_at{};  ///< when the keeper sent it
};
struct Start {};  ///< the phase begins: start the child, the deadline first
struct Tick {     ///< the loop's turn: the lease, escalation of a stop, a restart that is due
  ChildSeen child;
};
struct Woke {  ///< after any wake-up (a pause included): the lease before anything else
  ChildSeen child;
};
struct Spawned {  ///< the Spawn action started the child
  pid_t pid = -1;
  pid_t keeper = -1;
};
struct SpawnFailed {  ///< the Spawn action failed (the driver logged why)
  int code = 0;       ///< 127 / 126, or 75 when the keeper saw the deadline pass
  std::string error;
};
struct HandoverAsked {  ///< a control message named this holder (supervise)
  bool pause = false;  ///< `pause --stop` sent it: the key is paused (else `handover`)
};
struct HealthFailed {     ///< health_fall checks in a row failed
  std::string why;
};
struct Signals {  ///< what the signalfd gave this turn
  std::vector<int> forward;  ///< to pass to the child's group
  bool stop = false;         ///< a TERM/INT was received (now or earlier)
  int stop_signal = SIGTERM; ///< the first of them
};
struct ChildExited {  ///< the child's tree is gone
  int code = 0;       ///< exit code, 128+N for signal N
  /// The keeper was killed from outside by this signal (-1: it ended without its report
  /// some other way); the job died with it, and `code` is 71.
  int keeper_killed_by = 0;
};
using Event = std::variant<Start, Tick, Woke, Spawned, SpawnFailed, HandoverAsked, HealthFailed, Signals, ChildExited>;

// ---- actions ----
struct Spawn {  ///< start the child; the keeper kills it at `kill_at` on its own
  Clock::time_point kill_at;
};
struct SignalGroup {  ///< deliver to the child's process group (SIGKILL: its whole tree)
  int sig = 0;
};
struct ForceKill {};     ///< the tree survived SIGKILL: kill the keeper from here
/// Tell the keeper its kill deadline; a health check runs under the same one (it starts
/// under the last one told, and one that runs follows it).
struct MoveDeadline {
  Clock::time_point kill_at;
  Clock::time_point decided;  ///< when it was decided (a renewal: when it was sent)
};
struct FrozenPastLease {};  ///< count it: this host was frozen past its lease with the child alive
struct ArmHealth {       ///< the child started: the health checks begin, under the keeper's deadline
  Clock::time_point kill_at;
};
struct DisarmHealth {};  ///< the child ended: no more health checks
enum class Level { kDebug, kInfo, kWarn, kError };
struct Say {  ///< a log line
  Level level = Level::kInfo;
  std::string text;
};
struct Status {  ///< systemd STATUS=
  std::string text;
};
using Action =
    std::variant<Spawn, SignalGroup, ForceKill, MoveDeadline, FrozenPastLease, ArmHealth, DisarmHealth, Say, Status>;
using Actions = std::vector<Action>;

}  // namespace leader

enum class LeaderState { kStarting, kRunning, kStopping, kKilling, kForced, kRestarting, kDone };
const char* to_string(LeaderState s);

/// How the leader phase ended.
struct LeaderOutcome {
  AfterExit::Kind kind = AfterExit::Kind::kExit;
  int exit_code = 0;      ///< kExit
  Millis delay{0};        ///< kRecontend: wait this long first
  std::string step_down;  ///< non-empty: step down for this reason
  StepDown cause = StepDown::kNone;  ///< with step_down: why
  bool lease_ended = false;          ///< kExit: AfterExit::lease_ended
  bool operator==(const LeaderOutcome&) const = default;
};

/// A tree still alive this long after SIGKILL: its keeper does not act (stopped, wedged).
inline constexpr Millis kForceKillAfter{200};

class LeaderMachine {
 public:
  /// `restarts` outlives the phase: a crash loop is counted across leaderships.
  LeaderMachine(LeaderSettings settings, RestartTracker& restarts);

  leader::Actions step(const leader::Event& event, Clock::time_point now, const LeaseView& lease);

  LeaderState state() const { return state_; }
  bool done() const { return outcome_.has_value(); }
  const std::optional<LeaderOutcome>& outcome() const { return outcome_; }
  /// The child's tree is alive (spawned, not yet reaped).
  bool running() const;
  /// Running and no stop begun: the health check runs.
  bool serving() const { return state_ == LeaderState::kRunning; }
  /// SIGKILL was sent: the driver re-checks reaping often.
  bool killing() const { return state_ == LeaderState::kKilling || state_ == LeaderState::kForced; }
  StopCause cause() const { return cause_; }
  /// The next instant a Tick has something to do; max() when nothing is timed.
  Clock::time_point next_wakeup(const LeaseView& lease) const;
  /// When a Tick next tells the keeper its deadline again (half a tick after it last
  /// did) so that it knows the daemon runs; max() when no child runs.
  Clock::time_point keeper_due() const;

 private:
  using Actions = leader::Actions;
  void on(const leader::Start&, Clock::time_point now, const LeaseView& lease, Actions& out);
  void on(const leader::Tick&, Clock::time_point now, const LeaseView& lease, Actions& out);
  void on(const leader::Woke&, Clock::time_point now, const LeaseView& lease, Actions& out);
  void on(const leader::Spawned& e, Clock::time_point now, const LeaseView& lease, Actions& out);
  void on(const leader::SpawnFailed& e, Clock::time_point now, const LeaseView& lease, Actions& out);
  void on(const leader::HandoverAsked& e, Clock::time_point now, const LeaseView& lease, Actions& out);
  void on(const leader::HealthFailed& e, Clock::time_point now, const LeaseView& lease, Actions& out);
  void on(const leader::Signals& e, Clock::time_point now, const LeaseView& lease, Actions& out);
  void on(const leader::ChildExited& e, Clock::time_point now, const LeaseView& lease, Actions& out);

  /// Starts the child unless the lease is lost or too little of it is left to stop it.
  void start(Clock::time_point now, const LeaseView& lease, Actions& out);
  /// Stops the child for `why` (first cause wins): `sig` now, SIGKILL at `kill_at` latest.
  void begin_stop(StopCause why, int sig, Clock::time_point kill_at, const std::string& reason,
                  Clock::time_point now, Actions& out);
  /// The lease comes first (docs/DESIGN.md, invariant 2): lost, deadline within kill_grace,
  /// timeout, a step-down asked for.
  void check_lease(Clock::time_point now, const LeaseView& lease, Actions& out);
  /// A turn that finds the child's stop time passed before the daemon could act on it (a
  /// pause: SIGSTOP, a paused VM, a stalled host): a child alive past the lease deadline is
  /// said at error, counted and killed at once; one already gone, while this daemon had no
  /// turn for more than a tick, is said as it ended (by its keeper, or by itself).
  void after_pause(const leader::ChildSeen& child, Clock::time_point now, const LeaseView& lease, Actions& out);
  /// after_pause() for a child already gone: says how it ended (its keeper's act, or its
  /// own end past the stop time); the run counts as stopped for the deadline.
  void say_gone(const leader::ChildSeen& child, Clock::time_point now, const LeaseView& lease, bool paused,
                Actions& out);
  /// Tells the keeper the kill deadline (the lease's, or a stop's earlier one) when it
  /// moved, and again when keeper_due() has come.
  void tell_keeper(Clock::time_point now, const LeaseView& lease, Actions& out);
  /// The child ended with `code`: restart, or the outcome.
  void after_child(int code, Clock::time_point now, const LeaseView& lease, Actions& out);
  void finish(LeaderOutcome o);
  /// The outcome of a lease that ended before the child could start: oneshot 75,
  /// supervise contends again after restart_delay.
  LeaderOutcome lease_gone() const;
  /// The outcome of stepping down for step_down_reason_.
  LeaderOutcome step_down() const;

  LeaderSettings s_;
  RestartTracker& restarts_;
  LeaderState state_ = LeaderState::kStarting;
  std::optional<LeaderOutcome> outcome_;
  pid_t pid_ = -1;
  pid_t keeper_ = -1;
  StopCause cause_ = StopCause::kNone;
  Clock::time_point stop_kill_at_{};  ///< latest SIGKILL time of the stop in progress
  Clock::time_point stop_began_{};
  Clock::time_point sigkill_at_{};
  std::optional<Clock::time_point> restart_at_;
  std::optional<Clock::time_point> timeout_at_;
  Clock::time_point keeper_deadline_{};  ///< the kill deadline the keeper holds
  Clock::time_point keeper_decided_{};   ///< when it was decided
  Clock::time_point keeper_told_{};      ///< when the keeper was last told
  bool child_gone_ = false;              ///< a pause ended the tree (after_pause); ChildExited comes this turn
  Clock::time_point last_step_{};        ///< the previous event's time
  Clock::duration gap_{};                ///< from the previous event to this one: a pause, when over a tick
  bool stop_requested_ = false;
  int stop_signal_ = SIGTERM;
  std::string step_down_reason_;  ///< set: stop the child, then step down
  StepDown step_down_cause_ = StepDown::kNone;
  /// Forwarded signals, said once per kForwardSummary per signal (invariant 7: a terminal
  /// resized in a loop, a HUP storm): when it was last said, and how many since.
  struct Forwarded {
    Clock::time_point said{};
    std::uint64_t unsaid = 0;
  };
  std::map<int, Forwarded> forwarded_;
};

}  // namespace redisgo::daemon
