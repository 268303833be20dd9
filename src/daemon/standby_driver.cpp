#include "daemon/standby_driver.h"

#include <algorithm>
#include <utility>

#include "lock/wake.h"
#include "log/logging.h"
#include "util/error.h"

namespace redisgo::daemon {

using namespace standby;

StandbyDriver::StandbyDriver(Context& ctx, EventLoop& loop, Notices& notices, StandbySettings settings,
                             backoff::Backoff& backoff)
    : ctx_(ctx), loop_(loop), notices_(notices), machine_(std::move(settings), backoff) {
  for (const auto& node : ctx_.lease_opts.nodes) {
    // Fair: each waiter listens on its own wake channel (one release wakes one waiter);
    // otherwise on the release channel that every standby shares.
    subscribers_.push_back(ctx_.deps.make_subscriber(
        node, ctx_.cfg.redis.fair ? ctx_.keys.wake(ctx_.lease_opts.holder) : ctx_.keys.channel));
  }
  subscriber_failures_.assign(subscribers_.size(), 0);
}

std::variant<lock::Acquisition, int> StandbyDriver::contend() {
  // Whichever way the wait ends, the terminal line goes; and but for the lease, we leave the
  // waiting line at once.
  struct ClearLine {
    WaitReporter& w;
    const StandbyMachine& m;
    lock::LeaseBackend& backend;
    spdlog::logger& log;
    ~ClearLine() {
      w.done();
      if (m.state() == StandbyState::kLeading) return;
      if (const std::string why = backend.leave_line(); !why.empty()) {
        try {
          log.warn("could not leave the waiting line ({}); the next release drops our entry, as nobody listens for it",
                   why);
        } catch (...) {  // a destructor: a logging failure must not end the process
        }
      }
    }
  } clear_line{notices_.waiting(), machine_, *ctx_.backend, *ctx_.log};
  Actions actions = machine_.step(Begin{}, ctx_.clock.now());
  std::optional<ShowMiss> shown;  // the miss on show: a long wait redraws it
  for (;;) {
    Actions next;
    for (const Action& action : actions) {
      if (std::holds_alternative<Attempt>(action)) {
        next = attempt();
      } else if (const auto* w = std::get_if<Wait>(&action)) {
        // The time the wait ended, read after it (two arguments of one call would be
        // evaluated in either order: the clock first would hand the machine the time the
        // wait began, and a paced re-run would go out early).
        const WaitEnded ended = wait_for(*w, shown);
        next = machine_.step(ended, ctx_.clock.now());
      } else if (const auto* r = std::get_if<Report>(&action)) {
        notices_.report(*r);
      } else if (const auto* m = std::get_if<ShowMiss>(&action)) {
        shown = *m;
        notices_.show_miss(*m);
      } else if (const auto* d = std::get_if<Debug>(&action)) {
        ctx_.log->debug("{}", d->text);
      } else if (const auto* l = std::get_if<Lead>(&action)) {
        notices_.leading(*l);
        return l->acquisition;
      } else if (const auto* g = std::get_if<GiveUp>(&action)) {
        if (g->timed_out) {
          // Deaf first: a release that picks us from now on finds nobody listening and wakes
          // the next waiter; one that already handed us a turn is handed on by leaving.
          for (auto& s : subscribers_) s->close();
        }
        return notices_.give_up(*g);
      } else if (const auto* s = std::get_if<Stopped>(&action)) {
        return s->exit_status;
      }
    }
    actions = std::move(next);
  }
}

Actions StandbyDriver::attempt() {
  auto& backend = *ctx_.backend;
  if (loop_.stop_requested()) return machine_.step(StopAsked{}, ctx_.clock.now());
  drain_subscriptions();  // messages from before this attempt are stale
  turned_.assign(subscribers_.size(), false);
  if (ctx_.cfg.redis.fair) {
    // Join the line only where a wake can reach us, and only if we would wait for it: a
    // --no-wait run never makes anyone wait on it (docs/DESIGN.md "The waiting line").
    std::vector<bool> listening;
    for (const auto& s : subscribers_) listening.push_back(ctx_.opts.wait && s->active());
    backend.line_listening(listening);
  }
  Attempted a;
  a.started = ctx_.clock.now();
  // --wait-timeout bounds the attempts too, the first one's connecting included: a node that
  // has not answered when it comes counts as not answered (0, --no-wait, sets no bound: one
  // attempt, as long as the nodes' timeouts let it take).
  backend.bound_attempts(machine_.give_up_at().value_or(Clock::time_point::max()));
  try {
    a.acquisition = backend.acquire();
  } catch (const Error& e) {
    a.acquisition.errors.push_back(lock::round_failure(e.what()));
  }
  const lock::Verdict verdict = lock::classify(a.acquisition, backend.node_count(), backend.quorum());
  notices_.note_pause(a.acquisition, verdict, a.started);

  backend.bound_attempts(Clock::time_point::max());
  loop_.read_signals();
  a.stop = loop_.stop_requested();
  notices_.note_line(a.acquisition, verdict);
  a.subscribed = std::any_of(subscribers_.begin(), subscribers_.end(), [](const auto& s) { return s->active(); });
  return machine_.step(a, ctx_.clock.now());
}

WaitEnded StandbyDriver::wait_for(const Wait& w, const std::optional<ShowMiss>& shown) {
  if (!w.wake_on_release) return {loop_.sleep_until(w.until) ? End::kTimer : End::kShutdown};
  for (;;) {
    // At a terminal the line is redrawn every second (the TTL counts down); that costs
    // no request to Redis.
    const auto now = ctx_.clock.now();
    const auto tick = notices_.waiting().refreshes() ? std::min(w.until, now + std::chrono::seconds(1)) : w.until;
    const WaitEnded ended = wait_until(tick);
    if (ended.end != End::kTimer) return ended;
    if (ctx_.clock.now() >= w.until) return ended;
    if (shown) notices_.show_miss(shown->aged(ctx_.clock.now()));
  }
}

void StandbyDriver::drain_subscriptions() {
  std::vector<pollfd> fds;
  for (auto& s : subscribers_) fds.push_back(pollfd{s->fd(), s->events(), 0});
  if (::poll(fds.data(), fds.size(), 0) > 0) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) subscribers_[i]->on_ready(fds[i].revents);
    }
  }
  for (auto& s : subscribers_) s->take_payloads();
}

WaitEnded StandbyDriver::wait_until(Clock::time_point until) {
  std::vector<pollfd> fds;
  for (;;) {
    if (loop_.stop_requested()) return {End::kShutdown};
    if (ctx_.clock.now() >= until) return {End::kTimer};
    fds.assign(1, pollfd{loop_.signal_fd(), POLLIN, 0});
    std::optional<Millis> cap;
    const auto now = redis::SteadyClock::now();
    for (auto& s : subscribers_) {
      s->maintain(now);
      fds.push_back(pollfd{s->fd(), s->events(), 0});
      if (auto next = s->next_wakeup(); next != redis::SteadyClock::time_point::max()) {
        auto ms = std::max(Millis(0), std::chrono::ceil<Millis>(next - now));
        cap = cap ? std::min(*cap, ms) : ms;
      }
    }
    loop_.poll_until(fds, until, cap);
    loop_.read_signals();  // nothing to forward while there is no child
    if (auto ended = heard(fds)) return *ended;
  }
}

std::optional<WaitEnded> StandbyDriver::heard(const std::vector<pollfd>& fds) {
  const bool fair = ctx_.cfg.redis.fair;
  bool released = false, subscribed = false, turn = false, next = false;
  Millis window{0};
  for (std::size_t i = 0; i < subscribers_.size(); ++i) {
    auto& s = subscribers_[i];
    if (fds[i + 1].revents != 0) s->on_ready(fds[i + 1].revents);
    s->maintain(redis::SteadyClock::now());
    for (const auto& payload : s->take_payloads()) {
      const lock::Wake wake = lock::read_wake(payload, fair, ctx_.opts.holder);
      released |= wake.kind == lock::Wake::Kind::kReleased;
      if (wake.kind == lock::Wake::Kind::kTurn) {
        turn = true;
        if (i < turned_.size()) turned_[i] = true;
      }
      if (wake.kind == lock::Wake::Kind::kNext) {
        next = true;
        window = wake.window;
      }
    }
    if (s->take_became_active()) {
      ctx_.log->debug("subscribed to {} {} on {}", fair ? "our wake channel" : "the release channel", s->channel(),
                      s->describe());
      notices_.subscribed(s->describe());
      subscribed = true;
    }
    if (s->failures() > subscriber_failures_[i]) {
      // A node that answers but refuses the SUBSCRIBE (an ACL user without the channel)
      // leaves us without wake-on-release: say so, once; waits still end at the holder's
      // TTL. A node that is down is reported by the acquisitions already.
      subscriber_failures_[i] = s->failures();
      if (lock::server_answered(s->last_fault())) {
        notices_.subscribe_failed(s->describe(), s->last_error(), "standing by without wake-on-release");
      }
    }
  }
  if (loop_.stop_requested()) return WaitEnded{End::kShutdown};
  if (turn) return WaitEnded{End::kTurn, Millis(0), static_cast<int>(std::count(turned_.begin(), turned_.end(), true))};
  if (released) return WaitEnded{End::kReleased};
  if (subscribed) return WaitEnded{End::kSubscribed};
  if (next) return WaitEnded{End::kNext, window};
  return std::nullopt;
}

}  // namespace redisgo::daemon
