#pragma once
/// The keeper's deadline rule (docs/DESIGN.md, invariant 2; redisgo_task(1), SAFETY): what the
/// keeper does with the kill deadlines the daemon sends it, as pure functions of what it was
/// sent, the time and its settings. No I/O, no allocation: the keeper runs it between fork
/// and exit, and the tests (and a simulator) run it with numbers.
///
/// The daemon sends every deadline it decides: a renewal's extension, a stop's cut, and the
/// same deadline again at least every half tick while it runs. Each message carries two
/// CLOCK_BOOTTIME stamps: when the deadline was decided (a renewal: when it was sent to
/// Redis; a cut: when the stop began) and when the message was written (the daemon ran
/// then). The rule:
///  - messages are taken in the order sent, all of those pending before any decision (a
///    keeper resumed after a stop reads its backlog first, and acts on the last deadline,
///    not on a stale one);
///  - a message decided before the deadline it replaces sets the deadline, later or
///    earlier; one decided at or after it can only cut it: a renewal made after the lease
///    could have ended does not undo a kill that was due;
///  - at the deadline, SIGKILL; a keeper that wakes past it kills at once;
///  - kill_grace before it, kill_signal (then SIGCONT), but only when the daemon has been
///    silent for more than a tick: a daemon that runs stops its child itself, on the same
///    schedule, and the keeper's SIGKILL is the last resort.

#include <cstdint>
#include <span>

namespace redisgo::process {

/// One deadline message from the daemon (CLOCK_BOOTTIME ns).
struct DeadlineMessage {
  std::int64_t deadline_ns = 0;  ///< the kill deadline; 0 = none
  std::int64_t decided_ns = 0;   ///< when the daemon decided it
  std::int64_t sent_ns = 0;      ///< when the daemon wrote it
};

/// What the keeper knows of its deadline.
struct DeadlineState {
  std::int64_t deadline_ns = 0;  ///< 0 = none
  std::int64_t heard_ns = 0;     ///< the daemon's last sign of life (a message written then)
  bool signalled = false;        ///< kill_signal went to the job for this deadline
};

struct DeadlineSettings {
  std::int64_t kill_grace_ns = 0;
  /// A daemon that has written nothing for longer than this cannot act (it writes at least
  /// every half of it while it runs): its tick.
  std::int64_t silence_ns = 0;
  int kill_signal = 0;  ///< 0: none, SIGKILL only
};

/// What the keeper does now.
struct DeadlineMove {
  enum class Kind {
    kWait,    ///< nothing until until_ns (0: until a message comes)
    kSignal,  ///< kill_signal (and SIGCONT) to the job's group now, then decide again
    kKill,    ///< SIGKILL the job's tree now
  } kind = Kind::kWait;
  std::int64_t until_ns = 0;
  bool operator==(const DeadlineMove&) const = default;
};

/// The state of a keeper that starts its job at `now_ns` under `deadline_ns`: the daemon,
/// which has just started it, was heard then.
DeadlineState started(std::int64_t deadline_ns, std::int64_t now_ns) noexcept;

/// `state` after one message (taken in the order sent).
DeadlineState take(DeadlineState state, const DeadlineMessage& message) noexcept;

/// `state` after a request of another kind (a signal to forward) written at `sent_ns`: a sign
/// of the daemon's life, which moves no deadline.
DeadlineState heard(DeadlineState state, std::int64_t sent_ns) noexcept;

/// `state` once the keeper sent kill_signal (a kSignal move carried out): not again for
/// this deadline.
DeadlineState signalled(DeadlineState state) noexcept;

/// Whether the job may still be started at `now_ns` under `deadline_ns` (0 or below: none):
/// not once the lease can have ended, however late the keeper got to start it.
bool may_start(std::int64_t deadline_ns, std::int64_t now_ns) noexcept;

/// What to do at `now_ns` (after every pending message was taken).
DeadlineMove decide(const DeadlineState& state, std::int64_t now_ns, const DeadlineSettings& settings) noexcept;

/// take() each of `messages`, then decide(): the rule in one call.
DeadlineMove decide(DeadlineState& state, std::span<const DeadlineMessage> messages, std::int64_t now_ns,
                    const DeadlineSettings& settings) noexcept;

}  // namespace redisgo::process
