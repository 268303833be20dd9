#include "daemon/state_machine.h"

#include <algorithm>

namespace redisgo::daemon {

AfterMiss after_miss(const MissContext& c) {
  AfterMiss out;
  if (c.mode == config::Mode::kOneshot) {
    if (!c.wait_flag) return {true, Millis(0)};
    if (!c.monitor_try_all && c.attempts >= c.retries_count) return {true, Millis(0)};
    if (!c.backoff) return {true, Millis(0)};
  }
  Millis backoff = c.backoff.value_or(c.backoff_max);
  if (c.holder_ttl_ms < 0 && c.guard_ms >= 0) {
    out.wait = Millis(c.guard_ms + 1);
  } else if (c.holder_ttl_ms >= 0) {
    Millis until_expiry(c.holder_ttl_ms + 1);
    // A bounded number of retries is spaced by the backoff, as the operator configured it.
    bool bounded = c.mode == config::Mode::kOneshot && !c.monitor_try_all;
    out.wait = c.subscribed && !bounded ? until_expiry : std::min(backoff, until_expiry);
    if (c.subscribed && !bounded && c.position > 1 && !c.turn) {
      out.wait = std::min(kLineSleepMax, until_expiry + c.turn_window * std::min<std::int64_t>(c.position - 1, 100'000));
    }
  } else {
    out.wait = backoff;
  }
  return out;
}

AfterExit after_exit(const ExitContext& c) {
  using Kind = AfterExit::Kind;
  if (c.mode == config::Mode::kOneshot) {
    switch (c.cause) {
      case StopCause::kLeaseLost:
      case StopCause::kDeadline: return {Kind::kExit, c.refused ? kExitNoPerm : kExitTempFail, Millis(0)};
      case StopCause::kTimeout: return {Kind::kExit, kExitTimeout, Millis(0)};
      case StopCause::kStepDown:
      case StopCause::kShutdown:
      case StopCause::kNone: return {Kind::kExit, c.child_code, Millis(0)};
    }
  }
  switch (c.cause) {
    case StopCause::kShutdown: return {Kind::kExit, 0, Millis(0)};
    case StopCause::kStepDown: return {Kind::kRecontend, 0, c.restart_delay};
    case StopCause::kLeaseLost:
    case StopCause::kDeadline: return {Kind::kRecontend, 0, c.restart_delay};
    case StopCause::kTimeout:  // timeout is oneshot-only; treat like a failure
    case StopCause::kNone: break;
  }
  bool restart = c.restart == config::Restart::kAlways ||
                 (c.restart == config::Restart::kOnFailure && c.child_code != 0);
  return {restart ? Kind::kRestart : Kind::kRecontend, 0, c.restart_delay};
}

int give_up_code(int busy, bool auth_refused, int answered, int quorum) {
  if (busy > 0) return kExitTempFail;
  if (auth_refused) return kExitNoPerm;
  if (answered < quorum) return kExitUnavailable;
  return kExitTempFail;
}

int stopped_status(config::Mode mode) { return mode == config::Mode::kOneshot ? kExitTempFail : 0; }

RestartTracker::RestartTracker(int limit, Millis window, Millis base_delay)
    : limit_(limit), window_(window), base_(base_delay) {}

void RestartTracker::on_start(Clock::time_point now) { started_ = now; }

int RestartTracker::recent(Clock::time_point now) const {
  int n = 0;
  for (auto t : exits_) n += (now - t < window_) ? 1 : 0;
  return n;
}

std::optional<Millis> RestartTracker::on_exit(Clock::time_point now) {
  if (started_ && now - *started_ >= kStableRun) {
    streak_ = 0;
    step_downs_ = 0;
  }
  started_.reset();
  ++streak_;
  exits_.erase(std::remove_if(exits_.begin(), exits_.end(), [&](auto t) { return now - t >= window_; }),
               exits_.end());
  exits_.push_back(now);
  if (static_cast<int>(exits_.size()) > limit_) return std::nullopt;
  if (streak_ <= 1) return base_;
  Millis delay = std::max(base_, kRestartStep);
  for (int i = 1; i < streak_ && delay < kRestartDelayMax; ++i) delay *= 2;
  return std::min(delay, std::max(kRestartDelayMax, base_));
}

Millis RestartTracker::on_step_down(Millis hold, Millis floor) {
  ++step_downs_;
  Millis h = std::max(hold, floor);
  for (int i = 1; i < step_downs_ && h < kHoldMax; ++i) h *= 2;
  return std::min(h, std::max(kHoldMax, hold));
}

Millis refused_probe_gap(int probes) {
  Millis gap = kRefusedProbeFirst;
  for (int i = 1; i < probes && gap < kRefusedProbeMax; ++i) gap *= 2;
  return std::min(gap, kRefusedProbeMax);
}

Millis refused_note_ttl(Millis gap) { return 3 * gap; }

Millis kill_margin(Millis ttl) { return config::kill_margin(ttl); }

StopSchedule stop_schedule(Clock::time_point deadline, Millis kill_grace, Millis ttl) {
  StopSchedule s;
  s.kill_at = deadline - kill_margin(ttl);
  s.term_at = s.kill_at - kill_grace;
  return s;
}

bool can_start_child(Clock::time_point now, Clock::time_point deadline, Millis kill_grace, Millis ttl) {
  return now < stop_schedule(deadline, kill_grace, ttl).term_at;
}

}  // namespace redisgo::daemon
