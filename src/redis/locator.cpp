// The locator thread (locator.h) and the helpers the Sentinel and Cluster locators share.
#include "redis/locator.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "util/error.h"

namespace redisgo::redis::detail {
namespace {

constexpr Millis kQueryGapMin{100};    // never ask more often than this
constexpr Millis kQueryBackoffMax{2000};

void signal_fd(int fd) noexcept {
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
}

void drain_fd(int fd) noexcept {
  std::uint64_t v;
  while (::read(fd, &v, sizeof v) > 0) {
  }
}

UniqueFd make_eventfd() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd) throw_errno("eventfd", errno);
  return fd;
}

}  // namespace

std::optional<Endpoint> endpoint_from(const redisReply* ip, const redisReply* port, const std::string& fallback_host) {
  auto host = as_string(ip);
  std::optional<std::int64_t> p = as_integer(port);
  if (!p) {
    if (auto ps = as_string(port)) {
      try {
        p = std::stoll(*ps);
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  // A host name is at most 253 bytes (RFC 1035): a longer "address" is no server's, and
  // it would only be carried into every message that names the node.
  if (!host || host->size() > 255 || !p || *p <= 0 || *p > 65535) return std::nullopt;
  Endpoint e;
  e.kind = Endpoint::Kind::kTcp;
  e.host = host->empty() || *host == "?" ? fallback_host : *host;
  e.port = static_cast<int>(*p);
  if (e.host.empty()) return std::nullopt;
  return e;
}

void poll_queries(std::vector<std::unique_ptr<AsyncConnection>>& conns, std::vector<pollfd>& fds,
                  SteadyClock::time_point& wake) {
  for (auto& c : conns) {
    if (c->busy()) {
      fds.push_back(pollfd{c->fd(), c->events(), 0});
      wake = std::min(wake, c->next_deadline());
    } else {
      fds.push_back(pollfd{-1, 0, 0});
    }
  }
}

void drive_queries(std::vector<std::unique_ptr<AsyncConnection>>& conns, const pollfd* fds, std::size_t n,
                   SteadyClock::time_point now) {
  for (std::size_t i = 0; i < conns.size() && i < n; ++i) {
    if (fds[i].fd >= 0 && fds[i].revents != 0) conns[i]->on_ready(fds[i].revents);
    conns[i]->check_deadlines(now);
  }
}

ThreadedLocator::ThreadedLocator() : stop_(make_eventfd()), wake_(make_eventfd()) {}

std::shared_ptr<Resolution> ThreadedLocator::locate() {
  std::shared_ptr<Resolution> waiter;
  std::optional<Endpoint> known;
  {
    std::lock_guard lk(mu_);
    start_locked();
    known = known_;
    if (!known) {
      waiter = Resolution::deferred();
      waiters_.push_back(waiter);
      need_query_ = true;
    }
  }
  if (known) {
    auto r = Resolution::deferred();
    r->settle(*known);
    return r;
  }
  signal_fd(wake_.get());
  return waiter;
}

void ThreadedLocator::wrong(const Endpoint& at, const std::string& why) noexcept {
  try {
    std::lock_guard lk(mu_);
    if (known_ && *known_ != at) return;  // already moved on
    (void)why;  // the connection logs it; the query's own outcome is what counts here
    need_query_ = true;
    suspect_ = at;
  } catch (...) {
    return;
  }
  signal_fd(wake_.get());
}

void ThreadedLocator::learn(const Endpoint& to, const char* how) {
  std::vector<std::shared_ptr<Resolution>> waiters;
  std::optional<Endpoint> from;
  {
    std::lock_guard lk(mu_);
    if (!known_ || *known_ != to) {
      if (known_) from = known_;
      known_ = to;
      generation_.fetch_add(1, std::memory_order_acq_rel);
    }
    waiters.swap(waiters_);
  }
  for (auto& w : waiters) w->settle(to);
  if (from) changed(*from, to, how);
}

void ThreadedLocator::shut_down() noexcept {
  if (thread_.joinable()) {
    signal_fd(stop_.get());
    thread_.join();
  }
}

void ThreadedLocator::loop() noexcept {
  auto next_query = SteadyClock::time_point{};
  auto next_periodic = SteadyClock::now() + requery_every();
  Millis backoff{0};
  std::vector<pollfd> fds;
  for (;;) {
    const auto now = SteadyClock::now();
    bool due;
    {
      std::lock_guard lk(mu_);
      due = (need_query_ || (requery_every() > Millis(0) && now >= next_periodic)) && now >= next_query;
    }
    if (due) {
      Answer a;
      try {
        a = query(stop_.get());
      } catch (const std::exception& e) {
        a.error = e.what();
      }
      if (stopping()) return;
      const auto after = SteadyClock::now();
      std::vector<std::shared_ptr<Resolution>> failed;
      bool same_as_suspect = false;
      {
        std::lock_guard lk(mu_);
        need_query_ = false;
        same_as_suspect = a.server && suspect_ && *a.server == *suspect_;
        suspect_.reset();
        if (!a.server) failed.swap(waiters_);
      }
      if (a.server) learn(*a.server, "re-query");
      for (auto& w : failed) w->fail(a.error, a.failure);
      // Pacing: an answer that names the server just reported bad, or none, doubles
      // the delay; the next failure report waits for it.
      backoff = (!a.server || same_as_suspect) ? std::min(std::max(backoff * 2, kQueryGapMin), kQueryBackoffMax)
                                               : Millis(0);
      next_query = after + std::max(backoff, kQueryGapMin);
      next_periodic = after + requery_every();
    }
    fds.assign({{stop_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}});
    auto wake = SteadyClock::time_point::max();
    {
      std::lock_guard lk(mu_);
      if (need_query_) wake = std::min(wake, next_query);
    }
    if (requery_every() > Millis(0)) wake = std::min(wake, std::max(next_periodic, next_query));
    try {
      add_polls(fds, wake);
    } catch (...) {
    }
    int timeout = -1;
    if (wake != SteadyClock::time_point::max()) {
      auto left = std::chrono::ceil<Millis>(wake - SteadyClock::now()).count();
      timeout = static_cast<int>(std::clamp<Millis::rep>(left, 0, INT_MAX));
    }
    int rc = ::poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) {
      // Nothing sensible to do but not spin.
      ::usleep(100'000);
      continue;
    }
    if (fds[0].revents != 0) return;
    if (fds[1].revents != 0) drain_fd(wake_.get());
    try {
      on_polls(fds.data() + 2, fds.size() - 2);
    } catch (...) {
    }
  }
}

}  // namespace redisgo::redis::detail
