#include "simulator/seam.h"

#include <algorithm>
#include <stdexcept>

#include "simulator/sim.h"

namespace redisgo::simulator {
namespace {

void append_resp(std::string& out, const sim::Resp& r) {
  using K = sim::Resp::Kind;
  switch (r.kind) {
    case K::kNil: out += "$-1\r\n"; return;
    case K::kInt: out += ":" + std::to_string(r.integer) + "\r\n"; return;
    case K::kStatus: out += "+" + r.text + "\r\n"; return;
    case K::kError: out += "-" + r.text + "\r\n"; return;
    case K::kBulk: out += "$" + std::to_string(r.text.size()) + "\r\n" + r.text + "\r\n"; return;
    case K::kArray:
      out += "*" + std::to_string(r.items.size()) + "\r\n";
      for (const auto& i : r.items) append_resp(out, i);
      return;
  }
}

/// A Wire behind the Link interface.
class SimLink final : public redis::Link {
 public:
  SimLink(Network& net, int host, int node, Process* process, redis::ConnectionOptions options)
      : options_(std::move(options)),
        wire_(net, host, node, process,
              WireOptions{options_.connect_timeout.count() * kMs, options_.io_timeout.count() * kMs}) {}

  redis::CallPtr send(std::vector<std::string> argv) override {
    auto call = std::make_shared<redis::Call>();
    WireCallPtr w = wire_.send(std::move(argv));
    bind(w, call);
    return call;
  }
  redis::CallPtr send(std::vector<std::string> argv, Millis) override { return send(std::move(argv)); }
  redis::CallPtr eval(const redis::Script& script, const std::vector<std::string>& keys,
                      const std::vector<std::string>& args) override {
    // Always EVAL with the text: the simulated node caches a script by its text, so this costs
    // no SHA-1, and a node that restarted empty needs no NOSCRIPT round.
    std::vector<std::string> argv;
    argv.reserve(3 + keys.size() + args.size());
    argv.emplace_back("EVAL");
    argv.emplace_back(script.source);
    argv.push_back(std::to_string(keys.size()));
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return send(std::move(argv));
  }
  bool busy() const noexcept override { return wire_.busy(); }
  bool unsent() const noexcept override { return false; }  // the socket takes everything at once
  bool connected() const noexcept override { return wire_.connected(); }
  std::string describe() const override { return wire_.describe(); }
  const redis::ConnectionOptions& options() const noexcept override { return options_; }
  const redis::Endpoint& current() const noexcept override { return options_.endpoint; }
  std::string peer_info() const override { return ""; }
  void set_listener(Fiber* f) { wire_.set_listener(f); }

 private:
  static void bind(const WireCallPtr& w, const redis::CallPtr& call) {
    auto complete = [call](WireCall& done) {
      if (done.state == WireCall::State::kReplied) {
        replied(*call, to_reply(done.reply), done.fault, done.error);
      } else {
        failed(*call, done.fault, done.error);
      }
    };
    if (w->done()) {
      complete(*w);
    } else {
      w->on_done = std::move(complete);
    }
  }

  redis::ConnectionOptions options_;
  Wire wire_;
};

}  // namespace

redis::Reply to_reply(const sim::Resp& r) {
  std::string bytes;
  append_resp(bytes, r);
  redis::ReplyReader reader;
  reader.feed(bytes.data(), bytes.size());
  return redis::Reply(reader.next());
}

int node_of(const redis::Endpoint& endpoint) {
  if (endpoint.host.rfind("node", 0) != 0) return -1;
  return std::atoi(endpoint.host.c_str() + 4);
}

redis::Endpoint endpoint_of(int node) { return *redis::Endpoint::parse("node" + std::to_string(node) + ":6379"); }

HostNetwork::HostNetwork(Sim& sim, int host, Process* process, const HostClock& clock)
    : sim_(sim), host_(host), process_(process), clock_(clock) {}

HostNetwork::~HostNetwork() = default;

std::unique_ptr<redis::Link> HostNetwork::link(redis::ConnectionOptions options) {
  const int node = node_of(options.endpoint);
  if (node < 0 || node >= sim_.net().nodes()) throw std::invalid_argument("simulator: no node " + options.endpoint.str());
  return std::make_unique<SimLink>(sim_.net(), host_, node, process_, std::move(options));
}

redis::SteadyClock::time_point HostNetwork::now() const noexcept {
  return redis::SteadyClock::time_point(std::chrono::duration_cast<redis::SteadyClock::duration>(
      clock_.now().time_since_epoch()));
}

Time HostNetwork::when(redis::SteadyClock::time_point t) const {
  if (t == redis::SteadyClock::time_point::max()) return kNever;
  return clock_.when(Clock::time_point(std::chrono::duration_cast<Clock::duration>(t.time_since_epoch())));
}

redis::DriveEnd HostNetwork::drive(const std::vector<redis::Link*>& links, const std::function<bool()>& done,
                                   const redis::DriveOptions& options) {
  World& world = sim_.world();
  Fiber* me = world.current();
  auto listen = [&](Fiber* f) {
    for (auto* l : links) {
      if (l) static_cast<SimLink*>(l)->set_listener(f);
    }
  };
  listen(me);
  sim_.watch_cancel(options.cancel_fd, me);
  const Time deadline = when(options.deadline);
  redis::DriveEnd end = redis::DriveEnd::kDone;
  for (;;) {
    if (done && done()) break;
    if (std::none_of(links.begin(), links.end(), [](auto* l) { return l && l->busy(); })) {
      end = redis::DriveEnd::kIdle;
      break;
    }
    if (sim_.cancelled(options.cancel_fd)) {
      end = redis::DriveEnd::kCancelled;
      break;
    }
    if (world.now() >= deadline) {
      end = redis::DriveEnd::kDeadline;
      break;
    }
    world.wait(deadline);
  }
  sim_.watch_cancel(options.cancel_fd, nullptr);
  listen(nullptr);
  return end;
}

void HostNetwork::poll_once(const std::vector<redis::Link*>&) noexcept {
  // Replies and failures are applied as they arrive (events of the client's process).
}

}  // namespace redisgo::simulator
