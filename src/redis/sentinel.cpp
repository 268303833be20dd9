// Sentinel: the master named by a majority of the sentinels (topology.h).
#include "redis/topology.h"

#include <algorithm>
#include <map>

#include "redis/locator.h"
#include "redis/subscriber.h"
#include "util/text.h"

namespace redisgo::redis {
namespace detail {
namespace {

constexpr const char* kSwitchMaster = "+switch-master";

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

  void changed(const Endpoint& from, const Endpoint& to, const char* how) noexcept override {
    if (!options_.on_failover) return;
    try {
      options_.on_failover(from, to, how);
    } catch (...) {
    }
  }

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
        if (auto to = Endpoint::parse(parts[3] + ":" + parts[4])) learn(*to, kSwitchMaster);
      }
    }
    if (n > watchers_.size()) drive_queries(conns_, fds + watchers_.size(), n - watchers_.size(), now);
  }

 private:
  SentinelOptions options_;
  std::vector<std::unique_ptr<AsyncConnection>> conns_;
  std::vector<std::unique_ptr<Subscriber>> watchers_;
};

}  // namespace
}  // namespace detail

std::shared_ptr<Locator> make_sentinel_locator(SentinelOptions options) {
  if (options.sentinels.empty()) throw std::invalid_argument("sentinel: no sentinels");
  return std::make_shared<detail::SentinelLocator>(std::move(options));
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
        a.master = detail::endpoint_from(m->reply().element(0), m->reply().element(1), "");
      } else {
        a.error = conns[i]->describe() + ": does not know a master named '" + options.master + "'";
      }
    }
    const auto& r = replicas[i];
    if (!r->ok()) a.replicas_error = r->done() ? r->error() : conns[i]->describe() + ": no answer";
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
        a.replicas.push_back(
            shown_text(f["ip"] + ":" + f["port"] + " (" + f["flags"] + ", link " + f["master-link-status"] + ")"));
      }
    }
    report.answers.push_back(std::move(a));
  }
  return report;
}

}  // namespace redisgo::redis
