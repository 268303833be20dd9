#include "redis/topology.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <map>
#include <mutex>
#include <thread>

#include "redis/poller.h"
#include "redis/subscriber.h"
#include "util/error.h"
#include "util/unique_fd.h"

namespace redisgo::redis {
namespace {

constexpr Millis kQueryGapMin{100};    // never ask more often than this
constexpr Millis kQueryBackoffMax{2000};
constexpr const char* kSwitchMaster = "+switch-master";

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

/// "ip", "port" as a reply's elements -> Endpoint (an empty ip means `fallback_host`).
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
  if (!host || !p || *p <= 0 || *p > 65535) return std::nullopt;
  Endpoint e;
  e.kind = Endpoint::Kind::kTcp;
  e.host = host->empty() || *host == "?" ? fallback_host : *host;
  e.port = static_cast<int>(*p);
  if (e.host.empty()) return std::nullopt;
  return e;
}

/// The locators' query connections between queries: a reply that came after the answer
/// was decided is read, or times out. One pollfd per connection (-1 when idle), so that
/// drive_queries() finds each at its index.
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

/// Runs on its own thread: answers locate() from what it knows, and learns by query()
/// (paced) and by whatever extra watching a subclass does (the sentinels' pub/sub).
class ThreadedLocator : public Locator {
 public:
  ThreadedLocator() : stop_(make_eventfd()), wake_(make_eventfd()) {}
  ~ThreadedLocator() override { shut_down(); }
  ThreadedLocator(const ThreadedLocator&) = delete;
  ThreadedLocator& operator=(const ThreadedLocator&) = delete;

  std::shared_ptr<Resolution> locate() override {
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

  std::uint64_t generation() const noexcept override { return generation_.load(std::memory_order_acquire); }

  void wrong(const Endpoint& at, const std::string& why) noexcept override {
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

  /// From the locator's thread (or a moved()): the server is now `to`.
  void learn(const Endpoint& to) {
    std::vector<std::shared_ptr<Resolution>> waiters;
    {
      std::lock_guard lk(mu_);
      if (!known_ || *known_ != to) {
        known_ = to;
        generation_.fetch_add(1, std::memory_order_acq_rel);
      }
      waiters.swap(waiters_);
    }
    for (auto& w : waiters) w->settle(to);
  }

  /// Must be called by the most derived destructor (the thread calls its virtuals).
  void shut_down() noexcept {
    if (thread_.joinable()) {
      signal_fd(stop_.get());
      thread_.join();
    }
  }

 private:
  void start_locked() {
    if (started_) return;
    started_ = true;
    thread_ = std::thread([this] { loop(); });
  }

  void loop() noexcept {
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
        if (a.server) learn(*a.server);
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

// ---- Sentinel ------------------------------------------------------------------------

/// The answer most sentinels give (ties: the first sentinel's in list order).
/// The master named by at least `majority` sentinels, if one is. A plurality is not
/// enough: a daemon that reaches only a partitioned minority of sentinels must not follow
/// their view (two daemons could then hold the lease on two masters).
std::optional<Endpoint> majority_named(const std::vector<std::optional<Endpoint>>& answers, std::size_t majority) {
  std::map<std::string, std::size_t> votes;
  for (const auto& a : answers) {
    if (a && ++votes[a->str()] >= majority) return a;
  }
  return std::nullopt;
}

class SentinelLocator final : public ThreadedLocator {
 public:
  explicit SentinelLocator(SentinelOptions options) : options_(std::move(options)) {
    for (const auto& s : options_.sentinels) {
      conns_.push_back(std::make_unique<AsyncConnection>(s));
      watchers_.push_back(std::make_unique<Subscriber>(s, kSwitchMaster));
    }
  }
  ~SentinelLocator() override { shut_down(); }

  bool confirm_master() const noexcept override { return true; }
  std::string name() const override { return "master '" + options_.master + "'"; }

 protected:
  Millis requery_every() const override { return options_.requery_every; }

  Answer query(int cancel_fd) override {
    std::vector<CallPtr> calls;
    std::vector<AsyncConnection*> conns;
    for (auto& c : conns_) {
      calls.push_back(c->send({"SENTINEL", "get-master-addr-by-name", options_.master}));
      conns.push_back(c.get());
    }
    const std::size_t majority = conns_.size() / 2 + 1;
    auto named_now = [&] {
      std::vector<std::optional<Endpoint>> named;
      for (const auto& c : calls) {
        if (c->ok() && c->reply().is_array() && c->reply().size() == 2) {
          named.push_back(endpoint_from(c->reply().element(0), c->reply().element(1), ""));
        }
      }
      return named;
    };
    DriveOptions o;
    o.cancel_fd = cancel_fd;
    // Until a majority agrees on one master, or every sentinel has answered or failed.
    drive(conns, [&] { return majority_named(named_now(), majority).has_value(); }, o);
    const auto named = named_now();
    std::string errors;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& c = calls[i];
      if (c->ok() && c->reply().is_array() && c->reply().size() == 2) {
        const auto e = endpoint_from(c->reply().element(0), c->reply().element(1), "");
        if (!errors.empty()) errors += "; ";
        errors += conns_[i]->describe() + ": names " + (e ? e->str() : std::string("an unusable address"));
        continue;
      }
      if (!errors.empty()) errors += "; ";
      if (!c->done()) {
        errors += conns_[i]->describe() + ": no answer yet";
      } else if (c->ok()) {
        errors += conns_[i]->describe() + ": does not know a master named '" + options_.master + "'";
      } else {
        errors += c->error();
      }
    }
    Answer a;
    a.server = majority_named(named, majority);
    if (!a.server) {
      a.error = "no majority of the sentinels (" + std::to_string(majority) + " of " + std::to_string(conns_.size()) +
                ") named one master for '" + options_.master + "': " + errors;
      a.failure = common_failure(calls);
    }
    return a;
  }

  void add_polls(std::vector<pollfd>& fds, SteadyClock::time_point& wake) override {
    const auto now = SteadyClock::now();
    for (auto& w : watchers_) {
      w->maintain(now);
      fds.push_back(pollfd{w->fd(), w->events(), 0});
      wake = std::min(wake, w->next_wakeup());
    }
    poll_queries(conns_, fds, wake);  // leftovers: a reply after the majority
  }

  void on_polls(const pollfd* fds, std::size_t n) override {
    const auto now = SteadyClock::now();
    for (std::size_t i = 0; i < watchers_.size() && i < n; ++i) {
      auto& w = watchers_[i];
      if (fds[i].revents != 0) w->on_ready(fds[i].revents);
      w->maintain(now);
      for (const auto& payload : w->take_payloads()) {
        // "<name> <old-ip> <old-port> <new-ip> <new-port>"
        std::vector<std::string> parts;
        std::size_t at = 0;
        while (at <= payload.size()) {
          auto sp = payload.find(' ', at);
          if (sp == std::string::npos) sp = payload.size();
          parts.push_back(payload.substr(at, sp - at));
          at = sp + 1;
        }
        if (parts.size() != 5 || parts[0] != options_.master) continue;
        if (auto to = Endpoint::parse(parts[3] + ":" + parts[4])) learn(*to);
      }
    }
    if (n > watchers_.size()) drive_queries(conns_, fds + watchers_.size(), n - watchers_.size(), now);
  }

 private:
  SentinelOptions options_;
  std::vector<std::unique_ptr<AsyncConnection>> conns_;
  std::vector<std::unique_ptr<Subscriber>> watchers_;
};

// ---- Cluster -------------------------------------------------------------------------

struct SlotOwner {
  std::optional<Endpoint> master;
  std::string id;
  std::vector<std::string> replicas;
};

/// CLUSTER SLOTS -> the owner of `slot` (nullopt when the reply is not a slot map or the
/// slot is not covered). `asked` fills in an empty ip.
std::optional<SlotOwner> owner_from_slots(const Reply& reply, std::uint16_t slot, const std::string& asked) {
  if (!reply.is_array()) return std::nullopt;
  for (std::size_t i = 0; i < reply.size(); ++i) {
    const redisReply* range = reply.element(i);
    if (!range || range->type != REDIS_REPLY_ARRAY || range->elements < 3) continue;
    auto lo = as_integer(range->element[0]);
    auto hi = as_integer(range->element[1]);
    if (!lo || !hi || slot < *lo || slot > *hi) continue;
    const redisReply* m = range->element[2];
    if (!m || m->type != REDIS_REPLY_ARRAY || m->elements < 2) return std::nullopt;
    SlotOwner o;
    o.master = endpoint_from(m->element[0], m->element[1], asked);
    if (m->elements >= 3) o.id = as_string(m->element[2]).value_or("");
    for (std::size_t r = 3; r < range->elements; ++r) {
      const redisReply* rep = range->element[r];
      if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements >= 2) {
        if (auto e = endpoint_from(rep->element[0], rep->element[1], asked)) o.replicas.push_back(e->str());
      }
    }
    if (!o.master) return std::nullopt;
    return o;
  }
  return std::nullopt;
}

class ClusterLocator final : public ThreadedLocator {
 public:
  explicit ClusterLocator(ClusterOptions options) : options_(std::move(options)), slot_(hash_slot(options_.key)) {
    for (const auto& s : options_.seeds) conns_.push_back(std::make_unique<AsyncConnection>(s));
  }
  ~ClusterLocator() override { shut_down(); }

  void moved(const Endpoint& to) noexcept override {
    try {
      learn(to);
    } catch (...) {
    }
  }
  std::string name() const override { return "slot " + std::to_string(slot_) + "'s master"; }

 protected:
  Answer query(int cancel_fd) override {
    // Every seed at once, plus the owner we knew (it may know its own slot's new owner).
    std::vector<CallPtr> calls;
    std::vector<AsyncConnection*> conns;
    std::vector<std::string> hosts;
    for (auto& c : conns_) {
      calls.push_back(c->send({"CLUSTER", "SLOTS"}));
      conns.push_back(c.get());
      hosts.push_back(c->options().endpoint.host);
    }
    std::optional<SlotOwner> found;
    auto decided = [&] {
      for (std::size_t i = 0; i < calls.size(); ++i) {
        if (calls[i]->ok()) {
          if ((found = owner_from_slots(calls[i]->reply(), slot_, hosts[i]))) return true;
        }
      }
      return false;
    };
    DriveOptions o;
    o.cancel_fd = cancel_fd;
    drive(conns, decided, o);
    Answer a;
    if (found) {
      a.server = found->master;
      return a;
    }
    std::string errors;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (!errors.empty()) errors += "; ";
      const auto& c = calls[i];
      if (!c->done()) {
        errors += conns_[i]->describe() + ": no answer yet";
      } else if (c->ok()) {
        errors += conns_[i]->describe() + ": its slot map does not cover slot " + std::to_string(slot_);
      } else {
        errors += c->error();
      }
    }
    a.error = "no cluster node named the owner of slot " + std::to_string(slot_) + ": " + errors;
    a.failure = common_failure(calls);
    return a;
  }

  void add_polls(std::vector<pollfd>& fds, SteadyClock::time_point& wake) override { poll_queries(conns_, fds, wake); }

  void on_polls(const pollfd* fds, std::size_t n) override { drive_queries(conns_, fds, n, SteadyClock::now()); }

 private:
  ClusterOptions options_;
  std::uint16_t slot_;
  std::vector<std::unique_ptr<AsyncConnection>> conns_;
};

}  // namespace

std::uint16_t hash_slot(std::string_view key) {
  auto open = key.find('{');
  if (open != std::string_view::npos) {
    auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
  }
  std::uint16_t crc = 0;  // CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0
  for (unsigned char byte : key) {
    crc = static_cast<std::uint16_t>(crc ^ (byte << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021) : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return static_cast<std::uint16_t>(crc & 16383);
}

std::shared_ptr<Locator> make_sentinel_locator(SentinelOptions options) {
  if (options.sentinels.empty()) throw std::invalid_argument("sentinel: no sentinels");
  return std::make_shared<SentinelLocator>(std::move(options));
}

std::shared_ptr<Locator> make_cluster_locator(ClusterOptions options) {
  if (options.seeds.empty()) throw std::invalid_argument("cluster: no seed nodes");
  return std::make_shared<ClusterLocator>(std::move(options));
}

SentinelReport inspect_sentinels(const SentinelOptions& options, int cancel_fd) {
  std::vector<std::unique_ptr<AsyncConnection>> conns;
  std::vector<AsyncConnection*> ptrs;
  std::vector<CallPtr> masters, replicas;
  for (const auto& s : options.sentinels) {
    conns.push_back(std::make_unique<AsyncConnection>(s));
    ptrs.push_back(conns.back().get());
    masters.push_back(conns.back()->send({"SENTINEL", "get-master-addr-by-name", options.master}));
    replicas.push_back(conns.back()->send({"SENTINEL", "replicas", options.master}));
  }
  DriveOptions o;
  o.cancel_fd = cancel_fd;
  drive(ptrs, nullptr, o);
  SentinelReport report;
  for (std::size_t i = 0; i < conns.size(); ++i) {
    SentinelReport::Answer a;
    a.sentinel = conns[i]->options().endpoint.str();
    const auto& m = masters[i];
    if (!m->done()) {
      a.error = conns[i]->describe() + ": no answer";
    } else if (!m->ok()) {
      a.error = m->error();
    } else {
      a.reachable = true;
      if (m->reply().is_array() && m->reply().size() == 2) {
        a.master = endpoint_from(m->reply().element(0), m->reply().element(1), "");
      } else {
        a.error = conns[i]->describe() + ": does not know a master named '" + options.master + "'";
      }
    }
    const auto& r = replicas[i];
    if (r->ok() && r->reply().is_array()) {
      for (std::size_t k = 0; k < r->reply().size(); ++k) {
        // Each replica: a flat array of field, value pairs.
        const redisReply* fields = r->reply().element(k);
        if (!fields || fields->type != REDIS_REPLY_ARRAY) continue;
        std::map<std::string, std::string> f;
        for (std::size_t j = 0; j + 1 < fields->elements; j += 2) {
          auto name = as_string(fields->element[j]);
          auto value = as_string(fields->element[j + 1]);
          if (name && value) f[*name] = *value;
        }
        a.replicas.push_back(f["ip"] + ":" + f["port"] + " (" + f["flags"] + ", link " + f["master-link-status"] + ")");
      }
    }
    report.answers.push_back(std::move(a));
  }
  return report;
}

ClusterReport inspect_cluster(const ClusterOptions& options, int cancel_fd) {
  ClusterReport report;
  report.slot = hash_slot(options.key);
  std::vector<std::unique_ptr<AsyncConnection>> conns;
  std::vector<AsyncConnection*> ptrs;
  std::vector<CallPtr> calls;
  for (const auto& s : options.seeds) {
    conns.push_back(std::make_unique<AsyncConnection>(s));
    ptrs.push_back(conns.back().get());
    calls.push_back(conns.back()->send({"CLUSTER", "SLOTS"}));
  }
  DriveOptions o;
  o.cancel_fd = cancel_fd;
  auto first_good = [&] {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (!calls[i]->ok()) continue;
      if (auto owner = owner_from_slots(calls[i]->reply(), report.slot, conns[i]->options().endpoint.host)) {
        report.owner = owner->master;
        report.owner_id = owner->id;
        report.replicas = owner->replicas;
        report.answered_by = conns[i]->options().endpoint.str();
        return true;
      }
    }
    return false;
  };
  drive(ptrs, first_good, o);
  first_good();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (!calls[i]->done()) {
      report.errors.push_back(conns[i]->describe() + ": no answer");
    } else if (!calls[i]->ok()) {
      report.errors.push_back(calls[i]->error());
    }
  }
  return report;
}

}  // namespace redisgo::redis
