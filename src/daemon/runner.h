#pragma once
/// The task runner's driver (internal to daemon/): it owns the event loop and the objects
/// the phases act through, and carries out what the phase machines decide
/// (docs/DESIGN.md "The phases"):
///   runner.cpp   set-up, the run loop, waiting on the loop's fds, signals
///   contend.cpp  the standby phase: attempts, waits, reports (StandbyMachine)
///   lead.cpp     the leader phase: renewals, the child (LeaderMachine)
///   once.cpp     once_per: the read before contending, the claim under the lease
///
/// One thread runs the event loop over a signalfd, the keeper's pidfd, the renewer's wake
/// fd, a CLOCK_BOOTTIME timerfd for every deadline, and the release-channel subscribers;
/// the renewer and the systemd watchdog have their own threads. The lease deadline is
/// enforced here from an atomic read of the renewer's deadline, so no Redis call can
/// delay it, and nothing in the loop blocks on Redis.

#include <poll.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backoff/backoff.h"
#include "daemon/daemon.h"
#include "daemon/leader.h"
#include "daemon/standby.h"
#include "daemon/rules.h"
#include "daemon/waiting.h"
#include "lock/renewer.h"
#include "lock/verdict.h"
#include "lock/wake.h"
#include "log/cause_log.h"
#include "metrics/metrics.h"
#include "process/signals.h"
#include "redis/subscriber.h"
#include "systemd/notify.h"
#include "util/interrupt.h"
#include "util/timer.h"

namespace spdlog {
class logger;
}

namespace redisgo::daemon {

/// How long the undo of a last failed attempt may take to reach its nodes before a
/// oneshot run that gives up exits.
inline constexpr Millis kSettleBeforeExit{200};

/// A failure's cause, stable across attempts: the node (whether its connection was
/// closed, then refused, it is one node down), or for a failure of the whole round its kind.
std::string cause_key(const lock::NodeError& e);

class Runner {
 public:
  Runner(const TaskOptions& options, const Dependencies& deps);
  int run();

 private:
  struct Leading;  // lead.cpp: the leader phase's live objects

  // --- contending (contend.cpp) ---
  std::optional<int> contend();
  /// Carries out one attempt: the request, then what the machine makes of it.
  standby::Actions attempt(StandbyMachine& machine);
  /// Carries out a Wait, redrawing `shown` (the miss on show) every second meanwhile.
  standby::WaitEnded wait_for(const standby::Wait& w, const std::optional<standby::ShowMiss>& shown);
  /// Waits until `until` (on the boot-time clock), ended early by a stop request and, with
  /// `wake_on_release`, by another holder's release message, a message of the waiting line
  /// or a subscription that became active. Keeps the subscriptions up meanwhile.
  standby::WaitEnded wait_until(Clock::time_point until, bool wake_on_release);
  void show_miss(const standby::ShowMiss& miss);
  /// After an attempt: the line's length for the metrics; with fair = false, a line seen
  /// (mixed settings on one key) is said once.
  void note_line(const lock::Acquisition& acq, const lock::Verdict& verdict);
  /// Reads and discards what the subscriptions received while nobody listened.
  void drain_subscriptions();
  /// redisgo_task(1), MODES: stopped while waiting for the lease, oneshot exits 75 and supervise 0.
  int stopped_while_waiting() const;
  /// Carries out a Report: the attempt's news in the log, STATUS= and the metrics.
  void report(const standby::Report& r);
  void report_attempt(const lock::Acquisition& acq);
  /// The restart guard's news from an attempt (docs/DESIGN.md "Restart guard"): a node
  /// that grants nothing yet (once per node and wait), one where the guard cannot apply
  /// (once per node), a holder with a longer `expire` than ours (once).
  void report_guard(const lock::Acquisition& acq);
  /// STATUS=, redisgo_task_state and an error line when an attempt reached no
  /// quorum (refused credentials, TLS, error replies, nodes down); "standby" otherwise.
  /// Report::giving_up: oneshot's last line says it instead.
  void report_standing(const standby::Report& r);
  /// redisgo_task_control_requests_total as the attempt `sent` finds the key: a pause that
  /// begins to hold this daemon back counts as "pause", and one lifted before its end
  /// (`resume`, or its key deleted) as "resume".
  void note_pause(const lock::Acquisition& acq, const lock::Verdict& verdict, Clock::time_point sent);
  /// A holder whose key has no TTL (set by hand): said once.
  void report_never_expires(const lock::Acquisition& acq, const lock::Verdict& verdict);
  /// Says why the run gives up (GiveUp::why); its exit status.
  int give_up(const standby::GiveUp& g);
  /// The node health seen in a round, for redisgo_task_node_up.
  void note_nodes(const std::vector<std::string>& answered, const std::vector<lock::NodeError>& errors);

  // --- leading (lead.cpp) ---
  std::optional<int> lead(const lock::Acquisition& acquired);
  /// Logs an error when slots beyond our `limit` are held (mixed limits on one key). Asked at
  /// the first miss or acquisition, then at an acquisition at most every kLimitCheckEvery.
  void warn_larger_limit();
  static constexpr Millis kLimitCheckEvery{300'000};
  /// The renewal thread for this lease; nullptr (logged, released) when it cannot start.
  std::unique_ptr<lock::Renewer> start_renewer(const lock::Acquisition& acquired);
  /// The leader machine's loop, until it has an outcome.
  void run_leader(Leading& l);
  /// One turn's events after poll: Woke, the control channels, the health check, Signals,
  /// ChildExited.
  void after_poll(Leading& l, const std::vector<pollfd>& fds, std::size_t first_control);
  /// Whether the child's tree is gone (reaped without blocking) and what its keeper did.
  leader::ChildSeen child_seen(Leading& l);
  /// Feeds `event` to the leader machine and carries out its actions. True when they
  /// started the child (the loop's turn then begins again).
  bool drive(Leading& l, const leader::Event& event);
  /// Hears handover requests on the control channels after poll.
  void service_control(Leading& l, const std::vector<pollfd>& fds, std::size_t first);
  /// After the machine's outcome: kill what is left, record, release, hold or wait.
  std::optional<int> end_lease(Leading& l);
  /// The child's spawn options for this lease: the config's, plus the REDISGO_TASK_* variables.
  process::SpawnOptions child_spawn(const lock::Acquisition& lease) const;
  /// Starts the child; on failure logs why and returns the event for the machine.
  leader::Event spawn_child(Leading& l, Clock::time_point kill_at);
  void log_release(const lock::Release& r);
  /// The release found another holder's lease where ours stood: said at error, counted.
  void report_taken(const lock::Release& r);
  /// Stops the renewals and releases, logging the outcome.
  void release_lease(lock::Renewer& renewer);
  /// Waits out step_down_hold after stepping down; nullopt to contend again. A planned
  /// step-down (handover) holds step_down_hold as configured; a failing host longer each time.
  std::optional<int> hold_after_step_down(const std::string& why, bool planned);
  /// Holds back for `hold` (STATUS= `status`, state stepped_down); nullopt to contend again.
  std::optional<int> hold_back(const std::string& status, Millis hold);

  // --- renewals refused (refused.cpp) ---
  /// What the refused renewals lacked, for the log, STATUS=, the metric.
  struct RefusedRight {
    std::string right;  ///< "+pexpire"; "credentials", "tls", "keys"; "unknown" when not named
    std::string text;   ///< "the ACL user 'redisgo' lacks +pexpire"
  };
  /// The ACL user of the config ("default" when it names none).
  std::string acl_user() const;
  /// The commands this config's renewals run (what probe_rights tries).
  std::vector<std::string> renewal_commands() const;
  /// From the node's refusal, or (Redis 7.0 does not name it inside a script) the probe's find.
  RefusedRight name_refusal(const lock::NodeError& refusal, const lock::RightsProbe& probe) const;
  /// oneshot: a run whose renewals were refused (exit 77) names the right in its last line.
  void say_refused_at_exit(const lock::NodeError& refusal);
  /// supervise, after stepping down for refused renewals (`why`): holds back until a probe finds
  /// the right granted, and at least the step-down hold, saying so in STATUS=, the state metric
  /// and a note beside the key (redisgo_task(1) "Renewals refused"). nullopt to contend again.
  std::optional<int> hold_while_refused(const lock::NodeError& refusal, const std::string& why);
  void show_refused(const RefusedRight& named);
  /// The state ends: the metric, and on a stop (`drop_note`) our note beside the key.
  void end_refused(bool drop_note);
  /// once_per: how long a claim is kept, from its writing and from every renewal of its
  /// run's lease: 2 x once_per (redisgo_task(1), MODES), and never less than 2 x expire, so that it outlives
  /// the gap between two renewals and a dead holder's lease.
  Millis claim_ttl() const { return std::max(*cfg_.task.once_per, cfg_.redis.expire) * 2; }

  // --- once_per (once.cpp) ---
  /// Before contending, whether this run's slot was run already (exit 75 then).
  std::optional<int> slot_already_run();
  /// Claims the slot under the lease; an exit status when it is not to run.
  std::optional<int> claim_slot(const lock::Acquisition& acquired, lock::Renewer& renewer);
  /// The highest witness the nodes show, read under the lease (0: none, or unreadable).
  std::int64_t highest_witness();
  /// A slot not run after its claim (run already; skipped: logged at error and counted).
  int slot_not_run(const lock::Claim& claim);

  // --- shared (runner.cpp) ---
  /// Reads pending signals. TERM/INT set stop_requested_; others are returned for forwarding.
  std::vector<int> read_signals();
  /// poll() on `fds` plus the boot-time timer armed at `wake_at`, for at most `cap`
  /// (steady-clock waits such as a subscriber's retry) and the watchdog's period.
  void poll_until(std::vector<pollfd>& fds, Clock::time_point wake_at, std::optional<Millis> cap = std::nullopt);
  /// systemd STATUS=, sent only when it changed.
  void say_status(std::string text);
  /// Says on stderr that [metrics] cannot start; false then.
  bool start_exporter();
  /// Stops the exporter; a last textfile write left behind is said at warn.
  void stop_exporter();
  /// run() up to its exit status.
  int run_phases();
  void log_start() const;

  const TaskOptions& opts_;
  const Dependencies& deps_;
  const config::Config& cfg_;
  lock::LeaseOptions lease_opts_;
  lock::LeaseKeys keys_;
  std::shared_ptr<spdlog::logger> log_;
  const Clock& clock_;
  systemd::Notifier notifier_;
  systemd::Watchdog watchdog_;
  process::SignalFd signals_;
  BootTimer timer_;
  Interrupt renewer_wake_;
  std::unique_ptr<lock::LeaseBackend> backend_;
  std::unique_ptr<backoff::Backoff> backoff_;
  std::vector<std::unique_ptr<redis::Subscriber>> subscribers_;
  log::CauseLog attempt_log_;
  log::CauseLog renew_log_;  // used by the renewal thread only, while it runs
  RestartTracker restarts_;
  bool stop_requested_ = false;
  int stop_signal_ = SIGTERM;
  std::optional<StandbyMachine> standby_;  ///< built once: it keeps the stray-signal pacing
  WaitReporter waiting_;                   ///< the terminal line or the quiet log lines of a long wait
  bool warned_unpublished_ = false;
  bool lease_loss_counted_ = false;  ///< this lease's loss is in redisgo_task_lease_losses_total already
  std::optional<Clock::time_point> limit_checked_;  ///< when warn_larger_limit last asked
  bool warned_unfair_ = false;     // fair: waiters outside the line heard a release (said once)
  bool warned_line_ = false;       // fair = false: a turn of the line seen (said once)
  bool warned_line_broken_ = false;  // the line is not a sorted set (said once)
  bool warned_never_expires_ = false;
  bool warned_longer_lease_ = false;
  std::string status_text_;                 ///< the last STATUS= sent
  std::string blocked_cause_;               ///< why attempts reach no quorum ("" = they do)
  std::map<std::string, Clock::time_point> blocked_said_;  ///< per cause, when last logged
  bool blocked_logged_ = false;             ///< the current blockage was logged
  bool paused_said_ = false;                ///< the key's pause was logged
  /// When the pause that held this daemon back ends by itself (max: never); nullopt: none.
  std::optional<Clock::time_point> pause_ends_;
  /// As leader, this daemon was asked by `pause --stop` and counted it: the pause its next
  /// attempt finds is that one.
  bool pause_stop_heard_ = false;
  std::set<std::string> guard_said_;        ///< nodes whose guard wait was logged (this wait)
  std::set<std::string> unguarded_said_;    ///< nodes where the guard cannot apply, logged
  std::set<std::string> other_type_said_;   ///< "node key" of slots of another type, logged
  std::vector<int> subscriber_failures_;  // per subscriber, failures already logged
  log::CauseLog subscribe_log_;
  metrics::Metrics metrics_;
  std::unique_ptr<metrics::Exporter> exporter_;
  std::uint64_t textfile_failures_ = 0;
  log::CauseLog metrics_log_;
  std::optional<std::string> once_key_;   ///< once_per: the claim of this run's slot
  /// once_per: the claim counted (claim_slot); the renewals write a lost claim again only then.
  std::shared_ptr<std::atomic<bool>> claim_made_;
  std::int64_t once_slot_s_ = 0;          ///< its start, seconds since the epoch
  std::int64_t started_ms_;               ///< when this run started (wall clock)
  Clock::time_point started_at_;          ///< ... and on clock_: where --wait-timeout counts from
};

}  // namespace redisgo::daemon
