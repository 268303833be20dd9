// The keeper's deadline rule (deadline_rule.h): arithmetic only, safe after fork.
#include "process/deadline_rule.h"

#include <algorithm>

namespace redisgo::process {

DeadlineState take(DeadlineState state, const DeadlineMessage& message) noexcept {
  state.heard_ns = std::max(state.heard_ns, message.sent_ns);
  const std::int64_t old = state.deadline_ns;
  if (old == 0 || message.decided_ns < old) {
    // Decided while the deadline it replaces still held: it stands, later or earlier.
    state.deadline_ns = message.deadline_ns;
  } else if (message.deadline_ns != 0 && message.deadline_ns < old) {
    // Decided once the kill was due (a daemon that woke past its deadline and renewed):
    // it may bring the kill forward, never put it off.
    state.deadline_ns = message.deadline_ns;
  }
  // A later deadline is a new stop time: its kill_signal is still to come.
  if (state.deadline_ns == 0 || (old != 0 && state.deadline_ns > old)) state.signalled = false;
  return state;
}

DeadlineState started(std::int64_t deadline_ns, std::int64_t now_ns) noexcept {
  return DeadlineState{deadline_ns, now_ns, false};
}

DeadlineState heard(DeadlineState state, std::int64_t sent_ns) noexcept {
  state.heard_ns = std::max(state.heard_ns, sent_ns);
  return state;
}

DeadlineState signalled(DeadlineState state) noexcept {
  state.signalled = true;
  return state;
}

bool may_start(std::int64_t deadline_ns, std::int64_t now_ns) noexcept { return deadline_ns <= 0 || now_ns < deadline_ns; }

DeadlineMove decide(const DeadlineState& state, std::int64_t now_ns, const DeadlineSettings& settings) noexcept {
  using Kind = DeadlineMove::Kind;
  if (state.deadline_ns == 0) return {Kind::kWait, 0};
  if (now_ns >= state.deadline_ns) return {Kind::kKill, 0};
  if (settings.kill_signal == 0 || state.signalled) return {Kind::kWait, state.deadline_ns};
  const std::int64_t term_ns = state.deadline_ns - settings.kill_grace_ns;
  if (now_ns < term_ns) return {Kind::kWait, term_ns};
  // The stop time has come. A daemon that runs sends kill_signal itself: the keeper does
  // only once the daemon has been silent for a tick (stopped, frozen, wedged).
  const std::int64_t silent_after = state.heard_ns + settings.silence_ns;
  if (now_ns > silent_after) return {Kind::kSignal, 0};
  return {Kind::kWait, std::min(state.deadline_ns, silent_after + 1)};
}

DeadlineMove decide(DeadlineState& state, std::span<const DeadlineMessage> messages, std::int64_t now_ns,
                    const DeadlineSettings& settings) noexcept {
  for (const auto& m : messages) state = take(state, m);
  return decide(state, now_ns, settings);
}

}  // namespace redisgo::process
