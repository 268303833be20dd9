#include "lock/redlock.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "lock/scripts.h"
#include "redis/topology.h"

namespace redisgo::lock {
namespace {

using redis::Call;
using redis::CallPtr;
using redis::Fault;
using redis::SteadyClock;

/// A failure that says the node itself is unusable (as opposed to an error reply from
/// a live server): it earns the node a retry backoff.
bool node_unusable(const Call& c) {
  if (c.state() == Call::State::kFailed) return c.fault() != Fault::kCancelled;
  return c.state() == Call::State::kReplied && c.fault() == Fault::kAuth;
}

constexpr int kMaxRedirects = 5;

/// "MOVED 1234 10.0.0.2:7001" / "ASK 1234 10.0.0.2:7001" -> (is ASK, where).
std::optional<std::pair<bool, redis::Endpoint>> redirect_of(const Call& c) {
  if (c.state() != Call::State::kReplied || !c.reply().is_error()) return std::nullopt;
  const std::string text = c.reply().str();
  const bool ask = text.rfind("ASK ", 0) == 0;
  if (!ask && text.rfind("MOVED ", 0) != 0) return std::nullopt;
  auto to = redis::Endpoint::parse(text.substr(text.rfind(' ') + 1));
  if (!to) return std::nullopt;
  return std::make_pair(ask, *to);
}

}  // namespace

RedlockBackend::Node::Node(redis::Network& network, redis::ConnectionOptions options)
    : conn(network.link(std::move(options))),
      name(conn->options().locator ? conn->options().locator->name() : conn->options().endpoint.str()) {}

Clock::time_point validity_deadline(Clock::time_point start, Millis ttl, double drift_factor, Millis drift_fixed) {
  const auto drift = std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double, std::milli>(static_cast<double>(ttl.count()) * drift_factor)) +
                     drift_fixed;
  return start + ttl - drift;
}

Millis next_node_backoff(Millis previous, Millis initial, Millis max) {
  if (previous <= Millis(0)) return std::min(initial, max);
  return std::min(previous * 2, max);
}

RedlockBackend::RedlockBackend(LeaseOptions options, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      network_(options_.network ? *options_.network : redis::sockets()),
      keys_(LeaseKeys::derive(options_.key)) {
  if (options_.nodes.empty()) throw std::invalid_argument("lease: no Redis node");
  if (options_.ttl <= Millis(0)) throw std::invalid_argument("lease: ttl must be positive");
  ttl_arg_ = std::to_string(options_.ttl.count());
  fence_ttl_arg_ = std::to_string(fence_ttl(options_.ttl).count());
  window_arg_ = std::to_string(std::max<long long>(1, options_.turn_window.count()));
  line_ttl_arg_ = fence_ttl_arg_;  // docs/DESIGN.md "Keys": the line lives as long as the fence
  if (options_.limit < 1) throw std::invalid_argument("lease: limit must be at least 1");
  if (options_.lease_id.empty()) options_.lease_id = options_.holder;  // until acquire() makes one
  for (int i = 0; i < options_.limit; ++i) slot_keys_.push_back(keys_.slot(i));
  select_slot(options_.slot);
  // Waiters start their rotation at different slots, so that no slot is everyone's
  // first choice (and none is starved when others free up).
  rotation_ = std::hash<std::string>{}(options_.holder);
  nodes_.reserve(options_.nodes.size());
  for (const auto& o : options_.nodes) nodes_.emplace_back(network_, o);
}

void RedlockBackend::select_slot(int slot) { held_ = std::clamp(slot, 0, static_cast<int>(slot_keys_.size()) - 1); }

std::vector<redis::Link*> RedlockBackend::connections() {
  std::vector<redis::Link*> out;
  out.reserve(nodes_.size());
  for (auto& n : nodes_) {
    out.push_back(n.conn.get());
    if (n.detour) out.push_back(n.detour.get());
  }
  return out;
}

void RedlockBackend::follow_redirects(std::vector<CallPtr>& calls) {
  for (std::size_t i = 0; i < calls.size() && i < nodes_.size(); ++i) {
    const CallPtr c = calls[i];
    if (!c || !c->done() || !nodes_[i].conn->options().locator) continue;
    auto it = sent_.find(c.get());
    if (it == sent_.end()) continue;
    auto redirect = redirect_of(*c);
    if (!redirect || it->second.redirects >= kMaxRedirects) continue;
    Sent again = it->second;
    sent_.erase(it);
    ++again.redirects;
    Node& node = nodes_[i];
    CallPtr next;
    if (redirect->first) {
      // ASK: this one command goes to the importing node, after ASKING, on a connection
      // of its own; the slot's owner (and our main connection) stay as they are.
      if (!node.detour || node.detour->options().endpoint != redirect->second) {
        redis::ConnectionOptions o = node.conn->options();
        o.locator.reset();
        o.endpoint = redirect->second;
        node.detour = network_.link(std::move(o));
      }
      node.detour->send({"ASKING"});
      next = node.detour->eval(*again.script, again.keys, again.args);
    } else {
      // MOVED: the connection already told the locator; eval() reconnects to the owner.
      next = node.conn->eval(*again.script, again.keys, again.args);
    }
    node.inflight.push_back(next);
    sent_.emplace(next.get(), std::move(again));
    calls[i] = next;
  }
}

std::vector<CallPtr> RedlockBackend::send(const redis::Script& script, const std::vector<std::string>& keys,
                                          const std::vector<std::string>& args, const std::vector<bool>& only,
                                          Send how) {
  return send_each(script, keys, [&](std::size_t) { return args; }, only, how);
}

std::vector<CallPtr> RedlockBackend::send_each(const redis::Script& script, const std::vector<std::string>& keys,
                                               const std::function<std::vector<std::string>(std::size_t)>& args_of,
                                               const std::vector<bool>& only, Send how) {
  const auto now = network_.now();
  std::vector<CallPtr> calls(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    if (!only.empty() && !only[i]) continue;
    if (how == Send::kRespectBackoff && node.backoff > Millis(0) && now < node.retry_at) continue;
    auto args = args_of(i);
    calls[i] = node.conn->eval(script, keys, args);
    node.inflight.push_back(calls[i]);
    if (node.conn->options().locator) sent_.emplace(calls[i].get(), Sent{&script, keys, std::move(args)});
  }
  return calls;
}

bool RedlockBackend::wait(std::vector<CallPtr>& calls, const std::function<bool()>& decided, bool cancellable) {
  redis::DriveOptions o;
  o.cancel_fd = cancellable ? options_.cancel_fd : -1;
  if (cancellable && attempt_bound_ != Clock::time_point::max()) {
    // The bound is on the daemon's clock; the connections keep theirs.
    const auto left = std::max(Clock::duration(0), attempt_bound_ - clock_.now());
    o.deadline = network_.now() + std::chrono::duration_cast<SteadyClock::duration>(left);
  }
  o.heartbeat = options_.heartbeat;
  o.heartbeat_every = options_.heartbeat_every;
  auto done = [&] {
    if (!sent_.empty()) follow_redirects(calls);
    if (decided && decided()) return true;
    return std::none_of(calls.begin(), calls.end(), [](const CallPtr& c) { return c && !c->done(); });
  };
  return network_.drive(connections(), done, o) != redis::DriveEnd::kCancelled;
}

void RedlockBackend::sweep() noexcept {
  // One look at every socket: replies to earlier rounds that arrived meanwhile are read
  // before any deadline is judged, and an idle connection the server closed is noticed
  // before a request is sent on it.
  network_.poll_once(connections());
  sent_.clear();  // redirects are followed within a wait() only
  const auto now = network_.now();
  for (auto& node : nodes_) {
    CallPtr failure;  // one failure per sweep: a broken connection fails all its calls at once
    bool answered = false;
    auto& inflight = node.inflight;
    for (const auto& c : inflight) {
      if (!c->done()) continue;
      if (node_unusable(*c)) {
        failure = c;
      } else if (c->state() == Call::State::kReplied) {
        answered = true;
      }
    }
    inflight.erase(std::remove_if(inflight.begin(), inflight.end(), [](const CallPtr& c) { return c->done(); }),
                   inflight.end());
    if (failure) {
      node.backoff = next_node_backoff(node.backoff, options_.node_retry_initial, options_.node_retry_max);
      node.retry_at = now + node.backoff;
      node.last_fault = failure->fault();
      node.last_error = failure->error();
    } else if (answered) {
      node.backoff = Millis(0);
      node.retry_at = {};
    }
  }
}

NodeError RedlockBackend::error_of(std::size_t i, const CallPtr& call) const {
  const Node& node = nodes_[i];
  if (!call) {
    // Skipped for its retry backoff: the cause is the failure that put it there (the
    // message carries no countdown, so repeats of one cause read the same).
    return {node.name, node.last_fault, node.last_error + " (not retried until its retry time)"};
  }
  if (!call->done()) return {node.name, Fault::kTimeout, node.conn->describe() + ": no reply yet"};
  // Redis does not say which command of a script the ACL refused: `check` tries each one.
  if (call->fault() == Fault::kAuth && call->error().find("executing the script can't") != std::string::npos) {
    return {node.name, call->fault(), call->error() + " (`redisgo_task check` names the right the ACL user lacks)"};
  }
  return {node.name, call->fault(), call->error()};
}

NodeError RedlockBackend::unanswered_at_bound(std::size_t i) const {
  const Node& node = nodes_[i];
  if (redis::is_refusal(node.last_fault)) return {node.name, node.last_fault, node.last_error + " (and no answer since)"};
  return {node.name, Fault::kTimeout, node.conn->describe() + ": no reply within the wait timeout"};
}

Clock::time_point RedlockBackend::quorum_available_at() const {
  const auto now = network_.now();
  std::vector<SteadyClock::time_point> at;
  at.reserve(nodes_.size());
  for (const auto& n : nodes_) at.push_back(n.backoff > Millis(0) && n.retry_at > now ? n.retry_at : now);
  std::sort(at.begin(), at.end());
  const auto t = at[static_cast<std::size_t>(quorum() - 1)];
  if (t <= now) return {};
  return clock_.now() + std::chrono::duration_cast<Clock::duration>(t - now);
}

void RedlockBackend::settle(Millis limit) noexcept {
  try {
    // Until every request queued on an open connection (an undo, a release) has been
    // written: Redis runs what it received even if we close right after. Replies are not
    // waited for, and connections still being set up are abandoned (what they hold never
    // reached a server).
    redis::DriveOptions o;
    o.deadline = network_.now() + limit;
    o.cancel_fd = options_.cancel_fd;
    auto conns = connections();
    network_.drive(conns, [&] { return std::none_of(conns.begin(), conns.end(), [](auto* c) { return c->unsent(); }); }, o);
  } catch (...) {
  }
}

std::vector<CallPtr> RedlockBackend::round(const redis::Script& script, const std::vector<std::string>& keys,
                                           const std::vector<std::string>& args, bool cancellable) {
  sweep();
  auto calls = send(script, keys, args, {}, Send::kAlways);
  wait(calls, nullptr, cancellable);
  sweep();
  return calls;
}

std::vector<CallPtr> RedlockBackend::quorum_round(const redis::Script& script, const std::vector<std::string>& keys,
                                                  const std::vector<std::string>& args, bool cancellable) {
  sweep();
  auto calls = send(script, keys, args, {}, Send::kAlways);
  const auto quorum_answered = [&] {
    const auto answered = std::count_if(calls.begin(), calls.end(), [](const CallPtr& c) {
      return c && c->state() == Call::State::kReplied;
    });
    return answered >= quorum();
  };
  wait(calls, quorum_answered, cancellable);
  sweep();
  return calls;
}

}  // namespace redisgo::lock
