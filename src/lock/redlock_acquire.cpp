// RedlockBackend: one acquisition attempt over every node (quorum, semaphore slot,
// fencing across quorums, the undo of what a failed attempt took).
#include "lock/redlock.h"

#include <algorithm>
#include <map>

#include "lock/fencing.h"
#include "lock/replies.h"
#include "lock/scripts.h"
#include "util/clock.h"

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
    if (!nodes_[i].conn->connected()) continue;
    if (!in_flight) {
      nodes_[i].inflight.push_back(nodes_[i].conn->eval(kUndo, {taken[i]}, {options_.lease_id}));
      continue;
    }
    for (const auto& key : slot_keys_) {
      nodes_[i].inflight.push_back(nodes_[i].conn->eval(kUndo, {key}, {options_.lease_id}));
    }
  }
}

namespace {

/// The holder that a quorum names: its lease lasts while a quorum still holds it, i.e.
/// until the q-th longest remaining TTL among its nodes (-1, no expiry, counts as longest).
void name_holder(std::map<std::string, std::vector<std::int64_t>>& busy_ttls, int q, Acquisition& a) {
  for (auto& [holder, ttls] : busy_ttls) {
    if (static_cast<int>(ttls.size()) < q) continue;
    std::sort(ttls.begin(), ttls.end(), [](std::int64_t x, std::int64_t y) {
      if (x < 0 || y < 0) return x < 0 && y >= 0;  // "no expiry" first (longest)
      return x > y;
    });
    a.holder = holder;
    a.holder_node.clear();  // a quorum names it: no one node's word
    a.holder_ttl_ms = ttls[static_cast<std::size_t>(q - 1)];
    a.holder_never_expires = a.holder_ttl_ms == -1;  // PTTL -1: a key without expiry
    if (a.holder_ttl_ms < 0) a.holder_ttl_ms = -1;
  }
}

/// The restart guard in the way: the wait until enough guarded nodes open for a quorum
/// (with the nodes that granted this time) to be possible.
void guard_wait(int q, Acquisition& a) {
  if (a.votes >= q || a.holder_ttl_ms >= 0 || a.guarded.empty()) return;
  std::vector<std::int64_t> left;
  for (const auto& g : a.guarded) left.push_back(g.left_ms);
  std::sort(left.begin(), left.end());
  const auto need = static_cast<std::size_t>(std::max(1, q - a.votes));
  a.guard_wait_ms = left[std::min(need, left.size()) - 1];
}

}  // namespace

bool RedlockBackend::refused_beyond_quorum(const std::vector<CallPtr>& calls) const {
  int refused = 0;
  for (std::size_t i = 0; i < calls.size() && i < nodes_.size(); ++i) {
    const auto& c = calls[i];
    // A node skipped for its retry backoff (no call) failed as it last did.
    refused += (c ? c->done() && redis::is_refusal(c->fault()) : redis::is_refusal(nodes_[i].last_fault)) ? 1 : 0;
  }
  return refused > node_count() - quorum();
}

struct RedlockBackend::Ballot {
  const std::vector<CallPtr>& calls;
  const std::vector<std::string>& slot_keys;
  bool semaphore;

  AcquireReply reply_of(std::size_t i) const {
    const auto& c = calls[i];
    return c && c->ok() ? parse_acquire_reply(c->reply().get()) : AcquireReply{};
  }
  /// The slot node i granted, or -1.
  int granted_slot(std::size_t i) const {
    auto r = reply_of(i);
    if (r.kind != AcquireReply::Kind::kGranted) return -1;
    if (!semaphore) return 0;
    auto it = std::find(slot_keys.begin(), slot_keys.end(), r.slot_key);
    return it == slot_keys.end() ? -1 : static_cast<int>(it - slot_keys.begin());
  }
  /// The slot most nodes granted (the lowest on a tie) and how many granted it.
  std::pair<int, int> leading_slot() const {
    std::vector<int> votes(slot_keys.size(), 0);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (calls[i] && calls[i]->done()) {
        if (int s = granted_slot(i); s >= 0) ++votes[static_cast<std::size_t>(s)];
      }
    }
    auto best = std::max_element(votes.begin(), votes.end());
    return {static_cast<int>(best - votes.begin()), *best};
  }
  /// A quorum granted one slot, or too few calls are pending for one to.
  bool decided(int q) const {
    int pending = 0;
    for (const auto& c : calls) pending += c && !c->done() ? 1 : 0;
    const int yes = leading_slot().second;
    return yes >= q || yes + pending < q;
  }
};

std::vector<CallPtr> RedlockBackend::send_acquire(bool semaphore) {
  // One slot: the lease script. A semaphore: the slot script, with the slot keys in this
  // attempt's order (the same on every node, so that they agree on the first free one).
  // Both are the line's scripts whatever `fair` says: fair = false only never joins the line,
  // and still takes no free lease ahead of those in it, and wakes its head (beside fair
  // daemons, fair = false ones taking every freed lease would starve the line, where the
  // manual says they get one only when nobody waits in line).
  std::vector<std::string> keys{keys_.key, keys_.fence, keys_.line};
  if (semaphore) {
    keys = {keys_.fence, keys_.line};
    const std::size_t first = rotation_++ % slot_keys_.size();
    for (std::size_t j = 0; j < slot_keys_.size(); ++j) keys.push_back(slot_keys_[(first + j) % slot_keys_.size()]);
  }
  keys.push_back(keys_.pause());  // last: nothing is granted while it exists
  std::vector<std::string> args{options_.lease_id, ttl_arg_, fence_ttl_arg_, std::to_string(options_.restart_guard.count())};
  // Several nodes: a token proposed to all, so that they issue one and need no raise.
  proposed_at_us_ = nodes_.size() > 1 ? static_cast<std::uint64_t>(network_.wall_us()) : 0;
  const std::string proposal = proposed_at_us_ > 0 ? std::to_string(proposed_at_us_ + lead_us_) : "";
  // The line: our ticket, whether we join on this node (we listen there), its TTL, the window.
  const std::string ticket = ticket_ > 0 ? std::to_string(ticket_) : "";
  written_.resize(nodes_.size(), 0);
  sent_tickets_.assign(nodes_.size(), 0);
  auto args_of = [&](std::size_t i) {
    auto a = args;
    const bool join = options_.fair && i < listening_.size() && listening_[i];
    // A node that has our ticket already is not sent it again (a miss costs a command less).
    const bool send_ticket = ticket_ > 0 && written_[i] != ticket_;
    if (send_ticket) sent_tickets_[i] = ticket_;
    // fair = false: "0", never joins, told the line's length (mixed settings are said).
    a.insert(a.end(), {send_ticket ? ticket : "", join ? "1" : (options_.fair ? "" : "0"), line_ttl_arg_, window_arg_,
                       proposal});
    return a;
  };
  return send_each(semaphore ? kAcquireSlotFair : kAcquireFair, keys, args_of, {}, Send::kRespectBackoff);
}

void RedlockBackend::note_written(std::size_t i, const AcquireReply& r) {
  if (!r.line || i >= written_.size() || i >= sent_tickets_.size()) return;  // fair = false: no line
  if (r.position <= 0) {
    written_[i] = 0;  // not in this node's line: the ticket goes with the next join there
  } else if (r.ticket > 0 || sent_tickets_[i] > 0) {
    written_[i] = std::max(r.ticket, sent_tickets_[i]);  // a new join's ticket, or the one we sent
  }
}

void RedlockBackend::note_line(const AcquireReply& r, Acquisition& a, bool& first) {
  if (!r.line) return;
  // A miss in line does not read the length (a command saved per attempt): at least our place.
  a.line_length = std::max({a.line_length, r.line_length, r.position});
  if (r.position <= 0) return;
  // Our place: the best any node gives (the line's order is the same on every node once our
  // ticket is written back; a node that dropped us has us at its tail for now).
  a.position = first ? r.position : std::min(a.position, r.position);
  first = false;
  if (ticket_ > 0 && r.ticket > ticket_) a.rejoined = true;
}

void RedlockBackend::note_unanswered(std::size_t i, const redis::CallPtr& c, Acquisition& a) const {
  if (!c || c->done()) {
    a.errors.push_back(error_of(i, c));
  } else if (clock_.now() >= attempt_bound_ || redis::is_refusal(nodes_[i].last_fault)) {
    // No answer yet is this node's last word when the wait's bound (--wait-timeout) cut the
    // attempt, and a refusal it gave before (its reconnect still on the way) stays one: the
    // run's exit status is decided on them (77 for a refusal, not 69).
    a.errors.push_back(unanswered_at_bound(i));
  }
}

RedlockBackend::Tally RedlockBackend::count_votes(const Ballot& ballot, int slot, Acquisition& a) {
  const std::size_t n = nodes_.size();
  Tally t{std::vector<bool>(n, false), std::vector<std::string>(n), std::vector<bool>(n, false), {}};
  bool unplaced = true;                // no node has placed us in its line yet
  std::vector<std::uint64_t> tickets;  // the line's tickets the nodes gave us
  for (std::size_t i = 0; i < n; ++i) {
    const auto& c = ballot.calls[i];
    if (!c || !c->done() || !c->ok()) {
      note_unanswered(i, c, a);
      continue;
    }
    const auto r = ballot.reply_of(i);
    if (r.kind != AcquireReply::Kind::kInvalid) a.answered.push_back(nodes_[i].name);
    for (const auto& [key, type] : r.other_type_slots) {
      // Only our own slot keys: what a reply names is shown in logs.
      if (std::find(slot_keys_.begin(), slot_keys_.end(), key) != slot_keys_.end()) {
        a.other_type_slots.push_back({nodes_[i].name, key, type});
      }
    }
    switch (r.kind) {
      case AcquireReply::Kind::kGranted:
        if (ballot.granted_slot(i) != slot) {
          // A semaphore whose nodes disagreed on the free slot: this node's is undone.
          t.taken[i] = ballot.semaphore && ballot.granted_slot(i) >= 0 ? r.slot_key : "";
          if (ballot.semaphore && ballot.granted_slot(i) < 0) {
            a.errors.push_back({nodes_[i].name, Fault::kProtocol,
                                nodes_[i].conn->describe() + ": the acquire script granted an unknown slot"});
          }
          break;
        }
        a.node_tokens[i] = r.token;
        if (r.unguarded) a.unguarded.push_back(nodes_[i].name);
        t.granted[i] = true;
        t.taken[i] = slot_keys_[static_cast<std::size_t>(slot)];
        ++a.votes;
        break;
      case AcquireReply::Kind::kBusy:
        note_line(r, a, unplaced);
        tickets.push_back(r.ticket);
        note_written(i, r);
        // A key of ours from an earlier attempt (its undo or release did not arrive): undone.
        if (r.lease != options_.lease_id && holder_of(r.lease) == options_.holder) {
          t.leftover[i] = true;
          break;
        }
        ++a.busy;
        t.busy_ttls[r.holder].push_back(r.pttl_ms);
        if (a.holder.empty()) {
          a.holder = r.holder;
          a.holder_node = nodes_[i].name;
        }
        if (options_.restart_guard > Millis(0) && r.pttl_ms > options_.restart_guard.count() &&
            a.longer_lease_ms < r.pttl_ms && is_daemon_holder(r.holder)) {
          a.longer_lease_ms = r.pttl_ms;
        }
        break;
      case AcquireReply::Kind::kGuarded:
        note_line(r, a, unplaced);
        tickets.push_back(r.ticket);
        note_written(i, r);
        a.guarded.push_back({nodes_[i].name, r.guard_ms});
        break;
      case AcquireReply::Kind::kInvalid:
        if (r.set_key) t.taken[i] = ballot.semaphore ? r.slot_key : keys_.key;  // we may hold it there: the undo covers it
        a.errors.push_back({nodes_[i].name, Fault::kProtocol,
                            nodes_[i].conn->describe() + ": unexpected reply to the acquire script: " + r.why});
        break;
    }
  }
  // The ticket written back next time: the largest a node gave (docs/DESIGN.md "The
  // waiting line": every node then orders us alike). One that rejoined somewhere takes that
  // node's new (tail) ticket: its turn is lost everywhere, not kept where it was not seen.
  for (auto ticket : tickets) ticket_ = std::max(ticket_, ticket);
  return t;
}

bool RedlockBackend::raise_fence(Acquisition& a) {
  const std::size_t n = nodes_.size();
  const int q = quorum();
  const auto token = quorum_token(a.node_tokens);
  auto raise = nodes_to_raise(a.node_tokens, token);
  if (proposed_at_us_ > 0) lead_us_ = next_lead_us(lead_us_, proposed_at_us_, a.node_tokens);
  int at_token = 0;
  for (std::size_t i = 0; i < n; ++i) at_token += (a.node_tokens[i] == token) ? 1 : 0;
  // A semaphore's holders run at once, so two of them must never share a token: a raise
  // that finds the counter at our token already (kRaiseFence's 2), or that we cannot read,
  // gives the acquisition up (lock/fencing.h). So every raise is waited for.
  const bool semaphore = slot_keys_.size() > 1;
  bool shared = false;
  if (std::find(raise.begin(), raise.end(), true) != raise.end()) {
    auto raised = send(kRaiseFence, {held_key(), keys_.fence},
                       {options_.lease_id, std::to_string(token), fence_ttl_arg_, semaphore ? "1" : ""}, raise,
                       Send::kAlways);
    auto raised_as = [&](std::size_t i) {
      return raised[i] && raised[i]->ok() ? parse_raise_fence_reply(raised[i]->reply().get()) : std::nullopt;
    };
    auto raised_ok = [&](std::size_t i) {
      const auto r = raised_as(i);
      return r && r->result == RaiseFenceReply::Result::kRaised;
    };
    auto enough = [&] {
      int yes = at_token, open = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (!raise[i]) continue;
        if (raised[i]->done()) yes += raised_ok(i) ? 1 : 0;
        else ++open;
      }
      return semaphore ? open == 0 : (yes >= q || yes + open < q);
    };
    a.cancelled = !wait(raised, enough, true);
    sweep();
    for (std::size_t i = 0; i < n; ++i) {
      if (!raise[i]) continue;
      if (!raised[i]->done()) {
        shared = shared || semaphore;
        continue;
      }
      if (raised_ok(i)) {
        ++at_token;
      } else if (const auto r = raised_as(i); r && r->result == RaiseFenceReply::Result::kShared) {
        shared = true;
      } else if (!raised[i]->ok()) {
        shared = shared || semaphore;
        a.errors.push_back(error_of(i, raised[i]));
      } else if (!r) {
        shared = shared || semaphore;
        a.errors.push_back(
            {nodes_[i].name, Fault::kProtocol, nodes_[i].conn->describe() + ": unexpected reply to the raise script"});
      } else {
        shared = shared || semaphore;  // not raised, so not asked either
        a.errors.push_back({nodes_[i].name, Fault::kReply, nodes_[i].conn->describe() + ": lease gone before its fence could be raised"});
      }
    }
  }
  if (a.cancelled) return false;
  if (shared) {
    a.errors.push_back({"", Fault::kReply, "token " + std::to_string(token) +
                                               " may be another slot holder's too (nodes served two holders in "
                                               "opposite orders, or a raise went unanswered): given up, to try again"});
    return false;
  }
  if (at_token < q) {
    a.errors.push_back({"", Fault::kReply, "fence raised on " + std::to_string(at_token) +
                                               " node(s), fewer than the quorum of " + std::to_string(q)});
    return false;
  }
  a.token = token;
  return true;
}

bool RedlockBackend::still_valid(Clock::time_point start, Acquisition& a) {
  a.valid_until = validity_deadline(start, options_.ttl, options_.drift_factor, options_.drift_fixed);
  const auto now = clock_.now();
  if (a.valid_until - options_.min_validity > now) return true;
  const auto left = until(a.valid_until, now);
  a.errors.push_back({"", Fault::kTimeout,
                      "acquired on a quorum, but too late: " + std::to_string(left.count()) + " ms of the " +
                          std::to_string(options_.ttl.count()) + " ms lease left, less than the " +
                          std::to_string(options_.min_validity.count()) +
                          " ms needed to stop a child in time; undone"});
  return false;
}

void RedlockBackend::undo_late_slots(const std::vector<bool>& late, int keep) {
  // A node that had not answered when the quorum decided may still grant us another slot
  // than the one won: that slot would stay ours there, unused, for its whole TTL, and that
  // node then counts a slot fewer than the others, so that its grants and its turns go to
  // other slots than theirs and split the next waiters' votes. Every other slot is undone
  // behind the acquisition on the same connection (compare-and-delete of this attempt's
  // lease id: only what it set there); the slot won stays, renewed like the others.
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!late[i] || !nodes_[i].conn->connected()) continue;
    for (std::size_t k = 0; k < slot_keys_.size(); ++k) {
      if (static_cast<int>(k) == keep) continue;
      nodes_[i].inflight.push_back(nodes_[i].conn->eval(kUndo, {slot_keys_[k]}, {options_.lease_id}));
    }
  }
}

void RedlockBackend::undo_leftovers(const std::vector<bool>& leftover, int keep) {
  // Compare-and-delete, nothing published.
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!leftover[i] || !nodes_[i].conn->connected()) continue;
    for (std::size_t k = 0; k < slot_keys_.size(); ++k) {
      if (static_cast<int>(k) == keep) continue;
      nodes_[i].inflight.push_back(nodes_[i].conn->eval(kUndo, {slot_keys_[k]}, {options_.lease_id, "1"}));
    }
  }
}

Acquisition RedlockBackend::acquire() {
  sweep();
  // Each attempt sets its own lease id: what an earlier one left behind (an undo or a release
  // still on its way) can then delete only that attempt's key, never this one's.
  if (!holding_) options_.lease_id = make_lease_id(options_.holder, options_.attempts.get());
  const int q = quorum();
  Acquisition a;
  a.node_tokens.assign(nodes_.size(), 0);
  const auto start = clock_.now();
  a.started = start;
  const bool semaphore = slot_keys_.size() > 1;
  auto calls = send_acquire(semaphore);
  const Ballot ballot{calls, slot_keys_, semaphore};
  a.cancelled = !wait(calls, [&] { return ballot.decided(q); }, true);
  if (!a.cancelled && refused_beyond_quorum(calls)) {
    // This host's credentials or rights are refused on too many nodes for a quorum: what the
    // others answer is all it can say of the key (who holds it), worth their replies (each
    // bounded by its node's timeouts; the pace of the attempts is the backoff's).
    a.cancelled = !wait(calls, nullptr, true);
  }
  sweep();
  const int slot = ballot.leading_slot().first;
  Tally t = count_votes(ballot, slot, a);
  std::vector<bool> late(nodes_.size(), false);  // unanswered when counted: what they grant comes later
  for (std::size_t i = 0; i < nodes_.size(); ++i) late[i] = calls[i] && !calls[i]->done();
  name_holder(t.busy_ttls, q, a);
  // A holder that runs a longer `expire` than ours: after a restart its child may run that
  // long, so our guard must last that long too (from now on, for this process).
  if (a.longer_lease_ms > 0) options_.restart_guard = std::max(options_.restart_guard, Millis(a.longer_lease_ms));
  guard_wait(q, a);
  bool ok = !a.cancelled && a.votes >= q;
  if (ok) held_ = slot;
  ok = ok && raise_fence(a);
  if (ok && options_.wait_replicas > 0 && !replicated(t.granted, a.errors)) ok = false;
  ok = ok && still_valid(start, a);
  if (!ok) {
    undo(calls, t.taken);
    undo_leftovers(t.leftover, -1);
    a.votes = a.cancelled ? 0 : a.votes;
    a.token = 0;
    a.valid_until = {};
    a.not_before = quorum_available_at();
    return a;
  }
  // Nodes that gave us another slot than the quorum's: not a lease, undone.
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!t.granted[i] && !t.taken[i].empty() && nodes_[i].conn->connected()) {
      nodes_[i].inflight.push_back(nodes_[i].conn->eval(kUndo, {t.taken[i]}, {options_.lease_id}));
    }
  }
  if (semaphore) undo_late_slots(late, slot);
  undo_leftovers(t.leftover, slot);  // on the slot won, the key of ours is this lease's: renewed, released
  holding_ = true;
  // Where a node's answer had not come when the quorum decided, it is most often another
  // contender's key there (a late "busy"): counted as not ours, so that its key set by a later
  // renewal is no alarm. (A late grant lost again before the first renewal goes unsaid; the
  // renewal sets it all the same.)
  a.granted = t.granted;
  ours_ = a.granted;
  // The grant took us out of the line where it was granted. Where it was not (another's turn
  // there, a node that answered late or not at all) our entry would stay, and a release there
  // would hand that node's turn to us while we lead, and later to a process gone: that node
  // then stalls a window each time (one node of three frozen, and the line stands still for
  // seconds). Sent, not waited for: the child starts meanwhile.
  if (options_.fair && ticket_ > 0) {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (t.granted[i] || !nodes_[i].conn->connected()) continue;
      nodes_[i].inflight.push_back(nodes_[i].conn->send({"ZREM", keys_.line, options_.holder}));
    }
  }
  ticket_ = 0;
  written_.assign(nodes_.size(), 0);
  a.acquired = true;
  a.slot = slot;
  a.lease_id = options_.lease_id;
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
    const auto timeout = std::max<long long>(1, nodes_[i].conn->options().io_timeout.count() / 2);
    calls[i] = nodes_[i].conn->send({"WAIT", want, std::to_string(timeout)});
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
                        nodes_[i].conn->describe() + ": only " + std::to_string(*acked) + " of " + want +
                            " replica(s) confirmed the lease in time (sentinel_wait_replicas); undone"});
    } else {
      errors.push_back(error_of(i, c));
    }
  }
  return enough >= quorum();
}

}  // namespace redisgo::lock
