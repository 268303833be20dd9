#include "redis/poller.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "util/error.h"

namespace redisgo::redis {

DriveEnd drive(const std::vector<AsyncConnection*>& conns, const std::function<bool()>& done,
               const DriveOptions& options) {
  std::vector<pollfd> fds;
  std::vector<AsyncConnection*> polled;
  auto last_beat = SteadyClock::now();
  bool polled_once = false;  // a deadline already past still gets one look (poll with 0)
  for (;;) {
    if (done && done()) return DriveEnd::kDone;
    const bool any_busy = std::any_of(conns.begin(), conns.end(), [](auto* c) { return c && c->busy(); });
    if (!any_busy) return DriveEnd::kIdle;
    auto now = SteadyClock::now();
    if (now >= options.deadline && polled_once) return DriveEnd::kDeadline;

    auto wake = options.deadline;
    fds.clear();
    polled.clear();
    for (auto* c : conns) {
      if (!c) continue;
      wake = std::min(wake, c->next_deadline());
      if (c->fd() >= 0 && c->events() != 0) {
        fds.push_back(pollfd{c->fd(), c->events(), 0});
        polled.push_back(c);
      }
    }
    if (options.heartbeat) wake = std::min(wake, last_beat + options.heartbeat_every);
    const bool watch_cancel = options.cancel_fd >= 0;
    if (watch_cancel) fds.push_back(pollfd{options.cancel_fd, POLLIN, 0});
    auto left = std::chrono::ceil<Millis>(wake - now).count();
    int timeout = static_cast<int>(std::clamp<Millis::rep>(left, 0, INT_MAX));
    int rc = ::poll(fds.data(), fds.size(), timeout);
    polled_once = true;
    if (rc < 0 && errno != EINTR) throw_errno("poll", errno);
    if (options.heartbeat && SteadyClock::now() - last_beat >= options.heartbeat_every) {
      options.heartbeat();
      last_beat = SteadyClock::now();
    }
    if (rc > 0) {
      if (watch_cancel && fds.back().revents != 0) return DriveEnd::kCancelled;
      for (std::size_t i = 0; i < polled.size(); ++i) {
        if (fds[i].revents != 0) polled[i]->on_ready(fds[i].revents);
      }
    }
    // Deadlines are judged after reading: a reply that arrived in time but was not read
    // yet (nobody polled between two rounds) still counts.
    now = SteadyClock::now();
    for (auto* c : conns) {
      if (c) c->check_deadlines(now);
    }
  }
}

void poll_once(const std::vector<AsyncConnection*>& conns) noexcept {
  std::vector<pollfd> fds;
  std::vector<AsyncConnection*> polled;
  for (auto* c : conns) {
    if (c && c->fd() >= 0 && c->events() != 0) {
      fds.push_back(pollfd{c->fd(), c->events(), 0});
      polled.push_back(c);
    }
  }
  if (!fds.empty() && ::poll(fds.data(), fds.size(), 0) > 0) {
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (fds[i].revents != 0) polled[i]->on_ready(fds[i].revents);
    }
  }
  const auto now = SteadyClock::now();
  for (auto* c : conns) {
    if (c) c->check_deadlines(now);
  }
}

std::vector<CallPtr> run_commands(AsyncConnection& conn, const std::vector<std::vector<std::string>>& argvs,
                                  int cancel_fd) {
  std::vector<CallPtr> calls;
  calls.reserve(argvs.size());
  for (const auto& argv : argvs) calls.push_back(conn.send(argv));
  DriveOptions o;
  o.cancel_fd = cancel_fd;
  auto all_done = [&] { return std::all_of(calls.begin(), calls.end(), [](const CallPtr& c) { return c->done(); }); };
  if (drive({&conn}, all_done, o) == DriveEnd::kCancelled) {
    conn.close(Fault::kCancelled, "cancelled");
  }
  return calls;
}

}  // namespace redisgo::redis
