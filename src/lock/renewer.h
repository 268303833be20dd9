#pragma once
/// The renewal thread (docs/DESIGN.md "Processes and threads"): drives a RenewalMachine
/// (renewal_machine.h, where the rules are), sending its rounds through its own backend (its
/// own connections), and publishes what the machine holds for the main loop to read. A lost
/// lease is an event, not an exception: lost() becomes true and `wake` is triggered.
///
/// The deadline itself is enforced by the daemon's main loop from valid_until(), which is
/// an atomic read that never waits on Redis, so a hung Redis cannot delay it. stop()
/// cancels a renewal round in flight at once (the backend watches the stop fd).

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "lock/lease.h"
#include "lock/renewal_machine.h"
#include "util/interrupt.h"

namespace redisgo::lock {

class Renewer {
 public:
  /// Makes the renewer's backend; `cancel_fd` is the renewer's stop fd, which the backend
  /// must watch (LeaseOptions::cancel_fd) so stop() does not wait on a slow node.
  using BackendFactory = std::function<std::unique_ptr<LeaseBackend>(int cancel_fd)>;

  /// Sees every round's outcome, on the renewer's thread (the daemon logs node failures
  /// by cause from it). Must not block.
  using Observer = std::function<void(const Renewal&)>;

  /// kNow starts the thread in the constructor; kLater leaves it to start(), so that a
  /// leader can fork its child first (the thread's start is off the handover's path).
  enum class Start { kNow, kLater };

  /// Makes the backend and (kNow) starts the thread. `initial` is the deadline from the
  /// acquisition, `lease_start` when the acquisition was sent: renewals go out at
  /// lease_start + interval, then `interval` after each round's own send (start to start: a
  /// slow round trip does not stretch the cadence), however late the thread starts.
  /// `wake` is triggered on every change the main loop must look at (lost, deadline
  /// moved). Throws (std::system_error, or what the factory throws) when it cannot start.
  Renewer(const BackendFactory& make_backend, Millis interval, Clock::time_point lease_start,
          Clock::time_point initial, Interrupt& wake, const Clock& clock = SystemClock::instance(),
          Observer observer = nullptr, Start start = Start::kNow);
  ~Renewer();  ///< stop() and join
  Renewer(const Renewer&) = delete;
  Renewer& operator=(const Renewer&) = delete;

  /// How soon a round is retried after one that was not confirmed (but not lost): a
  /// quarter of `interval`, at least 100 ms, at most `interval`.
  static Millis retry_interval(Millis interval);
  /// The options of the renewal thread's own backend: `main`'s, told the lease `acquired`
  /// (its slot, token, lease id and where it was granted), and a failed node tried again at
  /// the renewal's retry pace for `interval`, not after the node's doubling backoff.
  static LeaseOptions backend_options(const LeaseOptions& main, const Acquisition& acquired, Millis interval);

  Clock::time_point valid_until() const noexcept;
  /// When the acquisition or the renewal that set valid_until() was sent: the moment the
  /// deadline was decided, which the keeper weighs a new deadline by
  /// (process/deadline_rule.h). Read after valid_until(), it is never older than the one
  /// that set the deadline just read.
  Clock::time_point renewed_at() const noexcept;
  bool lost() const noexcept { return lost_.load(); }
  /// RenewalMachine::lost_by_deadline(), once lost().
  bool lost_by_deadline() const noexcept { return lost_by_deadline_.load(); }
  /// The last round was refused by so many nodes (credentials or ACL rights) that no quorum
  /// could confirm it: a lease that ends so is lost to a refusal (exit 77, a step-down).
  bool refused() const noexcept { return refused_.load(); }
  std::string lost_reason() const;
  /// The node that refused the last round refused by a quorum (refused() or not since), with
  /// what it answered: what the daemon names the missing right from. Empty before any.
  NodeError refusal() const;
  /// Renewals confirmed so far.
  std::uint64_t renewals() const noexcept { return renewals_.load(); }
  /// Renewal rounds begun so far, confirmed or not (a round may still be on its way to a
  /// node: only a release on the same connections is sure to come after it).
  std::uint64_t rounds() const noexcept { return rounds_.load(); }
  /// Starts the thread of a Start::kLater renewer (idempotent; nothing after stop()). A
  /// thread that cannot start loses the lease at once (lost(), the reason, a wake): the
  /// deadline is then never moved, and the main loop stops the child as for any lost lease.
  void start() noexcept;
  /// Stops renewing (idempotent) and joins. Does not release.
  void stop() noexcept;
  /// Stops renewing and releases the lease: through the renewer's own connections once a
  /// round has gone out on them (a round still queued at a slow node then runs before the
  /// release, never after it, where it would set the key again), else through `fallback`
  /// (the connections that acquired: the renewer's may not even be open). No round begins
  /// after the stop; one in flight is cancelled and waited for, and only then is the
  /// release sent. The thread is joined after the release, not before it: a renewer
  /// waiting for its next round has nothing to finish. Returns LeaseBackend::release()'s
  /// outcome. Never throws.
  Release stop_and_release(LeaseBackend& fallback) noexcept;

 private:
  void run();
  /// One round through the backend; a throw counts as a round that nobody confirmed.
  Renewal send_round();
  /// Makes what the machine holds readable by the main loop, and wakes it when `step` says.
  void publish(const RenewalMachine::Step& step);

  /// Who may use backend_: the thread, only between kIdle -> kInRound and back; once
  /// kStopped, the thread begins no round, so a stop that finds kIdle can release on
  /// backend_ at once, while the thread leaves by itself.
  enum Phase : int { kIdle, kInRound, kStopped };
  /// Sets kStopped and wakes the thread; joins it only when a round was in flight.
  void halt() noexcept;

  Interrupt stop_;
  std::atomic<int> phase_{kIdle};
  std::atomic<bool> stopped_{false};  // stop() called: start() starts nothing after it
  std::unique_ptr<LeaseBackend> backend_;
  RenewalMachine machine_;  // the thread's own
  Interrupt& wake_;  // trigger() writes the eventfd, hence not const
  const Clock& clock_;
  Observer observer_;
  std::atomic<Clock::duration::rep> valid_until_ns_;
  std::atomic<Clock::duration::rep> renewed_at_ns_;
  std::atomic<bool> lost_{false};
  std::atomic<bool> lost_by_deadline_{false};
  std::atomic<bool> refused_{false};
  std::atomic<std::uint64_t> renewals_{0};
  std::atomic<std::uint64_t> rounds_{0};
  mutable std::mutex mu_;
  std::string lost_reason_;  // guarded by mu_
  NodeError refusal_;        // guarded by mu_
  std::thread thread_;
};

/// "node: message; node: message" of a round's errors, for logs.
std::string describe_errors(const std::vector<NodeError>& errors);

}  // namespace redisgo::lock
