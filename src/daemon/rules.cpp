#include "daemon/rules.h"

#include <algorithm>

#include "util/duration.h"
#include "util/exit_status.h"

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

const char* to_string(StepDown cause) {
  switch (cause) {
    case StepDown::kNone: return "";
    case StepDown::kHandover: return "handover";
    case StepDown::kPause: return "pause";
    case StepDown::kHealth: return "health";
    case StepDown::kRestartLimit: return "restart_limit";
    case StepDown::kCannotStart: return "cannot_start";
    case StepDown::kRenewalRefused: return "renewal_refused";
  }
  return "";
}

bool planned(StepDown cause) { return cause == StepDown::kHandover || cause == StepDown::kPause; }

namespace {

/// supervise: the child ended by itself (no stop of ours).
AfterExit after_own_end(const ExitContext& c, RestartTracker* restarts, Clock::time_point now) {
  using Kind = AfterExit::Kind;
  const bool restart = c.restart == config::Restart::kAlways ||
                       (c.restart == config::Restart::kOnFailure && c.child_code != 0);
  AfterExit out{restart ? Kind::kRestart : Kind::kRecontend, 0, c.restart_delay, "", StepDown::kNone};
  if (!restart && c.child_code == 0) {
    // A job done and not restarted (restart = never, or on-failure): the lease is released for
    // the next host, which is no crash loop. So no growing delay and no count towards
    // restart_limit: a pool of `restart = "never"` workers of short jobs keeps its pace
    // instead of stepping down after restart_limit jobs. Paced still: restart_delay, at least
    // kRestartStep, so that `true` cannot loop on Redis.
    out.delay = std::max(c.restart_delay, RestartTracker::kRestartStep);
  } else if (restarts) {
    // A crash loop restarts with a growing delay, then the leader steps down.
    auto delay = restarts->on_exit(now);
    if (!delay) {
      return {Kind::kRecontend, 0, Millis(0),
              "the child exited " + std::to_string(restarts->recent(now)) + " times within " +
                  format_duration(c.restart_window) + " (restart_limit " + std::to_string(c.restart_limit) + ")",
              StepDown::kRestartLimit};
    }
    out.delay = *delay;
  }
  return out;
}

}  // namespace

AfterExit after_exit(const ExitContext& c, RestartTracker* restarts, Clock::time_point now) {
  using Kind = AfterExit::Kind;
  const StopCause cause = c.stop_requested && c.cause == StopCause::kNone ? StopCause::kShutdown : c.cause;
  if (c.mode == config::Mode::kOneshot) {
    switch (cause) {
      case StopCause::kLeaseLost:
      case StopCause::kDeadline:
        return {Kind::kExit, c.refused ? kExitNoPerm : kExitTempFail, Millis(0), "", {}, !c.refused};
      case StopCause::kTimeout: return {Kind::kExit, kExitTimeout, Millis(0), "", {}};
      case StopCause::kStepDown:
      case StopCause::kShutdown:
      case StopCause::kNone: return {Kind::kExit, c.child_code, Millis(0), "", {}};
    }
  }
  switch (cause) {
    case StopCause::kShutdown: return {Kind::kExit, 0, Millis(0), "", {}};
    case StopCause::kStepDown: return {Kind::kRecontend, 0, Millis(0), c.step_down_reason, c.step_down};
    case StopCause::kLeaseLost:
    case StopCause::kDeadline:
      // No lease of this config can be kept until the rights are granted: stepping down, and
      // holding back until they are (the driver names the right and probes it).
      if (c.refused) return {Kind::kRecontend, 0, Millis(0), "Redis refused the renewals", StepDown::kRenewalRefused};
      return {Kind::kRecontend, 0, c.restart_delay, "", {}};
    case StopCause::kTimeout:  // timeout is oneshot-only; treat like a failure, uncounted
      break;
    case StopCause::kNone: {
      AfterExit out = after_own_end(c, restarts, now);
      if (out.kind == Kind::kRestart && c.lease_lost) out.kind = Kind::kRecontend;
      return out;
    }
  }
  const bool restart = c.restart == config::Restart::kAlways ||
                       (c.restart == config::Restart::kOnFailure && c.child_code != 0);
  return {restart && !c.lease_lost && !c.stop_requested ? Kind::kRestart : Kind::kRecontend, 0, c.restart_delay, "", {}};
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
