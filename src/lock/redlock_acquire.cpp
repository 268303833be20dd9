// RedlockBackend: one acquisition attempt over every node (quorum, semaphore slot,
// fencing across quorums, the undo of what a failed attempt took).
#include "lock/redlock.h"

#include <algorithm>
#include <map>

#include "lock/fencing.h"
#include "lock/replies.h"
#include "lock/scripts.h"

namespace redisgo::lock {

using redis::Call;
using redis::CallPtr;
using redis::Fault;

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

}  // namespace redisgo::lock
