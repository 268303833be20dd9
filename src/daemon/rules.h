#pragma once
/// The daemon's rules, as pure functions of what a phase knows: what follows a missed
/// attempt, what follows the child's end, when the child is stopped before the lease ends,
/// how often refused renewals are probed. The phase machines (standby.h, leader.h) and their
/// driver call them; nothing here touches Redis, processes or clocks, so every rule of
/// redisgo_task(1), MODES and EXIT STATUS is unit-tested directly. Where each one decides:
///
///   standby.h  attempt missed   -> after_miss: wait (at least kMinAttemptGap apart,
///                                  kSplitAttemptGap after split votes) | give up: give_up_code
///              stopped waiting  -> stopped_status
///              granted          -> leader.h
///   leader.h   child to start   -> can_start_child; when it is stopped: stop_schedule
///              child ended      -> after_exit (a crash loop counted by RestartTracker):
///                                    restart   -> leader.h, after the delay
///                                    recontend -> standby.h, after the delay, or after a
///                                                 step-down's hold (RestartTracker::on_step_down)
///                                    exit      -> the run's exit status
///   renewals refused (a step-down) -> probes refused_probe_gap apart -> standby.h

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/clock.h"

namespace redisgo::daemon {

using Millis = std::chrono::milliseconds;

/// Least time between the starts of two acquisition attempts of one waiter, whatever its
/// backoff says ("zero" included), unless a release message woke it (docs/DESIGN.md, invariant 7):
/// a miss costs a node four commands, so no waiter sends a node more than ~40/s.
inline constexpr Millis kMinAttemptGap{100};
/// Least time between the starts of two attempts once split votes against a lease come in
/// a row (standby.h `split_vote`, `attempt_gap`: granted by some nodes but not by a quorum;
/// under Redlock, e.g. a holder on the nodes we reach but not on the one it cannot reach,
/// which stays so). The gap grows by kMinAttemptGap per split vote, and one against a turn
/// is not counted, so that two contenders meeting, or node-local lines that disagree for a
/// moment, are settled by a quick retry (a flat gap would stall a line with a node frozen).
/// Such a miss is no four-command miss: each node that granted ran the whole grant (EVALSHA,
/// GET, SET, PTTL of the pause, ZRANGE of the line, the fence's GET, TIME, SET: 8, 9 with a
/// ZREM) and then our undo (EVALSHA, GET, DEL: 3), up to 12 commands, three misses' worth;
/// three times the gap keeps such a waiter within the same bound per node. Nor does it name
/// a holder's TTL to sleep until (no holder has a quorum), so without this gap only the
/// backoff would pace it. Applies to timers, release messages and turns alike, but for turns
/// from a quorum of nodes (standby.cpp on_turn: a lease a quorum handed us, no split that
/// stays), kept only to kMinAttemptGap.
inline constexpr Millis kSplitAttemptGap{3 * kMinAttemptGap};
/// A forwarded signal is said at most once per this, per signal (the others are counted).
inline constexpr Millis kForwardSummary{30'000};

/// Why the child is being stopped (first cause wins).
enum class StopCause { kNone, kShutdown, kLeaseLost, kDeadline, kTimeout, kStepDown };

/// What to do after an attempt that did not get the lease.
struct AfterMiss {
  bool give_up = false;  ///< oneshot: exit kExitTempFail
  Millis wait{0};        ///< otherwise: wait this long (a release message ends it early)
};

/// Inputs of after_miss().
struct MissContext {
  config::Mode mode = config::Mode::kOneshot;
  bool wait_flag = true;         ///< --wait (default) / --no-wait
  bool monitor_try_all = true;
  int retries_count = 4;
  int attempts = 0;              ///< attempts made so far, including this one
  /// From the backoff strategy; nullopt = the strategy says give up ("stop").
  std::optional<Millis> backoff;
  std::int64_t holder_ttl_ms = -1;  ///< from the failed attempt; -1 unknown
  /// No holder known, but the restart guard holds the lease back this long (ms); -1 not.
  std::int64_t guard_ms = -1;
  bool subscribed = false;       ///< a release message will wake the waiter
  Millis backoff_max{1000};
  /// The waiting line: our place in it (1 = head, 0 = not in line), and a head's window.
  std::int64_t position = 0;
  Millis turn_window{1000};
  /// The key holds a woken head's turn (holder_ttl_ms is what is left of its window).
  bool turn = false;
};

/// oneshot: --no-wait tries once; monitor_try_all=false tries retries_count times; else
/// forever. supervise: forever. The wait: when the holder's TTL is known and a release
/// message will wake us, sleep until that lease could expire (+1 ms) and no longer —
/// a crashed holder is taken over as its lease ends, and a quiet standby costs Redis
/// about one request per lease period. Without the subscription, or when the attempts
/// are counted (oneshot, monitor_try_all = false), wait the backoff, capped at that expiry. A "stop" strategy gives up in oneshot; in supervise it waits backoff_max.
/// With no holder known and the restart guard's wait known, wait exactly that (+1 ms):
/// nothing can be granted sooner, so neither counted attempts nor a waiter without a
/// subscription ask before it opens (docs/DESIGN.md "Restart guard").
/// In the waiting line (position > 1, subscribed), the wait is that expiry plus one turn
/// window per waiter ahead, at most kLineSleepMax: the line wakes the waiters, and only the
/// head need watch a holder that may die without releasing; the others are the fallback
/// when those ahead are dead or frozen too, each one window later than the one before it
/// (docs/DESIGN.md "The waiting line"). A turn is not a lease: when it ends unused (its head
/// frozen, or gone without a FIN) somebody must wake the next head, so a waiter that met one
/// tries again when it ends, whatever its place (else a chain of frozen heads would cost each
/// live waiter behind them a window per waiter ahead at every link).
AfterMiss after_miss(const MissContext& c);
inline constexpr Millis kLineSleepMax{3'600'000};

/// The exit status of a oneshot run that gives up waiting, from its last attempt
/// (redisgo_task(1), EXIT STATUS): 75 when another holder has the lease (`busy` nodes said so), else 77
/// when a node refused our credentials, else 69 when fewer than a quorum answered, else
/// 75 (a split vote, a lease that came too late).
int give_up_code(int busy, bool auth_refused, int answered, int quorum);

/// redisgo_task(1), MODES: stopped while waiting for the lease, oneshot exits 75 and supervise 0.
int stopped_status(config::Mode mode);

/// Crash-loop accounting of a supervise leader (redisgo_task(1), MODES):
///  - every child exit is recorded; more than `limit` exits within `window`: step down;
///  - the delay before a restart grows with the exits since the child last ran stably
///    (kStableRun): restart_delay for the first, then from max(restart_delay, kRestartStep)
///    doubling up to kRestartDelayMax (or restart_delay, if longer), whatever the window;
///  - each step-down since then holds off longer: step_down_hold, at least `floor` (the
///    lease TTL), doubling up to kHoldMax (or step_down_hold, if longer).
/// So no configuration makes a crash loop fork, acquire or log faster than these delays.
class RestartTracker {
 public:
  static constexpr Millis kRestartStep{100};
  static constexpr Millis kRestartDelayMax{30'000};
  static constexpr Millis kStableRun{30'000};
  static constexpr Millis kHoldMax{3'600'000};
  RestartTracker(int limit, Millis window, Millis base_delay);
  /// A child started at `now`.
  void on_start(Clock::time_point now);
  /// Records an exit at `now`. The delay before the next start, or nullopt: step down.
  std::optional<Millis> on_exit(Clock::time_point now);
  /// Exits recorded within the window before `now`.
  int recent(Clock::time_point now) const;
  /// A step-down: how long to hold off contending.
  Millis on_step_down(Millis hold, Millis floor);

 private:
  int limit_;
  Millis window_;
  Millis base_;
  std::vector<Clock::time_point> exits_;
  std::optional<Clock::time_point> started_;
  int streak_ = 0;        // exits since the child last ran stably
  int step_downs_ = 0;    // step-downs since the child last ran stably
};

/// Why a supervise leader steps down (redisgo_task(1) "Stepping down"; the `cause` of
/// redisgo_task_step_downs_total).
enum class StepDown {
  kNone,
  kHandover,        ///< `handover` asked for it
  kPause,           ///< `pause --stop` asked for it: the key is paused
  kHealth,          ///< health_fall checks in a row failed
  kRestartLimit,    ///< the child exited more than restart_limit times within restart_window
  kCannotStart,     ///< the command cannot be started on this host
  kRenewalRefused,  ///< Redis refused the renewals: held back until a probe finds the right granted
};
/// "handover", "pause", "health", "restart_limit", "cannot_start", "renewal_refused"; "" for kNone.
const char* to_string(StepDown cause);
/// A step-down asked for (handover, pause --stop): no failure, so no warning and no growing hold.
bool planned(StepDown cause);

/// What to do when the child has ended.
struct AfterExit {
  enum class Kind { kExit, kRestart, kRecontend } kind = Kind::kExit;
  int exit_code = 0;     ///< kExit
  Millis delay{0};       ///< kRestart / kRecontend: wait this long first
  std::string step_down{};           ///< kRecontend: non-empty, step down for this reason
  StepDown cause = StepDown::kNone;  ///< ... and this cause
  /// kExit: the run ends because the lease was lost or ran out while the child ran (the child
  /// was stopped): its last line says so. Not for refused renewals, which say more.
  bool lease_ended = false;
};

struct ExitContext {
  config::Mode mode = config::Mode::kOneshot;
  config::Restart restart = config::Restart::kOnFailure;
  Millis restart_delay{1000};
  int child_code = 0;    ///< exit code (128+N for signal N)
  StopCause cause = StopCause::kNone;
  bool refused = false;  ///< the renewals were refused (credentials or ACL): a lost lease is 77
  bool stop_requested = false;  ///< a TERM/INT came: a child that ended by itself ends the run
  bool lease_lost = false;      ///< the renewals found the lease gone: no restart under it
  /// cause kStepDown: what asked for it.
  StepDown step_down = StepDown::kNone;
  std::string step_down_reason{};
  Millis restart_window{60'000};  ///< for the restart_limit step-down's reason
  int restart_limit = 5;
};

/// The one rule after the child's end (redisgo_task(1), MODES, EXIT STATUS).
/// oneshot: the child's code, 75 when the lease was lost/deadline (77 when the renewals were
/// refused), 124 on timeout, the child's code on shutdown (the signal was forwarded).
/// supervise: exit 0 on shutdown; a step-down asked for; renewals refused: step down; after a
/// lost lease, release and contend again after restart_delay; a child that ended by itself
/// restarts per `restart` (not under a lost lease or a stop), its crash loop counted by
/// `restarts` (growing delays, then a step-down at restart_limit; nullptr: not counted), and
/// one done (status 0) and not restarted contends again after restart_delay, at least
/// RestartTracker::kRestartStep.
class RestartTracker;
AfterExit after_exit(const ExitContext& c, RestartTracker* restarts = nullptr, Clock::time_point now = {});

/// Renewals refused (redisgo_task(1), "Renewals refused"): a supervise leader whose renewals
/// the ACL refused steps down and takes the lease again only once a probe of the refused right
/// passes. The first probe goes at once (it names the right where Redis does not); the next
/// one kRefusedProbeFirst later, the gap doubling up to kRefusedProbeMax: at most one script
/// per node a minute in the long run, and the lease is never taken sooner than the step-down
/// hold would have let it be.
inline constexpr Millis kRefusedProbeFirst{5'000};
inline constexpr Millis kRefusedProbeMax{60'000};
/// The gap after probe number `probes` (1 = the first).
Millis refused_probe_gap(int probes);
/// How long the note beside the key outlives the probe that wrote it: three gaps, so that
/// one late probe does not let it lapse, and a daemon that dies leaves it minutes at most.
Millis refused_note_ttl(Millis gap);

/// Local lease deadline arithmetic (docs/DESIGN.md, invariant 2). The child must be dead before
/// `deadline`: SIGKILL goes at deadline - margin, kill_signal kill_grace earlier.
struct StopSchedule {
  Clock::time_point term_at;  ///< send kill_signal when reached without a renewal
  Clock::time_point kill_at;  ///< SIGKILL the group
};
/// margin covers signal delivery and reaping: 1/20 of the TTL, at least 5 ms, at most 100 ms.
Millis kill_margin(Millis ttl);
StopSchedule stop_schedule(Clock::time_point deadline, Millis kill_grace, Millis ttl);

/// Whether a child may be started under this deadline: not once the stop time is reached.
bool can_start_child(Clock::time_point now, Clock::time_point deadline, Millis kill_grace, Millis ttl);

}  // namespace redisgo::daemon
