#include "lock/redlock.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "lock/fencing.h"
#include "lock/replies.h"
#include "redis/poller.h"
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

RedlockBackend::Node::Node(redis::ConnectionOptions options)
    : conn(std::move(options)),
      name(conn.options().locator ? conn.options().locator->name() : conn.options().endpoint.str()) {}

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
    : options_(std::move(options)), clock_(clock), keys_(LeaseKeys::derive(options_.key)) {
  if (options_.nodes.empty()) throw std::invalid_argument("lease: no Redis node");
  if (options_.ttl <= Millis(0)) throw std::invalid_argument("lease: ttl must be positive");
  ttl_arg_ = std::to_string(options_.ttl.count());
  fence_ttl_arg_ = std::to_string(fence_ttl(options_.ttl).count());
  if (options_.limit < 1) throw std::invalid_argument("lease: limit must be at least 1");
  for (int i = 0; i < options_.limit; ++i) slot_keys_.push_back(keys_.slot(i));
  select_slot(options_.slot);
  // Waiters start their rotation at different slots, so that no slot is everyone's
  // first choice (and none is starved when others free up).
  rotation_ = std::hash<std::string>{}(options_.holder);
  nodes_.reserve(options_.nodes.size());
  for (const auto& o : options_.nodes) nodes_.emplace_back(o);
}

void RedlockBackend::select_slot(int slot) { held_ = std::clamp(slot, 0, static_cast<int>(slot_keys_.size()) - 1); }

std::vector<redis::AsyncConnection*> RedlockBackend::connections() {
  std::vector<redis::AsyncConnection*> out;
  out.reserve(nodes_.size());
  for (auto& n : nodes_) {
    out.push_back(&n.conn);
    if (n.detour) out.push_back(n.detour.get());
  }
  return out;
}

void RedlockBackend::follow_redirects(std::vector<CallPtr>& calls) {
  for (std::size_t i = 0; i < calls.size() && i < nodes_.size(); ++i) {
    const CallPtr c = calls[i];
    if (!c || !c->done() || !nodes_[i].conn.options().locator) continue;
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
        redis::ConnectionOptions o = node.conn.options();
        o.locator.reset();
        o.endpoint = redirect->second;
        node.detour = std::make_unique<redis::AsyncConnection>(std::move(o));
      }
      node.detour->send({"ASKING"});
      next = node.detour->eval(*again.script, again.keys, again.args);
    } else {
      // MOVED: the connection already told the locator; eval() reconnects to the owner.
      next = node.conn.eval(*again.script, again.keys, again.args);
    }
    node.inflight.push_back(next);
    sent_.emplace(next.get(), std::move(again));
    calls[i] = next;
  }
}

std::vector<CallPtr> RedlockBackend::send(const redis::Script& script, const std::vector<std::string>& keys,
                                          const std::vector<std::string>& args, const std::vector<bool>& only,
                                          Send how) {
  const auto now = SteadyClock::now();
  std::vector<CallPtr> calls(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& node = nodes_[i];
    if (!only.empty() && !only[i]) continue;
    if (how == Send::kRespectBackoff && node.backoff > Millis(0) && now < node.retry_at) continue;
    calls[i] = node.conn.eval(script, keys, args);
    node.inflight.push_back(calls[i]);
    if (node.conn.options().locator) sent_.emplace(calls[i].get(), Sent{&script, keys, args});
  }
  return calls;
}

bool RedlockBackend::wait(std::vector<CallPtr>& calls, const std::function<bool()>& decided, bool cancellable) {
  redis::DriveOptions o;
  o.cancel_fd = cancellable ? options_.cancel_fd : -1;
  o.heartbeat = options_.heartbeat;
  o.heartbeat_every = options_.heartbeat_every;
  auto done = [&] {
    if (!sent_.empty()) follow_redirects(calls);
    if (decided && decided()) return true;
    return std::none_of(calls.begin(), calls.end(), [](const CallPtr& c) { return c && !c->done(); });
  };
  return redis::drive(connections(), done, o) != redis::DriveEnd::kCancelled;
}

void RedlockBackend::sweep() noexcept {
  // One look at every socket: replies to earlier rounds that arrived meanwhile are read
  // before any deadline is judged, and an idle connection the server closed is noticed
  // before a request is sent on it.
  redis::poll_once(connections());
  sent_.clear();  // redirects are followed within a wait() only
  const auto now = SteadyClock::now();
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
  if (!call->done()) return {node.name, Fault::kTimeout, node.conn.describe() + ": no reply yet"};
  return {node.name, call->fault(), call->error()};
}

Clock::time_point RedlockBackend::quorum_available_at() const {
  const auto now = SteadyClock::now();
  std::vector<SteadyClock::time_point> at;
  at.reserve(nodes_.size());
  for (const auto& n : nodes_) at.push_back(n.backoff > Millis(0) && n.retry_at > now ? n.retry_at : now);
  std::sort(at.begin(), at.end());
  const auto t = at[static_cast<std::size_t>(quorum() - 1)];
  if (t <= now) return {};
  return clock_.now() + std::chrono::duration_cast<Clock::duration>(t - now);
}

void RedlockBackend::undo(const std::vector<CallPtr>& acquire_calls, const std::vector<std::string>& taken) {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto& c = acquire_calls[i];
    if (!c) continue;
    const bool in_flight = !c->done();
    if (taken[i].empty() && !in_flight) continue;
    // In flight: the undo is pipelined behind the acquire on the same connection. A node
    // whose connection is gone never saw the SET or can no longer be reached cheaply.
    if (!nodes_[i].conn.connected()) continue;
    if (!in_flight) {
      nodes_[i].inflight.push_back(nodes_[i].conn.eval(kUndo, {taken[i]}, {options_.holder}));
      continue;
    }
    for (const auto& key : slot_keys_) {
      nodes_[i].inflight.push_back(nodes_[i].conn.eval(kUndo, {key}, {options_.holder}));
    }
  }
}

Acquisition RedlockBackend::acquire() {
  sweep();
  const std::size_t n = nodes_.size();
  const int q = quorum();
  Acquisition a;
  a.node_tokens.assign(n, 0);
  const auto start = clock_.now();
  a.started = start;
  // One slot: the plain lease script. A semaphore: the slot script, with the slot keys in
  // this attempt's order (the same on every node, so that they agree on the first free one).
  const bool semaphore = slot_keys_.size() > 1;
  std::vector<std::string> acquire_keys{keys_.key, keys_.fence};
  if (semaphore) {
    acquire_keys = {keys_.fence};
    const std::size_t first = rotation_++ % slot_keys_.size();
    for (std::size_t j = 0; j < slot_keys_.size(); ++j) acquire_keys.push_back(slot_keys_[(first + j) % slot_keys_.size()]);
  }
  auto calls = send(semaphore ? kAcquireSlot : kAcquire, acquire_keys,
                    {options_.holder, ttl_arg_, fence_ttl_arg_, std::to_string(options_.restart_guard.count())}, {},
                    Send::kRespectBackoff);

  auto reply_of = [&](std::size_t i) {
    const auto& c = calls[i];
    return c && c->ok() ? parse_acquire_reply(c->reply().get()) : AcquireReply{};
  };
  // The slot node i granted, or -1.
  auto granted_slot = [&](std::size_t i) -> int {
    auto r = reply_of(i);
    if (r.kind != AcquireReply::Kind::kGranted) return -1;
    if (!semaphore) return 0;
    auto it = std::find(slot_keys_.begin(), slot_keys_.end(), r.slot_key);
    return it == slot_keys_.end() ? -1 : static_cast<int>(it - slot_keys_.begin());
  };
  // The slot most nodes granted (the lowest on a tie) and how many granted it.
  auto leading_slot = [&] {
    std::vector<int> votes(slot_keys_.size(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (calls[i] && calls[i]->done()) {
        if (int s = granted_slot(i); s >= 0) ++votes[static_cast<std::size_t>(s)];
      }
    }
    auto best = std::max_element(votes.begin(), votes.end());
    return std::make_pair(static_cast<int>(best - votes.begin()), *best);
  };
  auto decided = [&] {
    int pending = 0;
    for (std::size_t i = 0; i < n; ++i) pending += calls[i] && !calls[i]->done() ? 1 : 0;
    const int yes = leading_slot().second;
    return yes >= q || yes + pending < q;
  };
  a.cancelled = !wait(calls, decided, true);
  sweep();

  const int slot = leading_slot().first;
  std::vector<bool> granted(n, false);
  std::vector<std::string> taken(n);  // per node: the slot key it gave us, if any
  std::map<std::string, std::vector<std::int64_t>> busy_ttls;  // holder -> its nodes' PTTLs
  // Per node: it holds a key of ours that this attempt did not set, an earlier attempt's
  // SET that ran late (the node was paused past our timeout, so its undo could not
  // follow), or a release that did not reach it. No holder to wait for: undone below.
  std::vector<bool> leftover(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& c = calls[i];
    if (!c || !c->done() || !c->ok()) {
      if (!c || c->done()) a.errors.push_back(error_of(i, c));
      continue;
    }
    const auto r = reply_of(i);
    if (r.kind != AcquireReply::Kind::kInvalid) a.answered.push_back(nodes_[i].name);
    switch (r.kind) {
      case AcquireReply::Kind::kGranted:
        if (granted_slot(i) != slot) {
          // A semaphore whose nodes disagreed on the free slot: this node's is undone.
          taken[i] = semaphore && granted_slot(i) >= 0 ? r.slot_key : "";
          if (semaphore && granted_slot(i) < 0) {
            a.errors.push_back({nodes_[i].name, Fault::kProtocol,
                                nodes_[i].conn.describe() + ": the acquire script granted an unknown slot"});
          }
          break;
        }
        a.node_tokens[i] = r.token;
        if (r.unguarded) a.unguarded.push_back(nodes_[i].name);
        granted[i] = true;
        taken[i] = slot_keys_[static_cast<std::size_t>(slot)];
        ++a.votes;
        break;
      case AcquireReply::Kind::kBusy:
        if (r.holder == options_.holder && !holding_) {
          leftover[i] = true;
          break;
        }
        ++a.busy;
        busy_ttls[r.holder].push_back(r.pttl_ms);
        if (a.holder.empty()) a.holder = r.holder;
        if (options_.restart_guard > Millis(0) && r.pttl_ms > options_.restart_guard.count() &&
            a.longer_lease_ms < r.pttl_ms && is_daemon_holder(r.holder)) {
          a.longer_lease_ms = r.pttl_ms;
        }
        break;
      case AcquireReply::Kind::kGuarded:
        a.guarded.push_back({nodes_[i].name, r.guard_ms});
        break;
      case AcquireReply::Kind::kInvalid:
        if (r.set_key) taken[i] = semaphore ? r.slot_key : keys_.key;  // we may hold it there: the undo covers it
        a.errors.push_back({nodes_[i].name, Fault::kProtocol,
                            nodes_[i].conn.describe() + ": unexpected reply to the acquire script: " + r.why});
        break;
    }
  }
  // The holder that a quorum names: its lease lasts while a quorum still holds it, i.e.
  // until the q-th longest remaining TTL among its nodes (-1, no expiry, counts as longest).
  for (auto& [holder, ttls] : busy_ttls) {
    if (static_cast<int>(ttls.size()) < q) continue;
    std::sort(ttls.begin(), ttls.end(), [](std::int64_t x, std::int64_t y) {
      if (x < 0 || y < 0) return x < 0 && y >= 0;  // "no expiry" first (longest)
      return x > y;
    });
    a.holder = holder;
    a.holder_ttl_ms = ttls[static_cast<std::size_t>(q - 1)];
    a.holder_never_expires = a.holder_ttl_ms == -1;  // PTTL -1: a key without expiry
    if (a.holder_ttl_ms < 0) a.holder_ttl_ms = -1;
  }

  // A holder that runs a longer `expire` than ours: after a restart its child may run that
  // long, so our guard must last that long too (from now on, for this process).
  if (a.longer_lease_ms > 0) options_.restart_guard = std::max(options_.restart_guard, Millis(a.longer_lease_ms));
  // The guard in the way: the wait until enough guarded nodes open for a quorum (with the
  // nodes that granted this time) to be possible.
  if (a.votes < q && a.holder_ttl_ms < 0 && !a.guarded.empty()) {
    std::vector<std::int64_t> left;
    for (const auto& g : a.guarded) left.push_back(g.left_ms);
    std::sort(left.begin(), left.end());
    const auto need = static_cast<std::size_t>(std::max(1, q - a.votes));
    a.guard_wait_ms = left[std::min(need, left.size()) - 1];
  }
  bool ok = !a.cancelled && a.votes >= q;
  if (ok) held_ = slot;
  if (ok) {
    // Fencing across quorums (lock/fencing.h): a quorum must store at least the token.
    const auto token = quorum_token(a.node_tokens);
    auto raise = nodes_to_raise(a.node_tokens, token);
    int at_token = 0;
    for (std::size_t i = 0; i < n; ++i) at_token += (a.node_tokens[i] == token) ? 1 : 0;
    if (std::find(raise.begin(), raise.end(), true) != raise.end()) {
      auto raised = send(kRaiseFence, {held_key(), keys_.fence},
                         {options_.holder, std::to_string(token), fence_ttl_arg_}, raise, Send::kAlways);
      auto raised_ok = [&](std::size_t i) {
        return raised[i] && raised[i]->ok() && parse_flag_reply(raised[i]->reply().get()) == true;
      };
      auto enough = [&] {
        int yes = at_token, open = 0;
        for (std::size_t i = 0; i < n; ++i) {
          if (!raise[i]) continue;
          if (raised[i]->done()) yes += raised_ok(i) ? 1 : 0;
          else ++open;
        }
        return yes >= q || yes + open < q;
      };
      a.cancelled = !wait(raised, enough, true);
      sweep();
      for (std::size_t i = 0; i < n; ++i) {
        if (!raise[i] || !raised[i]->done()) continue;
        if (raised_ok(i)) {
          ++at_token;
        } else if (!raised[i]->ok()) {
          a.errors.push_back(error_of(i, raised[i]));
        } else {
          a.errors.push_back({nodes_[i].name, Fault::kReply, nodes_[i].conn.describe() + ": lease gone before its fence could be raised"});
        }
      }
    }
    if (a.cancelled) {
      ok = false;
    } else if (at_token >= q) {
      a.token = token;
    } else {
      ok = false;
      a.errors.push_back({"", Fault::kReply, "fence raised on " + std::to_string(at_token) +
                                                 " node(s), fewer than the quorum of " + std::to_string(q)});
    }
  }
  if (ok && options_.wait_replicas > 0 && !replicated(granted, a.errors)) ok = false;
  if (ok) {
    a.valid_until = validity_deadline(start, options_.ttl, options_.drift_factor, options_.drift_fixed);
    const auto now = clock_.now();
    if (a.valid_until - options_.min_validity <= now) {
      ok = false;
      const auto left = until(a.valid_until, now);
      a.errors.push_back({"", Fault::kTimeout,
                          "acquired on a quorum, but too late: " + std::to_string(left.count()) + " ms of the " +
                              std::to_string(options_.ttl.count()) + " ms lease left, less than the " +
                              std::to_string(options_.min_validity.count()) +
                              " ms needed to stop a child in time; undone"});
    }
  }
  // Our leftovers go (compare-and-delete, nothing published), except the slot just won.
  auto undo_leftovers = [&](int keep) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!leftover[i] || !nodes_[i].conn.connected()) continue;
      for (std::size_t k = 0; k < slot_keys_.size(); ++k) {
        if (static_cast<int>(k) == keep) continue;
        nodes_[i].inflight.push_back(nodes_[i].conn.eval(kUndo, {slot_keys_[k]}, {options_.holder}));
      }
    }
  };
  if (!ok) {
    undo(calls, taken);
    undo_leftovers(-1);
    a.votes = a.cancelled ? 0 : a.votes;
    a.token = 0;
    a.valid_until = {};
    a.not_before = quorum_available_at();
    return a;
  }
  // Nodes that gave us another slot than the quorum's: not a lease, undone.
  for (std::size_t i = 0; i < n; ++i) {
    if (!granted[i] && !taken[i].empty() && nodes_[i].conn.connected()) {
      nodes_[i].inflight.push_back(nodes_[i].conn.eval(kUndo, {taken[i]}, {options_.holder}));
    }
  }
  undo_leftovers(slot);  // on the slot won, the key of ours is this lease's: renewed, released
  holding_ = true;
  a.acquired = true;
  a.slot = slot;
  options_.token = a.token;  // what renew() sets again where the key goes missing
  return a;
}

bool RedlockBackend::replicated(const std::vector<bool>& granted, std::vector<NodeError>& errors) {
  // WAIT blocks the connection on the server for up to its timeout: half of io_timeout,
  // so that its reply is in before our own deadline for it.
  const std::string want = std::to_string(options_.wait_replicas);
  std::vector<CallPtr> calls(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!granted[i]) continue;
    const auto timeout = std::max<long long>(1, nodes_[i].conn.options().io_timeout.count() / 2);
    calls[i] = nodes_[i].conn.send({"WAIT", want, std::to_string(timeout)});
    nodes_[i].inflight.push_back(calls[i]);
  }
  wait(calls, nullptr, true);
  sweep();
  int enough = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto& c = calls[i];
    if (!c) continue;
    const auto acked = c->ok() ? redis::as_integer(c->reply().get()) : std::nullopt;
    if (acked && *acked >= options_.wait_replicas) {
      ++enough;
    } else if (acked) {
      errors.push_back({nodes_[i].name, Fault::kReply,
                        nodes_[i].conn.describe() + ": only " + std::to_string(*acked) + " of " + want +
                            " replica(s) confirmed the lease in time (sentinel_wait_replicas); undone"});
    } else {
      errors.push_back(error_of(i, c));
    }
  }
  return enough >= quorum();
}

NodeError RedlockBackend::set_again_error(std::size_t i) const {
  // Said once per cause like any node's fault: the node lost data (or never had the
  // lease), and an operator wants to know, though the lease stands there again.
  return {nodes_[i].name + " (set again)", Fault::kReply,
          nodes_[i].conn.describe() + ": the lease was gone from this node (key deleted or evicted, the node "
                                      "restarted empty, or never set there); set again"};
}

Renewal RedlockBackend::renew() {
  sweep();
  const std::size_t n = nodes_.size();
  const int q = quorum();
  Renewal rn;
  const auto start = clock_.now();
  // A key of ours gone from a node is set again while the lease is held (the caller only
  // renews before its local deadline). With several nodes a quorum still holds it; with
  // one, the node restarted empty or the key was deleted, and the restart guard keeps
  // anyone else from taking it first (docs/DESIGN.md "Restart guard").
  const bool repair = options_.token != 0;
  // The last round was decided without some nodes' answers; one that has come since and
  // says the key was set again there is reported now (not a vote: that round is over).
  for (std::size_t i = 0; i < late_renewals_.size() && i < n; ++i) {
    const auto& c = late_renewals_[i];
    if (c && c->done() && c->ok() && redis::as_integer(c->reply().get()) == 2) {
      rn.errors.push_back(set_again_error(i));
    }
  }
  late_renewals_.assign(n, nullptr);
  std::vector<std::string> renew_keys{held_key(), keys_.fence};
  const bool claim = !options_.claim_key.empty();
  std::vector<std::string> renew_args{options_.holder,
                                      ttl_arg_,
                                      repair ? std::to_string(options_.token) : "",
                                      fence_ttl_arg_,
                                      claim ? std::to_string(options_.claim_ttl.count()) : "",
                                      claim && options_.claim_start_ms > 0 ? std::to_string(options_.claim_start_ms) : "",
                                      // One node and one slot: a counter above our token proves a later grant
                                      // of this key (a semaphore's slots share the counter: it proves nothing).
                                      n == 1 && slot_keys_.size() == 1 ? "1" : ""};
  if (claim) renew_keys.push_back(options_.claim_key);
  auto calls = send(kRenew, renew_keys, renew_args, {}, Send::kRespectBackoff);
  // 1 renewed, 2 set again (gone from the node), 0 not ours, -1 no answer/failure.
  auto vote = [&](std::size_t i) -> int {
    const auto& c = calls[i];
    if (!c || !c->done() || !c->ok()) return -1;
    auto v = redis::as_integer(c->reply().get());
    return v && *v >= 0 && *v <= 2 ? static_cast<int>(*v) : -1;
  };
  auto decided = [&] {
    int yes = 0, not_ours = 0;
    for (std::size_t i = 0; i < n; ++i) {
      int v = vote(i);
      yes += v >= 1;
      not_ours += v == 0;
    }
    return yes >= q || not_ours > static_cast<int>(n) - q;
  };
  bool finished = wait(calls, decided, true);
  sweep();
  if (finished && !decided()) {
    // A connection the server closed just as we used it (its idle `timeout` firing in the
    // same instant) is retried once on a fresh one, like a release: the renew script is
    // idempotent, and a node that is really gone fails again at once.
    std::vector<bool> again(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      again[i] = calls[i] && calls[i]->state() == Call::State::kFailed && calls[i]->fault() == Fault::kClosed;
    }
    if (std::find(again.begin(), again.end(), true) != again.end()) {
      auto retried = send(kRenew, renew_keys, renew_args, again, Send::kAlways);
      for (std::size_t i = 0; i < n; ++i) {
        if (again[i] && retried[i]) calls[i] = retried[i];
      }
      finished = wait(calls, decided, true);
      sweep();
    }
  }
  int not_ours = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int v = vote(i);
    if (v >= 0) rn.answered.push_back(nodes_[i].name);  // reachable again, if it was not
    if (v == 2) {
      // Our key was gone from this node and is set again. Said once per cause like any
      // node's fault: the node lost data (or never had the lease), and an operator wants
      // to know, but the lease holds on every node again.
      ++rn.votes;
      ++rn.repaired;
      rn.errors.push_back(set_again_error(i));
    } else if (v == 1) {
      ++rn.votes;
    } else if (v == 0) {
      ++not_ours;
      // Said once (a cause of its own, apart from the node's reachability), even while a
      // quorum still holds: one more such node loses the lease. With several nodes a key
      // that was merely gone has been set again (2), so this is another holder's.
      rn.errors.push_back({nodes_[i].name + " (lease)", Fault::kReply,
                           nodes_[i].conn.describe() +
                               (repair ? ": another holder has the key on this node, or was granted it since ours"
                                       : ": the lease is no longer ours on this node (key deleted, evicted or "
                                         "taken, or the node restarted empty)")});
    } else if (!calls[i] || calls[i]->done()) {
      if (calls[i] && calls[i]->ok()) {
        rn.errors.push_back({nodes_[i].name, Fault::kProtocol, nodes_[i].conn.describe() + ": unexpected reply to the renew script"});
      } else {
        rn.errors.push_back(error_of(i, calls[i]));
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (calls[i] && !calls[i]->done()) late_renewals_[i] = calls[i];
  }
  if (!finished) rn.errors.push_back({"", Fault::kCancelled, "renewal cancelled"});
  // Only nodes that answered "not yours" prove anything: an unreachable node may still
  // hold our key. Lost once fewer than a quorum could possibly still confirm.
  rn.lost = not_ours > node_count() - q;
  if (!rn.lost && rn.votes >= q) {
    auto until_ = validity_deadline(start, options_.ttl, options_.drift_factor, options_.drift_fixed);
    if (until_ > clock_.now()) {
      rn.confirmed = true;
      rn.valid_until = until_;
    } else {
      rn.errors.push_back({"", Fault::kTimeout, "renewal confirmed too late to extend the lease"});
    }
  }
  rn.took = clock_.now() - start;
  return rn;
}

Release RedlockBackend::release() noexcept {
  holding_ = false;
  try {
    sweep();
    auto calls = send(kRelease, {held_key()}, {options_.holder, keys_.channel}, {}, Send::kAlways);
    // Done once a quorum has answered and every request is written: the lease can no
    // longer be held by a quorum, and a hung minority node runs its DEL when it resumes
    // (TCP delivers what was written), so it costs the release nothing. Not cancellable:
    // a second SIGTERM must not leave the lease to expire by itself; every node is
    // bounded by its own timeouts.
    const auto conns = connections();
    auto enough = [&] {
      int answered = 0;  // replies, not failures: a refused node proves nothing
      for (const auto& c : calls) answered += c && c->state() == Call::State::kReplied ? 1 : 0;
      return answered >= quorum() &&
             std::none_of(conns.begin(), conns.end(), [](const auto* c) { return c->unsent(); });
    };
    wait(calls, enough, false);
    sweep();
    // A connection closed under us (idle, then reset just as we used it) is retried once
    // on a fresh one: a lost release would keep the lease from the standbys for its TTL.
    std::vector<bool> again(nodes_.size(), false);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      again[i] = calls[i] && calls[i]->state() == Call::State::kFailed && calls[i]->fault() == Fault::kClosed;
    }
    if (std::find(again.begin(), again.end(), true) != again.end()) {
      auto retried = send(kRelease, {held_key()}, {options_.holder, keys_.channel}, again, Send::kAlways);
      wait(retried, nullptr, false);
      sweep();
      for (std::size_t i = 0; i < calls.size(); ++i) {
        if (again[i]) calls[i] = retried[i];
      }
    }
    Release out;
    for (const auto& c : calls) {
      if (c && !c->done()) ++out.unanswered;
      if (!c || !c->ok()) continue;
      if (auto r = parse_release_reply(c->reply().get()); r && r->released) {
        ++out.released;
        if (!r->published) ++out.unpublished;
      }
    }
    return out;
  } catch (...) {
    // Release never throws; the caller logs the count.
    return {};
  }
}

void RedlockBackend::settle(Millis limit) noexcept {
  try {
    // Until every request queued on an open connection (an undo, a release) has been
    // written: Redis runs what it received even if we close right after. Replies are not
    // waited for, and connections still being set up are abandoned (what they hold never
    // reached a server).
    redis::DriveOptions o;
    o.deadline = SteadyClock::now() + limit;
    o.cancel_fd = options_.cancel_fd;
    auto conns = connections();
    redis::drive(conns, [&] { return std::none_of(conns.begin(), conns.end(), [](auto* c) { return c->unsent(); }); }, o);
  } catch (...) {
  }
}

std::vector<NodeView> RedlockBackend::inspect() {
  sweep();
  auto calls = round(kInspect, {held_key(), keys_.fence}, {}, true);
  std::vector<NodeView> views(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& v = views[i];
    const auto& c = calls[i];
    v.node = nodes_[i].name;
    if (nodes_[i].conn.located() && !nodes_[i].conn.current().host.empty()) v.server = nodes_[i].conn.current().str();
    v.peer = nodes_[i].conn.peer_info();
    if (!c->ok()) {
      auto e = error_of(i, c);
      v.fault = e.fault;
      v.error = e.message;
      continue;
    }
    auto r = parse_inspect_reply(c->reply().get());
    if (!r) {
      v.fault = Fault::kProtocol;
      v.error = nodes_[i].conn.describe() + ": unexpected reply to the inspect script";
      continue;
    }
    v.reachable = true;
    v.held = r->held;
    v.holder = r->holder;
    v.pttl_ms = r->pttl_ms;
    v.token = r->token;
    v.uptime_s = r->uptime_s;
  }
  return views;
}

std::vector<CallPtr> RedlockBackend::round(const redis::Script& script, const std::vector<std::string>& keys,
                                           const std::vector<std::string>& args, bool cancellable) {
  sweep();
  auto calls = send(script, keys, args, {}, Send::kAlways);
  wait(calls, nullptr, cancellable);
  sweep();
  return calls;
}

Claim RedlockBackend::claim(const std::string& claim_key, std::uint64_t token, std::int64_t start_ms, Millis ttl,
                            std::int64_t guard_from_ms) {
  Claim out;
  const std::size_t n = nodes_.size();
  sweep();
  auto calls = send(kClaim, {held_key(), claim_key},
                    {options_.holder, std::to_string(token), std::to_string(start_ms), std::to_string(ttl.count()),
                     guard_from_ms > 0 ? std::to_string(guard_from_ms) : ""},
                    {},
                    Send::kAlways);
  auto reply_of = [&](std::size_t i) {
    return calls[i] && calls[i]->ok() ? parse_claim_reply(calls[i]->reply().get()) : ClaimReply{};
  };
  // A run needs its claim on a quorum; any node that has another claim means the slot
  // was run (whoever ran it claimed a quorum, and every two quorums share a node).
  auto decided = [&] {
    int yes = 0, pending = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!calls[i]->done()) {
        ++pending;
        continue;
      }
      const auto r = reply_of(i);
      if (r.kind == ClaimReply::Kind::kTaken) return true;
      yes += r.kind == ClaimReply::Kind::kClaimed ? 1 : 0;
    }
    return yes >= quorum() || yes + pending < quorum();
  };
  const bool finished = wait(calls, decided, true);
  sweep();
  int yes = 0;
  std::vector<std::string> errors;
  std::string guarded;  // the first node held back by the restart guard, and when it started
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = reply_of(i);
    if (r.kind == ClaimReply::Kind::kTaken && out.kind != Claim::Kind::kTaken) {
      out.kind = Claim::Kind::kTaken;
      out.previous = {r.holder, r.token, r.start_ms, r.status};
    } else if (r.kind == ClaimReply::Kind::kClaimed) {
      ++yes;
    } else if (r.kind == ClaimReply::Kind::kGuarded) {
      if (guarded.empty()) {
        const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count();
        const long long ago_s = (now_ms - std::stoll(r.start_ms)) / 1000;
        guarded = nodes_[i].name + " started " + std::to_string(std::max(0LL, ago_s)) + " s ago";
      }
    } else if (r.kind == ClaimReply::Kind::kNotOurs) {
      errors.push_back(nodes_[i].name + ": the lease is no longer ours");
    } else if (calls[i]->done()) {
      out.refused = out.refused || calls[i]->fault() == Fault::kAuth;
      errors.push_back(calls[i]->ok() ? nodes_[i].name + ": unexpected reply to the claim script" : calls[i]->error());
    }
  }
  if (out.kind == Claim::Kind::kTaken) {
    if (yes > 0) finish_claim(claim_key, "");  // ours where it was written: the slot is not ours
    return out;
  }
  if (finished && yes >= quorum()) {
    out.kind = Claim::Kind::kClaimed;
    return out;
  }
  if (yes > 0) finish_claim(claim_key, "");
  if (finished && !guarded.empty()) {
    out.kind = Claim::Kind::kGuarded;
    out.error = guarded;
    return out;
  }
  out.error = "the slot was claimed on " + std::to_string(yes) + " node(s), fewer than the quorum of " +
              std::to_string(quorum());
  for (const auto& e : errors) out.error += "; " + e;
  if (!finished) out.error = "cancelled";
  return out;
}

void RedlockBackend::finish_claim(const std::string& claim_key, const std::string& status) noexcept {
  try {
    round(kFinishClaim, {claim_key}, {options_.holder, status}, false);
  } catch (...) {
    // Never throws: a status that cannot be recorded leaves the claim as it was (the slot
    // stays claimed, which is what matters).
  }
}

std::vector<std::optional<ClaimRecord>> RedlockBackend::read_claims(const std::vector<std::string>& claim_keys) {
  std::vector<std::optional<ClaimRecord>> out(claim_keys.size());
  if (claim_keys.empty()) return out;
  auto calls = round(kReadClaims, claim_keys, {}, true);
  for (const auto& c : calls) {
    if (!c || !c->ok()) continue;
    auto r = parse_read_claims_reply(c->reply().get(), claim_keys.size());
    if (!r) continue;
    for (std::size_t k = 0; k < claim_keys.size(); ++k) {
      const auto& e = (*r)[k];
      if (e.kind != ClaimReply::Kind::kTaken) continue;
      // The most complete record any node has (one with the exit status wins).
      if (!out[k] || (out[k]->status.empty() && !e.status.empty())) out[k] = ClaimRecord{e.holder, e.token, e.start_ms, e.status};
    }
  }
  return out;
}

Published RedlockBackend::publish(const std::string& channel, const std::string& message) {
  Published out;
  auto calls = round(kPublish, {}, {channel, message}, true);
  for (const auto& c : calls) {
    if (!c || !c->done()) continue;
    auto v = c->ok() ? redis::as_integer(c->reply().get()) : std::nullopt;
    if (v) {
      ++out.accepted;
      out.receivers += *v;
      continue;
    }
    out.refused = out.refused || c->fault() == Fault::kAuth;
    if (out.error.empty()) out.error = c->ok() ? "unexpected reply to PUBLISH" : c->error();
  }
  return out;
}

}  // namespace redisgo::lock
