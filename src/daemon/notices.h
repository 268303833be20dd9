#pragma once
/// What the daemon says of the lease (internal to daemon/): the log lines, STATUS= and the
/// metrics of every attempt, renewal and release, each news said once or paced as
/// redisgo_task(1) "Never silent" and invariant 7 ask. Holds what has been said already (the
/// "said once" flags, per-cause pacing), so that the drivers only hand it what happened:
///   notices.cpp        the standby phase: attempts, the restart guard, a pause, giving up
///   notices_lease.cpp  the leader phase: renewals, the release, mixed settings on one key

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/context.h"
#include "daemon/event_loop.h"
#include "daemon/leader.h"
#include "daemon/standby.h"
#include "daemon/waiting.h"
#include "lock/verdict.h"
#include "lock/wake.h"
#include "log/cause_log.h"

namespace redisgo::daemon {

/// A failure's cause, stable across attempts: the node (whether its connection was
/// closed, then refused, it is one node down), or for a failure of the whole round its kind.
std::string cause_key(const lock::NodeError& e);

class Notices {
 public:
  Notices(Context& ctx, EventLoop& loop);

  // --- standby (notices.cpp) ---
  /// Carries out a Report: the attempt's news in the log, STATUS= and the metrics.
  void report(const standby::Report& r);
  /// After an attempt: the line's length for the metrics; with fair = false, a line seen
  /// (mixed settings on one key) is said once.
  void note_line(const lock::Acquisition& acq, const lock::Verdict& verdict);
  /// redisgo_task_control_requests_total as the attempt `sent` finds the key: a pause that
  /// begins to hold this daemon back counts as "pause", and one lifted before its end
  /// (`resume`, or its key deleted) as "resume".
  void note_pause(const lock::Acquisition& acq, const lock::Verdict& verdict, Clock::time_point sent);
  /// The terminal line or the quiet log lines of a long wait.
  WaitReporter& waiting() { return waiting_; }
  void show_miss(const standby::ShowMiss& miss);
  /// The wait is over: the lease is ours (the restart guard's notes start afresh at the next wait).
  void leading(const standby::Lead& lead);
  /// Says why the run gives up (GiveUp::why); its exit status.
  int give_up(const standby::GiveUp& g);
  /// A subscription became active, or failed (said when the server answered: a node that is
  /// down is reported by the attempts already); `what` says what its loss costs.
  void subscribed(const std::string& node);
  void subscribe_failed(const std::string& node, const std::string& error, const std::string& what);

  // --- leader (notices_lease.cpp) ---
  /// Logs an error when slots beyond our `limit` are held (mixed limits on one key). Asked at
  /// the first miss or acquisition, then at an acquisition at most every kLimitCheckEvery.
  void warn_larger_limit();
  static constexpr Millis kLimitCheckEvery{300'000};
  /// "acquired ...", the gauges of a leader; the lease's loss is not counted yet.
  void acquired(const lock::Acquisition& acquired);
  /// A renewal round's outcome (on the renewal thread): node failures by cause, the metrics.
  void renewal(const lock::Renewal& r);
  /// The lease ended lost (the renewer's `reason`; `by_deadline`: no confirmed renewal before
  /// the local deadline, else Redis said the key was no longer ours), or at its deadline while
  /// the child ran: counted once, by its cause.
  void lease_lost(const std::string& reason, bool by_deadline);
  void lease_past_deadline();
  /// A oneshot run's last line when it ends for its lost lease: what was lost, and the status.
  void ended_with_lease(int exit_status);
  /// The release's outcome, in words (taken by another holder: an error, a loss of its own).
  void log_release(const lock::Release& r);
  /// A control message was heard: counted once per lease and kind (every node carries it).
  void control_heard(lock::Control kind);
  void say(leader::Level level, const std::string& text);

 private:
  void report_attempt(const lock::Acquisition& acq);
  /// The restart guard's news from an attempt (docs/DESIGN.md "Restart guard"): a node
  /// that grants nothing yet (once per node and wait), one where the guard cannot apply
  /// (once per node), a holder with a longer `expire` than ours (once).
  void report_guard(const lock::Acquisition& acq);
  /// STATUS=, redisgo_task_state and an error line when an attempt reached no
  /// quorum (refused credentials, TLS, error replies, nodes down); "standby" otherwise.
  /// Report::giving_up: oneshot's last line says it instead.
  void report_standing(const standby::Report& r);
  /// The key's pause, said when it begins and ends.
  void report_pause(const std::optional<lock::PauseRecord>& pause, bool blocked);
  /// A holder whose key has no TTL (set by hand): said once.
  void report_never_expires(const lock::Acquisition& acq, const lock::Verdict& verdict);
  /// The node health seen in a round, for redisgo_task_node_up.
  void note_nodes(const std::vector<std::string>& answered, const std::vector<lock::NodeError>& errors);
  /// The release found another holder's lease where ours stood: said at error, counted.
  void report_taken(const lock::Release& r);
  /// A release's warnings about the key's settings (each said once).
  void report_release_settings(const lock::Release& r);

  Context& ctx_;
  EventLoop& loop_;
  const config::Config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  WaitReporter waiting_;
  log::CauseLog attempt_log_;
  log::CauseLog renew_log_;  // used by the renewal thread only, while it runs
  log::CauseLog subscribe_log_;
  bool warned_unpublished_ = false;
  bool lease_loss_counted_ = false;  ///< this lease's loss is in redisgo_task_lease_losses_total already
  /// This lease ran out (its deadline passed): the child was due to stop before it could end,
  /// so another holder's lease found at the release is the expected sequel.
  bool lease_ran_out_ = false;
  std::optional<Clock::time_point> limit_checked_;  ///< when warn_larger_limit last asked
  bool warned_unfair_ = false;     // fair: waiters outside the line heard a release (said once)
  bool warned_line_ = false;       // fair = false: a turn of the line seen (said once)
  bool warned_line_broken_ = false;  // the line is not a sorted set (said once)
  bool warned_never_expires_ = false;
  bool warned_longer_lease_ = false;
  std::string blocked_cause_;               ///< why attempts reach no quorum ("" = they do)
  std::map<std::string, Clock::time_point> blocked_said_;  ///< per cause, when last logged
  bool blocked_logged_ = false;             ///< the current blockage was logged
  bool paused_said_ = false;                ///< the key's pause was logged
  /// When the pause that held this daemon back ends by itself (max: never); nullopt: none.
  std::optional<Clock::time_point> pause_ends_;
  /// As leader, this daemon was asked by `pause --stop` and counted it (control_heard): the
  /// pause its next attempt finds is that one.
  bool pause_stop_heard_ = false;
  /// A handover or a pause --stop was counted in redisgo_task_control_requests_total for
  /// this lease: every node carries the request, and it counts once.
  bool handover_counted_ = false;
  bool pause_counted_ = false;
  std::set<std::string> guard_said_;        ///< nodes whose guard wait was logged (this wait)
  std::set<std::string> unguarded_said_;    ///< nodes where the guard cannot apply, logged
  std::set<std::string> other_type_said_;   ///< "node key" of slots of another type, logged
};

}  // namespace redisgo::daemon
