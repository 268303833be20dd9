#include "daemon/standby.h"

#include <algorithm>
#include <utility>

#include "redis/acl.h"
#include "util/duration.h"
#include "util/exit_status.h"

namespace redisgo::daemon {

using config::Mode;
using namespace standby;

/// Appends an action (built in place: GCC 12 warns of a variant moved from a temporary).
template <class T>
void emit(Actions& out, T action) {
  out.emplace_back(std::in_place_type<T>, std::move(action));
}

/// The least time between two re-runs of an attempt that a stray signal cut short.
constexpr Millis kStrayRetryGap{100};
/// After a "next" message: how long past the woken head's window we try.
constexpr Millis kTurnMargin{50};
/// A turn that comes when the one answered last did not win: the least time since our last
/// attempt before we try again (see kTurn).
constexpr Millis kTurnRetryGap{500};
/// Several nodes: how long a turn from fewer than a quorum of them waits for the others'
/// (see kTurn).
constexpr Millis kTurnGather{50};

StandbySettings StandbySettings::from(const config::Config& config, bool wait_flag) {
  StandbySettings s;
  s.mode = config.task.mode;
  s.wait_flag = wait_flag;
  s.monitor_try_all = config.redis.monitor_try_all;
  s.retries_count = config.redis.retries_count;
  s.backoff_max = config.backoff.max;
  s.turn_window = config.redis.turn_window();
  s.unreachable_timeout = config.redis.unreachable_timeout;
  return s;  // give_up_at: the runner's, from its start
}

std::string refused_what(const lock::NodeError& e, const std::string& whose) {
  switch (redis::refusal_of(e.message)) {
    case redis::Refusal::kCommand:
      if (auto command = redis::refused_command(e.message)) {
        return whose + " ACL user lacks " + redis::right_for(*command);
      }
      return whose + " ACL user lacks a right the lease scripts need";  // the message says where to look
    case redis::Refusal::kKey:
      return whose + " ACL user may not use the key's names (the README's ACL recipe grants them)";
    case redis::Refusal::kChannel: return whose + " ACL user may not use the key's channels";
    case redis::Refusal::kCredentials:
    case redis::Refusal::kNone: break;
  }
  return "Redis refused " + whose + " credentials";
}

std::optional<Blocked> blocked_of(const lock::Acquisition& acq, const lock::Verdict& verdict, std::size_t nodes,
                                  std::size_t quorum) {
  if (!verdict.no_quorum()) return std::nullopt;
  switch (verdict.cause) {
    case lock::NoQuorum::kCredentials:
    case lock::NoQuorum::kTls: {
      // This host's credentials, rights or certificates: the nodes themselves may serve other
      // hosts, and a quorum of them refusing us leaves us nothing to say of what those see.
      const lock::NodeError& refusal = *verdict.blame;
      const bool tls = verdict.cause == lock::NoQuorum::kTls;
      std::string text = "this host cannot acquire: " +
                         (tls ? std::string("TLS verification failed") : refused_what(refusal, "its")) + " (" +
                         refusal.message + ")";
      // A node that did accept us may have named a holder: a host refused by most nodes must
      // not say that no holder has a quorum while another leads.
      if (!acq.holder.empty() && !acq.holder_node.empty()) {
        text += "; the key is " +
                (verdict.pause ? lock::describe_pause(*verdict.pause) : "held by " + lock::describe_holder(acq.holder)) +
                " (as " + acq.holder_node + " says)";
      }
      return Blocked{lock::to_string(verdict.cause), std::move(text), true, false};
    }
    case lock::NoQuorum::kErrorReply:
      return Blocked{"error", "cannot acquire: Redis answered with an error (" + verdict.blame->message + ")", false,
                     true};
    case lock::NoQuorum::kUnreachable: break;
  }
  std::string text = "cannot acquire: no quorum of Redis nodes (" + std::to_string(acq.answered.size()) + " of " +
                     std::to_string(nodes) + " answered, " + std::to_string(quorum) + " needed";
  if (verdict.blame) text += "; " + verdict.blame->message;
  return Blocked{"unreachable", text + ")", false, false};
}

std::optional<Blocked> blocked_by(const lock::Acquisition& acq, std::size_t nodes, std::size_t quorum) {
  return blocked_of(acq, lock::classify(acq, nodes, quorum), nodes, quorum);
}

GiveUp give_up_of(const lock::Acquisition& acq, const lock::Verdict& verdict, std::size_t nodes, std::size_t quorum) {
  GiveUp g;
  // Refused by so many nodes that no quorum could grant us: a holder that the others name
  // does not make it "busy" (75, which a cron wrapper keeps quiet about); the fix is ours (77).
  g.exit_status = give_up_code(verdict.refused_out ? 0 : verdict.busy, verdict.refusal.has_value(),
                               static_cast<int>(nodes) - verdict.failed, static_cast<int>(quorum));
  if (g.exit_status == kExitNoPerm) {
    g.why = GiveUp::Why::kRefused;
  } else if (g.exit_status == kExitUnavailable) {
    g.why = GiveUp::Why::kNoQuorum;
  } else if (acq.busy > 0 || acq.guarded.empty()) {
    g.why = GiveUp::Why::kBusy;
  } else {
    // Not a busy lease: a Redis node restarted and its guard holds the lease back.
    g.why = GiveUp::Why::kGuarded;
  }
  g.acquisition = acq;
  g.verdict = verdict;
  return g;
}

ShowMiss ShowMiss::aged(Clock::time_point now) const {
  const auto since = std::chrono::duration_cast<Millis>(now - attempt_started).count();
  auto left = [&](std::int64_t ms) { return ms < 0 ? -1 : std::max<std::int64_t>(0, ms - since); };
  ShowMiss m = *this;
  m.holder_ttl_ms = left(holder_ttl_ms);
  m.guard_wait_ms = left(guard_wait_ms);
  return m;
}

const char* to_string(StandbyState s) {
  switch (s) {
    case StandbyState::kAttempting: return "attempting";
    case StandbyState::kPacing: return "pacing";
    case StandbyState::kWaiting: return "waiting";
    case StandbyState::kLeading: return "leading";
    case StandbyState::kGaveUp: return "gave up";
    case StandbyState::kStopped: return "stopped";
  }
  return "?";
}

StandbyMachine::StandbyMachine(StandbySettings settings, backoff::Backoff& backoff)
    : s_(std::move(settings)), backoff_(backoff) {}

Actions StandbyMachine::step(const Event& event, Clock::time_point now) {
  Actions out;
  std::visit([&](const auto& e) { on(e, now, out); }, event);
  return out;
}

bool split_vote(const lock::Acquisition& acq) {
  // Granted somewhere, or another holder on some nodes but on too few to be named: the
  // nodes that did not name it had the key free, granted it and were undone (a grant whose
  // reply came after the vote was decided is undone unseen, so `votes` alone misses it).
  return !acq.acquired && (acq.votes > 0 || (acq.busy > 0 && acq.holder_ttl_ms < 0 && !acq.holder_never_expires));
}

Millis attempt_gap(int splits) {
  // One split vote is usually two contenders (or two turns) meeting on different nodes, and
  // a quick retry settles it (the waiting line with a node frozen needs it). Split votes
  // in a row are a split that stays (a holder alive on nodes we cannot all reach): each
  // costs the nodes that granted it three misses' worth, so the gap grows to kSplitAttemptGap.
  return std::min(kSplitAttemptGap, kMinAttemptGap * std::max(1, splits));
}

Clock::time_point StandbyMachine::paced() const { return std::max(started_ + attempt_gap(splits_), last_.not_before); }

bool StandbyMachine::oneshot_gives_up(const lock::Verdict& verdict, Clock::time_point now) {
  if (s_.mode != Mode::kOneshot) return false;
  // Refused credentials (or a failed TLS verification) on so many nodes that no quorum is
  // possible: no retry fixes a wrong password; the run ends now (77, loud), not after
  // hours of warnings under cron.
  if (verdict.refused_out) return true;
  // No quorum answered: waited for at most unreachable_timeout (then 69), so that cron runs
  // cannot pile up behind a dead Redis. A busy lease is not this: it is waited for as
  // monitor_try_all says.
  if (static_cast<std::size_t>(verdict.answered) >= s_.quorum) {
    unreachable_since_.reset();
    return false;
  }
  if (!unreachable_since_) unreachable_since_ = started_;
  return now >= *unreachable_until();
}

std::optional<Clock::time_point> StandbyMachine::unreachable_until() const {
  if (s_.mode != Mode::kOneshot || !unreachable_since_) return std::nullopt;
  return *unreachable_since_ + s_.unreachable_timeout;
}

void StandbyMachine::attempt(Actions& out, bool turn) {
  turn_credit_ = !turn;
  first_turn_.reset();
  state_ = StandbyState::kAttempting;
  emit<Attempt>(out, {});
}

void StandbyMachine::wait(Actions& out, Clock::time_point until, bool wake_on_release) {
  // Neither bound is waited past: the backoff (up to its max) would overshoot either.
  if (s_.give_up_at) until = std::min(until, *s_.give_up_at);
  if (const auto unreachable = unreachable_until()) until = std::min(until, *unreachable);
  emit<Wait>(out, {until, wake_on_release});
}

bool StandbyMachine::timed_out(Clock::time_point now, Actions& out) {
  if (!s_.give_up_at || now < *s_.give_up_at) return false;
  give_up(out, true);
  return true;
}

void StandbyMachine::give_up(Actions& out, bool timed_out) {
  state_ = StandbyState::kGaveUp;
  for (Action& a : out) {
    if (auto* r = std::get_if<Report>(&a)) {
      r->giving_up = true;  // the give-up line says it instead
      r->look_for_larger_limit = false;
    }
  }
  GiveUp g = give_up_of(last_, verdict_, s_.nodes, s_.quorum);
  g.attempts = attempts_;
  g.timed_out = timed_out;
  emit<GiveUp>(out, std::move(g));
}

void StandbyMachine::stop(Actions& out) {
  state_ = StandbyState::kStopped;
  emit<Stopped>(out, {stopped_status(s_.mode)});
}

void StandbyMachine::on(const Begin&, Clock::time_point now, Actions& out) {
  began_ = now;
  attempts_ = 0;
  unreachable_since_.reset();
  recheck_ = false;
  rechecking_ = false;
  last_ = lock::Acquisition{};
  verdict_ = lock::classify(last_, s_.nodes, s_.quorum);
  splits_ = 0;
  backoff_.reset();
  attempt(out);
}

void StandbyMachine::on(const StopAsked&, Clock::time_point, Actions& out) { stop(out); }

void StandbyMachine::on(const Attempted& e, Clock::time_point now, Actions& out) {
  if (state_ != StandbyState::kAttempting) return;
  const lock::Acquisition& acq = e.acquisition;
  started_ = e.started;
  if (acq.cancelled && e.stop) return stop(out);
  // Any signal wakes an attempt (it watches the signalfd). One that does not stop us
  // (SIGHUP, SIGWINCH from a resized terminal, ...) is no failure: a cron run must not
  // give up with 75 "busy" because of it. Tried again at once, at most every 100 ms, so a
  // flood of signals cannot make it hammer Redis (invariant 7).
  if (acq.cancelled && !acq.acquired) {
    if (timed_out(now, out)) return;
    const auto next_rerun = last_stray_retry_ + kStrayRetryGap;
    if (now < next_rerun) {
      state_ = StandbyState::kPacing;
      wake_at_ = next_rerun;
      wait(out, next_rerun, false);
      return;
    }
    last_stray_retry_ = now;
    return attempt(out);
  }
  last_ = acq;
  verdict_ = lock::classify(acq, s_.nodes, s_.quorum);
  // A split vote against a lease counts towards the gap; one against a turn (the waiting
  // line handing the lease on, node-local lines that disagree for a moment, a node of the
  // line frozen: quick retries settle them) neither counts nor starts the count again; any
  // other miss does.
  if (!split_vote(acq)) {
    splits_ = 0;
  } else if (!verdict_.turn) {
    ++splits_;
  }
  // With a bounded number of attempts every attempt counts, the re-check after a new
  // subscription included: retries_count = N means at most N requests.
  const bool counted = s_.mode == Mode::kOneshot && !s_.monitor_try_all;
  if (!recheck_ || counted) ++attempts_;
  recheck_ = false;
  emit<Report>(out, {acq, verdict_, blocked_of(acq, verdict_, s_.nodes, s_.quorum), false,
                     !acq.acquired && !verdict_.no_quorum()});
  if (acq.acquired) {
    state_ = StandbyState::kLeading;
    emit<Lead>(out, {acq, began_});
    return;
  }
  if (oneshot_gives_up(verdict_, now)) return give_up(out, false);
  // The wait's bound came during the attempt: its answer says how the run ends (a node
  // "busy": 75; no quorum answered: 69 or 77), as after any last attempt.
  if (timed_out(now, out)) return;
  // How long the lease stays out of reach: the holder's TTL, or else the restart guard's wait.
  const std::int64_t blocked_ms = acq.holder_ttl_ms >= 0 ? acq.holder_ttl_ms : acq.guard_wait_ms;
  backoff_.observe({acq.errors.empty(), blocked_ms});
  MissContext miss;
  miss.mode = s_.mode;
  miss.wait_flag = s_.wait_flag;
  miss.monitor_try_all = s_.monitor_try_all;
  miss.retries_count = s_.retries_count;
  miss.attempts = attempts_;
  miss.backoff = backoff_.next();
  miss.holder_ttl_ms = acq.holder_ttl_ms;
  miss.guard_ms = acq.guard_wait_ms;
  miss.subscribed = e.subscribed;
  miss.position = acq.position;
  miss.turn_window = s_.turn_window;
  miss.turn = verdict_.turn;
  miss.backoff_max = s_.backoff_max;
  const AfterMiss next = after_miss(miss);
  if (next.give_up) return give_up(out, false);
  emit<ShowMiss>(out, {acq.holder, acq.holder_ttl_ms, acq.guard_wait_ms, acq.position, acq.line_length,
                       !verdict_.no_quorum(), attempts_, began_, started_});
  // Whatever the strategy says: never sooner than kMinAttemptGap after this attempt
  // began, and never before a quorum of nodes is out of its retry backoff (there would
  // be nothing to send). Only another holder's release cuts the wait short.
  wake_at_ = std::max(now + next.wait, paced());
  emit<Debug>(out, {"lease busy" + (acq.holder.empty() ? std::string() : " (held by " + acq.holder + ")") +
                      "; next attempt in " + format_duration(until(wake_at_, now))});
  rechecking_ = false;
  state_ = StandbyState::kWaiting;
  wait(out, wake_at_, true);
}

// A turn: addressed to us alone (one waiter per release): try at once, even inside the pacing
// gap (a waiter that joined the line a moment ago). But a turn can also come from an
// attempt that found a node's key free behind the line (a turn that expired, the
// leftover of a failed quorum), so turns can chase each other between waiters when no
// quorum is to be had (nodes down, another holder on the others). Hence:
// - the last attempt reached fewer nodes than a quorum: a turn cannot make one; the
//   wait (its error backoff) goes on;
// - some node failed the last attempt, or the last two were split votes (granted
//   without a quorum, undone): not inside the pacing gap either (faults and partitions
//   are when turns chase each other; a waiter keeps to the pace it would have without them);
// - the turn answered last did not win: the next one waits kTurnRetryGap after that
//   attempt; a paced attempt of our own (timer, release) earns the credit back.
// So turns add at most one attempt to each of a waiter's own.
// Several nodes: each node's line hands the freed lease on by itself, and the release reaches
// the nodes a moment apart. A turn from fewer than a quorum of nodes since our last attempt
// waits kTurnGather for the others' (most often on their way): answered at once, its attempt
// would find the lease still held there, miss, and spend the credit that their turns then
// need, and the freed lease would stand idle for kTurnRetryGap. Turns from a quorum of nodes
// since our last attempt are a lease handed to us by a quorum, no split that stays: tried
// without the credit and whatever split votes came before (a lone turn that missed, a node a
// step behind the others that granted beside a held lease must not keep us from it), but
// never inside kMinAttemptGap (so a flood of them costs a node no more than a miss a gap).
bool StandbyMachine::on_turn(Clock::time_point now, int nodes, Actions& out) {
  if (last_.answered.size() < s_.quorum) return false;
  const bool several = s_.quorum > 1 && nodes > 0;
  if (several && !first_turn_) first_turn_ = now;
  const bool quorum = several && static_cast<std::size_t>(nodes) >= s_.quorum;
  const auto quick = std::max(started_ + kMinAttemptGap, last_.not_before);
  auto soon = quorum ? (turn_credit_ && last_.errors.empty() ? last_.not_before : quick)
              : !turn_credit_                        ? std::max(paced(), started_ + kTurnRetryGap)
              : last_.errors.empty() && splits_ < 2 ? last_.not_before
                                                      : paced();
  if (several && !quorum) soon = std::max(soon, *first_turn_ + kTurnGather);
  if (now >= soon) {
    emit<Debug>(out, {"our turn in the waiting line; trying now"});
    attempt(out, true);
    return true;
  }
  wake_at_ = std::min(wake_at_, soon);
  return false;
}

void StandbyMachine::on(const WaitEnded& e, Clock::time_point now, Actions& out) {
  if (e.end == End::kShutdown) return stop(out);
  // Whatever ended the wait (its bound, a turn that came too late): past give_up_at no
  // attempt goes out. A turn of ours that came is handed on as the line is left.
  if ((state_ == StandbyState::kPacing || state_ == StandbyState::kWaiting) && timed_out(now, out)) return;
  // No quorum since unreachable_timeout ago: the run ends now (69), not after one more attempt.
  if ((state_ == StandbyState::kPacing || state_ == StandbyState::kWaiting) && unreachable_until() &&
      now >= *unreachable_until()) {
    return give_up(out, false);
  }
  if (state_ == StandbyState::kPacing) {
    last_stray_retry_ = now;
    return attempt(out);
  }
  if (state_ != StandbyState::kWaiting) return;
  switch (e.end) {
    case End::kReleased: {
      // Woken by another holder's release: try at once, unless this waiter tried less
      // than kMinAttemptGap ago (a flood of release messages, or a holder crash-looping
      // through the lease, must not drive it faster).
      const auto soon = paced();
      if (now >= soon) {
        emit<Debug>(out, {"release message received; trying now"});
        return attempt(out);
      }
      if (soon < wake_at_) {
        // Said once per wait: a flood of messages must not flood the log either.
        emit<Debug>(out, {"release message received; trying in " + format_duration(until(soon, now))});
        wake_at_ = soon;
      }
      break;
    }
    case End::kSubscribed: {
      // A release between the attempt and the SUBSCRIBE would have gone unheard: try
      // once more as soon as pacing allows (not counted as an attempt).
      const auto soon = paced();
      if (soon < wake_at_) {
        wake_at_ = soon;
        rechecking_ = true;
      }
      break;
    }
    case End::kTurn:
      if (on_turn(now, e.turn_nodes, out)) return;
      break;
    case End::kNext: {
      // The head before us was woken: if it has not taken its turn when its window ends,
      // the lease is ours to try (it lost the turn). A little after, so the turn has expired.
      // Paced all the same: a flood of (forged) "next" messages must not drive attempts.
      const auto after_window = std::max(now + e.window + kTurnMargin, paced());
      if (after_window < wake_at_) {
        emit<Debug>(out, {"the waiter before us was woken; trying in " + format_duration(until(after_window, now)) +
                          " unless it takes its turn"});
        wake_at_ = after_window;
      }
      break;
    }
    case End::kTimer:
      if (now < wake_at_) break;  // woken early (a refresh of the terminal line): wait on
      recheck_ = rechecking_;
      // Several nodes: a turn heard since the last attempt (it waited for the other nodes'
      // turns): this attempt answers it, and spends the credit as on_turn's would.
      return attempt(out, first_turn_.has_value());
    case End::kShutdown: break;
  }
  wait(out, wake_at_, true);
}

}  // namespace redisgo::daemon
