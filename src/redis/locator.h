#pragma once
/// Shared by the files of the redis module's locators only (not part of its interface):
/// the locator thread that Sentinel and Cluster locators build on (topology.h says what a
/// locator does), and the helpers their queries share.

#include <poll.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "redis/poller.h"
#include "redis/topology.h"
#include "util/unique_fd.h"

namespace redisgo::redis::detail {

/// "ip", "port" as a reply's elements -> Endpoint (an empty ip means `fallback_host`).
std::optional<Endpoint> endpoint_from(const redisReply* ip, const redisReply* port, const std::string& fallback_host);

/// The locators' query connections between queries: a reply that came after the answer
/// was decided is read, or times out. One pollfd per connection (-1 when idle), so that
/// drive_queries() finds each at its index.
void poll_queries(std::vector<std::unique_ptr<AsyncConnection>>& conns, std::vector<pollfd>& fds,
                  SteadyClock::time_point& wake);
void drive_queries(std::vector<std::unique_ptr<AsyncConnection>>& conns, const pollfd* fds, std::size_t n,
                   SteadyClock::time_point now);

/// Runs on its own thread: answers locate() from what it knows, and learns by query()
/// (paced) and by whatever extra watching a subclass does (the sentinels' pub/sub).
class ThreadedLocator : public Locator {
 public:
  ThreadedLocator();
  ~ThreadedLocator() override { shut_down(); }
  ThreadedLocator(const ThreadedLocator&) = delete;
  ThreadedLocator& operator=(const ThreadedLocator&) = delete;

  std::shared_ptr<Resolution> locate() override;

  std::uint64_t generation() const noexcept override { return generation_.load(std::memory_order_acquire); }

  void wrong(const Endpoint& at, const std::string& why) noexcept override;

  std::optional<Endpoint> known() const override {
    std::lock_guard lk(mu_);
    return known_;
  }

 protected:
  struct Answer {
    std::optional<Endpoint> server;
    std::string error;  ///< when no server
    ResolveFailure failure = ResolveFailure::kUnreachable;
  };
  /// When no source answered because each refused our credentials (or each failed TLS
  /// verification): say so, so that it exits 77 like a refused node, not 69.
  static ResolveFailure common_failure(const std::vector<CallPtr>& calls) {
    bool any = false, all_auth = true, all_tls = true;
    for (const auto& c : calls) {
      if (c->ok()) return ResolveFailure::kUnreachable;
      if (!c->done()) continue;
      any = true;
      all_auth = all_auth && c->fault() == Fault::kAuth;
      all_tls = all_tls && c->fault() == Fault::kTls;
    }
    if (any && all_tls) return ResolveFailure::kTls;
    if (any && all_auth) return ResolveFailure::kAuth;
    return ResolveFailure::kUnreachable;
  }
  /// Runs on the locator's thread: asks the sources. cancel_fd ends it (shutdown).
  virtual Answer query(int cancel_fd) = 0;
  /// Extra watching on the locator's thread (pub/sub): adds fds and the next wake-up.
  virtual void add_polls(std::vector<pollfd>& fds, SteadyClock::time_point& wake) { (void)fds, (void)wake; }
  /// After poll(): `fds` from the index add_polls() started at.
  virtual void on_polls(const pollfd* fds, std::size_t n) { (void)fds, (void)n; }
  /// Periodic re-query even without a failure; zero: never.
  virtual Millis requery_every() const { return Millis(0); }
  /// From the locator's thread (or a moved()): the server is now `to`, learnt by `how`
  /// ("+switch-master", "re-query", "MOVED").
  void learn(const Endpoint& to, const char* how);
  /// After learn() changed a server that was known already (not the first answer), outside
  /// the lock: at most once per change, however many sources report it.
  virtual void changed(const Endpoint& from, const Endpoint& to, const char* how) noexcept {
    (void)from, (void)to, (void)how;
  }

  /// Must be called by the most derived destructor (the thread calls its virtuals).
  void shut_down() noexcept;

 private:
  void start_locked() {
    if (started_) return;
    started_ = true;
    thread_ = std::thread([this] { loop(); });
  }

  void loop() noexcept;

  bool stopping() const noexcept {
    pollfd p{stop_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  mutable std::mutex mu_;
  std::optional<Endpoint> known_;
  std::optional<Endpoint> suspect_;
  std::vector<std::shared_ptr<Resolution>> waiters_;
  bool need_query_ = true;
  bool started_ = false;
  std::atomic<std::uint64_t> generation_{1};
  UniqueFd stop_;
  UniqueFd wake_;
  std::thread thread_;
};

}  // namespace redisgo::redis::detail
