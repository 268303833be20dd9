// Cluster: the master that owns the key's hash slot (topology.h).
#include "redis/topology.h"

#include <algorithm>
#include <map>

#include "redis/locator.h"
#include "redis/subscriber.h"
#include "util/text.h"

namespace redisgo::redis {
namespace detail {
namespace {

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
    if (m->elements >= 3) o.id = shown_text(as_string(m->element[2]).value_or(""));
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
      learn(to, "MOVED");
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
}  // namespace detail

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

namespace {
/// CLUSTER SLOTS sent to every seed at once (driven by the caller).
struct SeedCalls {
  std::vector<std::unique_ptr<AsyncConnection>> conns;
  std::vector<AsyncConnection*> ptrs;
  std::vector<CallPtr> calls;
  explicit SeedCalls(const ClusterOptions& options) {
    for (const auto& s : options.seeds) {
      conns.push_back(std::make_unique<AsyncConnection>(s));
      ptrs.push_back(conns.back().get());
      calls.push_back(conns.back()->send({"CLUSTER", "SLOTS"}));
    }
  }
};
}  // namespace

std::shared_ptr<Locator> make_cluster_locator(ClusterOptions options) {
  if (options.seeds.empty()) throw std::invalid_argument("cluster: no seed nodes");
  return std::make_shared<detail::ClusterLocator>(std::move(options));
}

ClusterReport inspect_cluster(const ClusterOptions& options, int cancel_fd) {
  ClusterReport report;
  report.slot = hash_slot(options.key);
  SeedCalls seeds(options);
  auto& [conns, ptrs, calls] = seeds;
  DriveOptions o;
  o.cancel_fd = cancel_fd;
  auto first_good = [&] {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (!calls[i]->ok()) continue;
      if (auto owner = detail::owner_from_slots(calls[i]->reply(), report.slot, conns[i]->options().endpoint.host)) {
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

std::vector<Endpoint> cluster_masters(const ClusterOptions& options, std::vector<std::string>& errors) {
  SeedCalls seeds(options);
  auto& [conns, ptrs, calls] = seeds;
  drive(ptrs, nullptr, DriveOptions{});  // each call bounded by its connection's timeouts
  std::vector<Endpoint> masters;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (!calls[i]->done()) {
      errors.push_back(conns[i]->describe() + ": no answer");
      continue;
    }
    if (!calls[i]->ok()) {
      errors.push_back(calls[i]->error());
      continue;
    }
    if (!masters.empty()) continue;
    const Reply& reply = calls[i]->reply();
    for (std::size_t r = 0; reply.is_array() && r < reply.size(); ++r) {
      const redisReply* range = reply.element(r);
      if (!range || range->type != REDIS_REPLY_ARRAY || range->elements < 3) continue;
      const redisReply* m = range->element[2];
      if (!m || m->type != REDIS_REPLY_ARRAY || m->elements < 2) continue;
      auto e = detail::endpoint_from(m->element[0], m->element[1], conns[i]->options().endpoint.host);
      if (e && std::none_of(masters.begin(), masters.end(), [&](const Endpoint& x) { return x.str() == e->str(); })) {
        masters.push_back(*e);
      }
    }
  }
  return masters;
}

}  // namespace redisgo::redis
