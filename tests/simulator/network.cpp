#include "simulator/network.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string_view>
#include <utility>

#include "lock/scripts.h"
#include "simulator/host_clock.h"

namespace redisgo::simulator {

using redis::Fault;

namespace {

/// A script's file name from its text, for traces ("script" when it is none of the lease's).
std::string script_name(const std::string& text) {
  static const std::map<std::string_view, const char*> names = [] {
    using namespace lock;
    const std::pair<const redis::Script*, const char*> all[] = {
        {&kAcquireFair, "acquire_fair"}, {&kAcquireSlotFair, "acquire_slot_fair"}, {&kRenew, "renew"},
        {&kRelease, "release"}, {&kReleaseFair, "release_fair"}, {&kUndo, "undo"}, {&kRaiseFence, "raise_fence"},
        {&kInspect, "inspect"}, {&kPublish, "publish"}, {&kPassTurn, "pass_turn"}, {&kReadLine, "read_line"},
        {&kPause, "pause"}, {&kResume, "resume"}, {&kReadPause, "read_pause"}, {&kProbeRights, "probe_rights"},
        {&kReadRefusal, "read_refusal"}, {&kCheckRights, "check_rights"}, {&kSlotsBeyond, "slots_beyond"},
        {&kListKey, "list_key"}};
    std::map<std::string_view, const char*> m;
    for (const auto& [script, name] : all) m.emplace(script->source, name);
    return m;
  }();
  auto it = names.find(std::string_view(text));
  return it == names.end() ? "script" : it->second;
}

}  // namespace

struct Network::Site {
  Site(std::int64_t now_us, sim::NodeOptions options, std::int64_t offset)
      : node(now_us, std::move(options)), wall_offset(offset) {}
  sim::Node node;
  std::int64_t wall_offset;
  bool up = true;
  int incarnation = 0;
  std::vector<Wire*> wires;  // every Wire to this node, for pushes and resets
};

Network::Network(World& world, int hosts, std::vector<std::int64_t> node_wall_offsets_us, NetworkSettings settings)
    : world_(world), hosts_(hosts), settings_(settings) {
  for (std::size_t i = 0; i < node_wall_offsets_us.size(); ++i) {
    sim::NodeOptions o;
    o.port = 6379 + static_cast<int>(i);
    o.seed = world.seed() * 16 + i;
    sites_.push_back(std::make_unique<Site>(kEpochUs + world.now() + node_wall_offsets_us[i], o, node_wall_offsets_us[i]));
  }
  links_.resize(static_cast<std::size_t>(hosts_) * sites_.size());
}

Network::~Network() = default;

sim::Node& Network::node(int i) { return sites_[static_cast<std::size_t>(i)]->node; }
bool Network::up(int i) const { return sites_[static_cast<std::size_t>(i)]->up; }

void Network::sync_clock(int node) {
  Site& s = *sites_[static_cast<std::size_t>(node)];
  s.node.set_now(kEpochUs + world_.now() + s.wall_offset);
}

Time Network::arrival(int host, int node, Time io_timeout) {
  const Link& l = link(host, node);
  const Time now = world_.now();
  Rng& rng = world_.rng();
  Time t = now + rng.between(settings_.transit_min, settings_.transit_max);
  if (l.slow_until > now) t += rng.between(0, l.slow_extra);
  if (l.lossy_until > now && rng.below(1000) < static_cast<std::uint64_t>(l.loss_per_mille)) {
    // Lost: TCP sends it again until it gets through, long after the sender gave up on it.
    t += io_timeout + rng.between(0, 2 * kSecond);
  }
  if (l.partitioned_until > now) t = std::max(t, l.partitioned_until + rng.between(settings_.transit_min, settings_.transit_max));
  return t;
}

void Network::partition(int host, int node, Time until) {
  Link& l = link(host, node);
  l.partitioned_until = std::max(l.partitioned_until, until);
  note_fault_end(until);
}

void Network::crash(int node, Time down_for) {
  Site& s = *sites_[static_cast<std::size_t>(node)];
  if (!s.up) return;
  s.up = false;
  ++s.incarnation;
  // The kernel resets the dead server's connections: each client hears of it one transit later.
  for (Wire* w : s.wires) {
    if (w->state_ != Wire::State::kIdle && w->incarnation_ == s.incarnation - 1) {
      const std::uint64_t generation = w->generation_;
      const Time t = w->to_client();
      world_.at(t, w->client_, [h = w->handle_, generation] {
        if (*h) (*h)->reset_by_server(generation, "connection reset by peer (the server went down)");
      }, EventKind::kArrival);
    }
  }
  const Time back = world_.now() + down_for;
  note_fault_end(back);
  world_.at(back, nullptr, [this, node] {
    Site& site = *sites_[static_cast<std::size_t>(node)];
    sync_clock(node);
    site.node.crash();  // starts again now, empty
    site.up = true;
    ++restarts_;
  });
}

void Network::heal() {
  const Time now = world_.now();
  for (auto& l : links_) {
    l.partitioned_until = std::min(l.partitioned_until, now);
    l.slow_until = std::min(l.slow_until, now);
    l.lossy_until = std::min(l.lossy_until, now);
  }
}

std::vector<std::string> Network::operator_delete(int node, const std::vector<std::string>& keys) {
  std::vector<std::string> deleted;
  if (!up(node)) return deleted;
  sync_clock(node);
  sim::Node& n = sites_[static_cast<std::size_t>(node)]->node;
  const sim::Node::ClientId id = n.connect();
  for (const auto& key : keys) {
    const sim::Resp value = n.call(id, {"GET", key});
    ++commands_;
    const sim::Resp del = n.call(id, {"DEL", key});
    if (del.is_int() && del.integer == 1 && value.is_bulk()) deleted.push_back(value.text);
    ++commands_;
  }
  n.disconnect(id);
  return deleted;
}

void Network::rewrite_script(std::string from, std::string to) { rewrites_.emplace_back(std::move(from), std::move(to)); }

sim::Resp Network::run(int node, int host, sim::Node::ClientId client, std::vector<std::string> argv) {
  sync_clock(node);
  ++commands_;
  const std::string what = world_.tracing() ? describe_command(argv) : std::string();
  if (!rewrites_.empty() && argv.size() > 1 && (argv[0] == "EVAL" || argv[0] == "eval")) {
    for (const auto& [from, to] : rewrites_) {
      if (argv[1] == from) argv[1] = to;
    }
  }
  sim::Resp r = sites_[static_cast<std::size_t>(node)]->node.call(client, argv);
  if (world_.tracing()) {
    std::string reply = sim::to_string(r);
    if (reply.size() > 160) reply = reply.substr(0, 160) + "...";
    world_.trace("node" + std::to_string(node), "host" + std::to_string(host) + " " + what + " -> " + reply);
  }
  deliver_pushes(node);
  return r;
}

std::string Network::describe_command(const std::vector<std::string>& argv) const {
  if (argv.size() > 2 && argv[0] == "EVAL") {
    std::string out = script_name(argv[1]);
    const std::size_t keys = static_cast<std::size_t>(std::atoi(argv[2].c_str()));
    for (std::size_t i = 3; i < argv.size(); ++i) {
      std::string a = argv[i];
      if (a.size() > 40) a = a.substr(0, 12) + "..." + a.substr(a.size() - 6);
      out += (i == 3 + keys ? " | " : " ") + a;
    }
    return out;
  }
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

void Network::deliver_pushes(int node) {
  Site& s = *sites_[static_cast<std::size_t>(node)];
  for (Wire* w : s.wires) {
    if (w->state_ != Wire::State::kOpen || w->incarnation_ != s.incarnation || !w->subscriber_) continue;
    auto pushes = s.node.take_pushes(w->server_client_);
    if (pushes.empty()) continue;
    const std::uint64_t generation = w->generation_;
    world_.at(w->to_client(), w->client_, [h = w->handle_, generation, p = std::move(pushes)]() mutable {
      if (*h) (*h)->push_arrived(generation, std::move(p));
    }, EventKind::kArrival);
  }
}

void Network::attach(Wire* w) { sites_[static_cast<std::size_t>(w->node_)]->wires.push_back(w); }

void Network::detach(Wire* w) {
  auto& v = sites_[static_cast<std::size_t>(w->node_)]->wires;
  v.erase(std::remove(v.begin(), v.end(), w), v.end());
}

// ---- Wire ----

Wire::Wire(Network& net, int host, int node, Process* client, WireOptions options)
    : net_(net), host_(host), node_(node), client_(client), options_(options),
      name_("redis node" + std::to_string(node) + ":" + std::to_string(6379 + node)),
      handle_(std::make_shared<Wire*>(this)) {
  net_.attach(this);
}

Wire::~Wire() {
  close(Fault::kCancelled, "closed");
  *handle_ = nullptr;
  net_.detach(this);
}

Time Wire::to_server() {
  up_last_ = std::max(up_last_, net_.arrival(host_, node_, options_.io_timeout));
  return up_last_;
}

Time Wire::to_client() {
  down_last_ = std::max(down_last_, net_.arrival(host_, node_, options_.io_timeout));
  return down_last_;
}

void Wire::changed() {
  if (listener_ != nullptr) net_.world().notify(listener_);
}

WireCallPtr Wire::send(std::vector<std::string> argv) {
  auto call = std::make_shared<WireCall>();
  if (!argv.empty() && (argv[0] == "SUBSCRIBE" || argv[0] == "subscribe")) subscriber_ = true;
  pending_.push_back(Pending{std::move(argv), call, kNever, false});
  if (state_ == State::kIdle) {
    begin_connect();
  } else if (state_ == State::kOpen) {
    transmit(pending_.back());
  }
  return call;
}

void Wire::begin_connect() {
  state_ = State::kConnecting;
  const std::uint64_t generation = ++generation_;
  World& world = net_.world();
  up_last_ = down_last_ = world.now();
  world.at(world.now() + options_.connect_timeout, client_, [h = handle_, generation] {
    Wire* w = *h;
    if (w && w->generation_ == generation && w->state_ == State::kConnecting) {
      w->close(Fault::kTimeout, "connect timed out");
    }
  });
  world.at(to_server(), nullptr, [h = handle_, generation] {
    if (*h) (*h)->connected_at_server(generation);
  });
}

void Wire::connected_at_server(std::uint64_t generation) {
  if (generation != generation_ || state_ != State::kConnecting) return;  // given up: our RST ends it
  Network::Site& s = *net_.sites_[static_cast<std::size_t>(node_)];
  World& world = net_.world();
  if (!s.up) {
    world.at(to_client(), client_, [h = handle_, generation] {
      Wire* w = *h;
      if (w && w->generation_ == generation && w->state_ == State::kConnecting) {
        w->close(Fault::kConnect, "connection refused");
      }
    }, EventKind::kArrival);
    return;
  }
  const sim::Node::ClientId id = s.node.connect();
  const int incarnation = s.incarnation;
  world.at(to_client(), client_, [h = handle_, generation, id, incarnation, &net = net_, node = node_] {
    Wire* w = *h;
    if (w && w->generation_ == generation && w->state_ == State::kConnecting) {
      w->opened(id, incarnation);
    } else if (net.up(node)) {
      net.node(node).disconnect(id);  // the client gave up meanwhile: its RST
    }
  }, EventKind::kArrival);
}

void Wire::opened(sim::Node::ClientId id, int incarnation) {
  state_ = State::kOpen;
  server_client_ = id;
  incarnation_ = incarnation;
  for (auto& p : pending_) {
    if (!p.sent) transmit(p);
  }
}

void Wire::transmit(Pending& p) {
  World& world = net_.world();
  p.sent = true;
  p.deadline = world.now() + options_.io_timeout;
  const std::uint64_t generation = generation_;
  world.at(p.deadline, client_, [h = handle_, generation] {
    if (*h) (*h)->check_deadline(generation);
  });
  // What the server does with it does not depend on this Wire living on: a request the client
  // gave up on still runs when it arrives (TCP delivers what was written).
  world.at(to_server(), nullptr, [h = handle_, generation, argv = p.argv, id = server_client_,
                                  incarnation = incarnation_, &net = net_, node = node_, w_host = host_]() mutable {
    Network::Site& s = *net.sites_[static_cast<std::size_t>(node)];
    if (!s.up || s.incarnation != incarnation) {
      Wire* w = *h;
      if (w && w->generation_ == generation) {
        net.world().at(w->to_client(), w->client_, [h2 = h, generation] {
          if (*h2) (*h2)->reset_by_server(generation, "connection reset by peer");
        }, EventKind::kArrival);
      }
      return;
    }
    if (!s.node.connected(id)) return;  // our FIN got there first: nobody reads it
    sim::Resp reply = net.run(node, w_host, id, std::move(argv));
    Wire* w = *h;
    if (w == nullptr || w->generation_ != generation) return;  // the reply goes to a closed socket
    net.world().at(w->to_client(), w->client_, [h2 = h, generation, r = std::move(reply)]() mutable {
      if (*h2) (*h2)->reply_arrived(generation, std::move(r));
    }, EventKind::kArrival);
  });
}

void Wire::reply_arrived(std::uint64_t generation, sim::Resp reply) {
  if (generation != generation_ || pending_.empty()) return;
  WireCall& c = *pending_.front().call;
  c.state = WireCall::State::kReplied;
  if (reply.is_error()) {
    c.fault = redis::classify_error_reply(reply.text);
    c.error = name_ + ": " + reply.text;
  }
  c.reply = std::move(reply);
  auto call = pending_.front().call;
  pending_.pop_front();
  if (call->on_done) std::exchange(call->on_done, nullptr)(*call);
  changed();
}

void Wire::push_arrived(std::uint64_t generation, std::vector<sim::Resp> pushes) {
  if (generation != generation_) return;
  for (auto& p : pushes) pushes_.push_back(std::move(p));
  changed();
}

std::vector<sim::Resp> Wire::take_pushes() {
  std::vector<sim::Resp> out;
  out.swap(pushes_);
  return out;
}

void Wire::reset_by_server(std::uint64_t generation, const std::string& why) {
  if (generation != generation_ || state_ == State::kIdle) return;
  close(Fault::kClosed, why);
}

void Wire::check_deadline(std::uint64_t generation) {
  if (generation != generation_) return;
  const Time now = net_.world().now();
  for (const auto& p : pending_) {
    if (p.sent && p.deadline <= now) {
      close(Fault::kTimeout, "no reply within io_timeout");
      return;
    }
  }
}

bool Wire::take_failed() {
  const bool f = failed_;
  failed_ = false;
  return f;
}

void Wire::close(Fault fault, const std::string& why) {
  if (state_ == State::kIdle && pending_.empty()) return;
  if (state_ == State::kOpen) {
    // Our FIN, behind whatever we wrote: the server drops the connection (and its
    // subscriptions) when it gets there.
    World& world = net_.world();
    world.at(to_server(), nullptr, [&net = net_, node = node_, id = server_client_, incarnation = incarnation_] {
      if (net.up(node) && net.sites_[static_cast<std::size_t>(node)]->incarnation == incarnation) {
        net.node(node).disconnect(id);
      }
    });
  }
  state_ = State::kIdle;
  ++generation_;
  subscriber_ = false;
  pushes_.clear();
  auto failing = std::move(pending_);
  pending_.clear();
  for (auto& p : failing) {
    p.call->state = WireCall::State::kFailed;
    p.call->fault = fault;
    p.call->error = name_ + ": " + why;
    if (p.call->on_done) std::exchange(p.call->on_done, nullptr)(*p.call);
  }
  if (fault != Fault::kCancelled) {
    failed_ = true;
    last_fault_ = fault;
    last_error_ = name_ + ": " + why;
  }
  changed();
}

}  // namespace redisgo::simulator
