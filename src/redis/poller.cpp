#include "redis/poller.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <stdexcept>
#include <typeinfo>

#include "util/clock.h"
#include "util/error.h"

namespace redisgo::redis {
namespace {

// The loop serves both lists: the connections of the tools and the locators, and the links
// the lock layer drives through sockets() (which are all AsyncConnections: checked there).
AsyncConnection* socket_of(AsyncConnection* c) noexcept { return c; }
AsyncConnection* socket_of(Link* l) noexcept { return static_cast<AsyncConnection*>(l); }

bool is_socket(const Link* l) noexcept { return !l || typeid(*l) == typeid(AsyncConnection); }

template <class Conn>
DriveEnd drive_loop(const std::vector<Conn*>& conns, const std::function<bool()>& done, const DriveOptions& options) {
  std::vector<pollfd> fds;
  std::vector<AsyncConnection*> polled;
  auto last_beat = SteadyClock::now();
  bool polled_once = false;  // a deadline already past still gets one look (poll with 0)
  for (;;) {
    if (done && done()) return DriveEnd::kDone;
    const bool any_busy = std::any_of(conns.begin(), conns.end(), [](auto* c) { return c && socket_of(c)->busy(); });
    if (!any_busy) return DriveEnd::kIdle;
    auto now = SteadyClock::now();
    if (now >= options.deadline && polled_once) return DriveEnd::kDeadline;

    auto wake = options.deadline;
    fds.clear();
    polled.clear();
    for (auto* l : conns) {
      if (!l) continue;
      AsyncConnection* c = socket_of(l);
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
      if (c) socket_of(c)->check_deadlines(now);
    }
  }
}

template <class Conn>
void poll_loop(const std::vector<Conn*>& conns) noexcept {
  std::vector<pollfd> fds;
  std::vector<AsyncConnection*> polled;
  for (auto* l : conns) {
    AsyncConnection* c = l ? socket_of(l) : nullptr;
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
    if (c) socket_of(c)->check_deadlines(now);
  }
}

/// sockets(): today's connections and poll loop behind the seam, unchanged.
class SocketNetwork final : public Network {
 public:
  std::unique_ptr<Link> link(ConnectionOptions options) override {
    return std::make_unique<AsyncConnection>(std::move(options));
  }
  DriveEnd drive(const std::vector<Link*>& links, const std::function<bool()>& done,
                 const DriveOptions& options) override {
    if (!std::all_of(links.begin(), links.end(), is_socket)) {
      throw std::invalid_argument("redis: a link of another network driven over sockets");
    }
    return drive_loop(links, done, options);
  }
  void poll_once(const std::vector<Link*>& links) noexcept override {
    // noexcept: a foreign link (a wiring mistake drive() reports) is not looked at.
    if (std::all_of(links.begin(), links.end(), is_socket)) poll_loop(links);
  }
  SteadyClock::time_point now() const noexcept override { return SteadyClock::now(); }
  std::int64_t wall_us() const noexcept override { return redisgo::wall_us(); }
};

}  // namespace

Network& sockets() {
  static SocketNetwork network;
  return network;
}

DriveEnd drive(const std::vector<AsyncConnection*>& conns, const std::function<bool()>& done,
               const DriveOptions& options) {
  return drive_loop(conns, done, options);
}

void poll_once(const std::vector<AsyncConnection*>& conns) noexcept { poll_loop(conns); }

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
