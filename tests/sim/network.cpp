#include "sim/network.h"

#include <algorithm>
#include <climits>
#include <deque>
#include <map>
#include <utility>

#include "redis/reply.h"
#include "util/sha1.h"
#include "util/text.h"

namespace redisgo::sim {

using redis::CallPtr;
using redis::Fault;
using redis::Millis;

namespace {

/// The steady clock's and clock()'s reading at the start.
constexpr std::int64_t kSteadyStartUs = 1'000'000'000;

std::string encode(const Resp& r) {
  switch (r.kind) {
    case Resp::Kind::kNil: return "$-1\r\n";
    case Resp::Kind::kInt: return ":" + std::to_string(r.integer) + "\r\n";
    case Resp::Kind::kStatus: return "+" + r.text + "\r\n";
    case Resp::Kind::kError: return "-" + r.text + "\r\n";
    case Resp::Kind::kBulk: return "$" + std::to_string(r.text.size()) + "\r\n" + r.text + "\r\n";
    case Resp::Kind::kArray: {
      std::string out = "*" + std::to_string(r.items.size()) + "\r\n";
      for (const auto& item : r.items) out += encode(item);
      return out;
    }
  }
  return "$-1\r\n";
}

/// The reply as a socket's bytes would make it: RESP through hiredis's reader.
redis::Reply decode(const Resp& r) {
  redis::ReplyReader reader;
  const std::string bytes = encode(r);
  reader.feed(bytes.data(), bytes.size());
  return redis::Reply(reader.next());
}

/// An argument as the trace shows it: a script (or any long text) by its size and SHA-1.
std::string shown_arg(const std::string& a) {
  if (a.empty()) return "\"\"";
  if (a.size() > 48) return "<" + std::to_string(a.size()) + " bytes " + sha1_hex(a).substr(0, 8) + ">";
  return shown_text(a);
}

std::string shown_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + shown_arg(a);
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

class SimLink;

}  // namespace

struct Network::State {
  struct Route {
    Node* node = nullptr;
    Millis latency{1};
    bool down = false;
  };
  /// The node's end of one connection of a link.
  struct Session {
    Node* node = nullptr;
    Node::ClientId client = 0;  // 0: not connected yet
    bool failed = false;        // refused or reset: what is still on the wire is dropped
    std::int64_t sent_at = 0;   // the last packet towards the node arrives then (TCP keeps order)
    std::int64_t back_at = 0;   // the last packet back from it
  };
  struct Packet {
    enum class Kind { kCommand, kReply, kHangUp } kind = Kind::kCommand;
    std::uint64_t link = 0;
    std::uint64_t session = 0;
    std::string at;  // the endpoint, "host:port"
    std::vector<std::string> argv;
    Resp reply;
    Fault fault = Fault::kNone;  // a reply with a fault: the connection failed instead
    std::string why;
  };

  class SimClock final : public Clock {
   public:
    explicit SimClock(const State& s) : s_(s) {}
    time_point now() const override { return time_point(std::chrono::microseconds(s_.steady_us())); }

   private:
    const State& s_;
  };

  explicit State(std::int64_t start) : start_us(start), now_us(start), clock(*this) {}

  std::int64_t steady_us() const { return now_us - start_us + kSteadyStartUs; }
  std::string stamp() const {
    const std::int64_t us = now_us - start_us;
    std::string frac = std::to_string(us % 1000);
    return std::to_string(us / 1000) + "." + std::string(3 - frac.size(), '0') + frac + "ms ";
  }
  Route* route(const std::string& at) {
    auto it = routes.find(at);
    return it == routes.end() ? nullptr : &it->second;
  }
  Millis latency(const std::string& at) {
    const Route* r = route(at);
    return r ? r->latency : Millis(1);
  }
  /// Sends `p` on its connection: it arrives `after` from now, never before what went ahead
  /// of it the same way (a change of latency does not reorder a connection).
  void post(Millis after, Packet p) {
    std::int64_t at = now_us + std::chrono::duration_cast<std::chrono::microseconds>(after).count();
    auto it = sessions.find(p.session);
    if (it != sessions.end()) {
      std::int64_t& last = p.kind == Packet::Kind::kReply ? it->second.back_at : it->second.sent_at;
      at = last = std::max(at, last);
    }
    packets.emplace(std::make_pair(at, next_seq++), std::move(p));
  }
  std::int64_t next_packet() const { return packets.empty() ? INT64_MAX : packets.begin()->first.first; }

  /// Delivers every packet due by `t`, each at its own time; then the time is `t`.
  void run_until(std::int64_t t) {
    while (!packets.empty() && packets.begin()->first.first <= t) {
      auto node = packets.extract(packets.begin());
      now_us = std::max(now_us, node.key().first);
      deliver(node.mapped());
    }
    now_us = std::max(now_us, t);
  }
  void deliver(Packet& p);
  void execute(Packet& p);

  std::int64_t start_us;
  std::int64_t now_us;
  SimClock clock;
  std::map<std::string, Route> routes;
  std::map<std::uint64_t, Session> sessions;
  std::map<std::pair<std::int64_t, std::uint64_t>, Packet> packets;  // by (time, order sent)
  std::map<std::uint64_t, SimLink*> links;
  std::uint64_t next_seq = 1;
  std::uint64_t next_link = 1;
  std::uint64_t next_session = 1;
  std::vector<std::string> trace;
};

namespace {

class SimLink final : public redis::Link {
 public:
  using State = Network::State;

  SimLink(State& net, std::uint64_t id, redis::ConnectionOptions options)
      : net_(net), id_(id), options_(std::move(options)), at_(options_.endpoint.str()) {
    options_.connect_timeout = std::max(options_.connect_timeout, Millis(1));
    options_.io_timeout = std::max(options_.io_timeout, Millis(1));
    net_.links[id_] = this;
  }
  ~SimLink() override {
    net_.links.erase(id_);
    hang_up();
  }

  CallPtr send(std::vector<std::string> argv) override { return submit(std::move(argv), nullptr, Millis(0)); }
  CallPtr send(std::vector<std::string> argv, Millis blocks) override {
    return submit(std::move(argv), nullptr, std::max(Millis(0), blocks));
  }
  CallPtr eval(const redis::Script& script, const std::vector<std::string>& keys,
               const std::vector<std::string>& args) override {
    std::vector<std::string> argv{"EVAL", "", std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return submit(std::move(argv), &script, Millis(0));
  }
  bool busy() const noexcept override { return !pending_.empty(); }
  bool unsent() const noexcept override { return false; }
  bool connected() const noexcept override { return session_ != 0; }
  std::string describe() const override { return "redis " + at_; }
  const redis::ConnectionOptions& options() const noexcept override { return options_; }
  const redis::Endpoint& current() const noexcept override { return options_.endpoint; }
  std::string peer_info() const override { return {}; }

  std::uint64_t session() const noexcept { return session_; }
  std::int64_t next_deadline() const noexcept {
    std::int64_t t = INT64_MAX;
    for (const auto& p : pending_) t = std::min(t, p.deadline_us);
    return t;
  }

  /// A reply (or the connection's failure) has come back.
  void answer(State::Packet& packet) {
    if (packet.fault != Fault::kNone) return close(packet.fault, packet.why, true);
    if (pending_.empty()) return close(Fault::kProtocol, "unexpected reply: nothing was asked", true);
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    open_ = true;
    redis::Reply reply = decode(packet.reply);
    const bool error = reply.is_error();
    const std::string text = error ? reply.str() : std::string();
    if (p.script && !error && !p.by_sha) loaded_.push_back(p.script->source);
    const Fault fault = error ? redis::classify_error_reply(text) : Fault::kNone;
    if (error && !starts_with(text, "MOVED ") && !starts_with(text, "ASK ")) report(fault);
    net_.trace.push_back(net_.stamp() + tag() + " < " + to_string(packet.reply));
    replied(*p.call, std::move(reply), fault, error ? describe() + ": " + shown_text(text) : std::string());
    if (error && starts_with(text, "NOSCRIPT")) {
      close(Fault::kReply, "the server lost the scripts loaded on this connection (SCRIPT FLUSH?); reconnecting", false);
    }
  }

  /// A deadline passed: the connection is given up, as AsyncConnection::check_deadlines.
  void check(std::int64_t now_us) {
    if (next_deadline() <= now_us) close(Fault::kTimeout, "no reply within " + std::to_string(options_.io_timeout.count()) + " ms", true);
  }

  /// poll_once: an idle connection the server closed is noticed (and closed: the next
  /// command opens a fresh one).
  void look() {
    if (session_ == 0 || !pending_.empty()) return;
    const auto it = net_.sessions.find(session_);
    const State::Route* r = net_.route(at_);
    const bool gone = it == net_.sessions.end() || it->second.failed || !r || r->down ||
                      (it->second.node && !it->second.node->connected(it->second.client));
    if (gone) close(Fault::kClosed, "connection closed by the server", true);
  }

 private:
  struct Pending {
    CallPtr call;
    std::int64_t deadline_us;
    const redis::Script* script;
    bool by_sha;
  };

  std::string tag() const { return at_ + " #" + std::to_string(id_) + "." + std::to_string(session_); }

  CallPtr submit(std::vector<std::string> argv, const redis::Script* script, Millis blocks) {
    auto call = std::make_shared<redis::Call>();
    if (session_ == 0) {
      session_ = net_.next_session++;
      net_.sessions[session_] = {};
      open_ = false;
      loaded_.clear();
    }
    Millis allowed = options_.io_timeout + blocks + (open_ ? Millis(0) : options_.connect_timeout);
    const bool by_sha = script && std::find(loaded_.begin(), loaded_.end(), script->source) != loaded_.end();
    if (script) {
      argv[0] = by_sha ? "EVALSHA" : "EVAL";
      argv[1] = by_sha ? script->sha() : std::string(script->source);
    }
    pending_.push_back({call, net_.now_us + std::chrono::duration_cast<std::chrono::microseconds>(allowed).count(),
                        script, by_sha});
    State::Packet p;
    p.link = id_;
    p.session = session_;
    p.at = at_;
    p.argv = std::move(argv);
    net_.post(net_.latency(at_), std::move(p));
    return call;
  }

  /// Fails every call with `fault` and drops the connection (told to on_fault when `tell`).
  void close(Fault fault, const std::string& why, bool tell) {
    const std::string message = describe() + ": " + why;
    net_.trace.push_back(net_.stamp() + tag() + " closed (" + redis::to_string(fault) + "): " + why);
    auto dropped = std::exchange(pending_, {});
    hang_up();
    if (tell) report(fault);
    for (auto& p : dropped) failed(*p.call, fault, message);
  }

  /// The node drops the connection once what was sent on it has arrived.
  void hang_up() {
    if (session_ == 0) return;
    State::Packet p;
    p.kind = State::Packet::Kind::kHangUp;
    p.session = std::exchange(session_, 0);
    p.at = at_;
    net_.post(net_.latency(at_), std::move(p));
    loaded_.clear();
    open_ = false;
  }

  void report(Fault fault) {
    if (fault != Fault::kNone && fault != Fault::kCancelled && options_.on_fault) options_.on_fault(fault);
  }

  State& net_;
  std::uint64_t id_;
  redis::ConnectionOptions options_;
  std::string at_;
  std::uint64_t session_ = 0;  // 0: no connection
  bool open_ = false;          // a reply came on this connection
  std::deque<Pending> pending_;
  std::vector<std::string_view> loaded_;  // scripts an EVAL ran on this connection
};

SimLink* sim_link(redis::Link* l) { return dynamic_cast<SimLink*>(l); }

}  // namespace

void Network::State::execute(Packet& p) {
  auto it = sessions.find(p.session);
  if (it == sessions.end() || it->second.failed) return;  // its failure was told already
  Session& s = it->second;
  Route* r = route(p.at);
  Packet back;
  back.kind = Packet::Kind::kReply;
  back.link = p.link;
  back.session = p.session;
  back.at = p.at;
  std::string line = stamp() + p.at + " #" + std::to_string(p.link) + "." + std::to_string(p.session) + " > " +
                     shown_argv(p.argv);
  if (!r || r->down) {
    back.fault = s.client ? Fault::kClosed : Fault::kConnect;
    back.why = s.client ? "connection reset by peer" : "connect to " + p.at + ": Connection refused (errno 111)";
    s.failed = true;
  } else {
    if (!s.client) {
      s.node = r->node;
      s.client = r->node->connect();
    }
    s.node->set_now(now_us);
    back.reply = s.node->call(s.client, p.argv);
    if (back.reply.is_error() && starts_with(back.reply.text, "SIMCLOSED")) {
      back.fault = Fault::kClosed;
      back.why = "connection closed by the server";
      s.failed = true;
    }
  }
  if (back.fault != Fault::kNone) line += " (" + back.why + ")";
  trace.push_back(std::move(line));
  post(latency(p.at), std::move(back));
}

void Network::State::deliver(Packet& p) {
  switch (p.kind) {
    case Packet::Kind::kCommand: return execute(p);
    case Packet::Kind::kReply: {
      auto it = links.find(p.link);
      if (it == links.end() || it->second->session() != p.session) return;  // that connection is gone
      return it->second->answer(p);
    }
    case Packet::Kind::kHangUp: {
      auto it = sessions.find(p.session);
      if (it == sessions.end()) return;
      if (it->second.node && it->second.client) it->second.node->disconnect(it->second.client);
      sessions.erase(it);
      return;
    }
  }
}

Network::Network(std::int64_t start_us) : state_(std::make_unique<State>(start_us)) {}
Network::~Network() = default;

void Network::serve(const redis::Endpoint& at, Node& node, Millis latency) {
  state_->routes[at.str()] = State::Route{&node, latency, false};
}

void Network::set_latency(const redis::Endpoint& at, Millis latency) {
  if (auto* r = state_->route(at.str())) r->latency = latency;
}

void Network::set_down(const redis::Endpoint& at, bool down) {
  if (auto* r = state_->route(at.str())) r->down = down;
  state_->trace.push_back(state_->stamp() + at.str() + (down ? " down" : " up"));
}

void Network::crash(const redis::Endpoint& at) {
  auto* r = state_->route(at.str());
  if (!r) return;
  r->node->set_now(state_->now_us);
  r->node->crash();
  state_->trace.push_back(state_->stamp() + at.str() + " crashed");
}

std::int64_t Network::now_us() const noexcept { return state_->now_us; }

void Network::advance(Millis d) {
  state_->run_until(state_->now_us + std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

const Clock& Network::clock() const noexcept { return state_->clock; }
const std::vector<std::string>& Network::trace() const noexcept { return state_->trace; }
void Network::note(const std::string& line) { state_->trace.push_back(state_->stamp() + line); }

std::unique_ptr<redis::Link> Network::link(redis::ConnectionOptions options) {
  return std::make_unique<SimLink>(*state_, state_->next_link++, std::move(options));
}

redis::DriveEnd Network::drive(const std::vector<redis::Link*>& links, const std::function<bool()>& done,
                               const redis::DriveOptions& options) {
  // The caller's deadline on the simulated wall time (rounded up: never before it).
  std::int64_t limit = INT64_MAX;
  if (options.deadline != redis::SteadyClock::time_point::max()) {
    const auto us = std::chrono::ceil<std::chrono::microseconds>(options.deadline.time_since_epoch()).count();
    limit = us - kSteadyStartUs + state_->start_us;
  }
  bool looked = false;  // a deadline already past still gets one look, as with sockets
  for (;;) {
    if (done && done()) return redis::DriveEnd::kDone;
    if (std::none_of(links.begin(), links.end(), [](redis::Link* l) { return l && l->busy(); })) {
      return redis::DriveEnd::kIdle;
    }
    if (state_->now_us >= limit && looked) return redis::DriveEnd::kDeadline;
    std::int64_t t = std::min(state_->next_packet(), limit);
    for (auto* l : links) {
      if (auto* s = sim_link(l)) t = std::min(t, s->next_deadline());
    }
    if (t == INT64_MAX) return redis::DriveEnd::kIdle;  // nothing will ever happen
    state_->run_until(std::max(t, state_->now_us));
    // Deadlines after delivery: a reply due at the deadline's instant still counts.
    for (auto* l : links) {
      if (auto* s = sim_link(l)) s->check(state_->now_us);
    }
    looked = true;
  }
}

void Network::poll_once(const std::vector<redis::Link*>& links) noexcept {
  state_->run_until(state_->now_us);
  for (auto* l : links) {
    if (auto* s = sim_link(l)) {
      s->look();
      s->check(state_->now_us);
    }
  }
}

redis::SteadyClock::time_point Network::now() const noexcept {
  return redis::SteadyClock::time_point(std::chrono::microseconds(state_->steady_us()));
}

std::int64_t Network::wall_us() const noexcept { return state_->now_us; }

}  // namespace redisgo::sim
