// RedlockBackend: renewal rounds (setting a vanished key again) and the release.
#include "lock/redlock.h"

#include <algorithm>

#include "lock/replies.h"
#include "lock/scripts.h"

namespace redisgo::lock {

using redis::Call;
using redis::CallPtr;
using redis::Fault;

NodeError RedlockBackend::set_again_error(std::size_t i) const {
  // Said once per cause like any node's fault: the node lost data (or never had the
  // lease), and an operator wants to know, though the lease stands there again.
  return {nodes_[i].name + " (set again)", Fault::kReply,
          nodes_[i].conn->describe() + ": the lease was gone from this node (key deleted or evicted, the node "
                                      "restarted empty, or never set there); set again"};
}

namespace {

// A renewal's reply: 1 renewed, 2 set again (gone from the node), 0 not ours (3: a key of
// another type there, counted as 0), -1 no answer or a failure.
std::optional<RenewReply> renew_reply(const CallPtr& c) {
  return c && c->done() && c->ok() ? parse_renew_reply(c->reply().get()) : std::nullopt;
}

int renew_vote(const CallPtr& c) {
  using Result = RenewReply::Result;
  const auto r = renew_reply(c);
  if (!r) return -1;
  switch (r->result) {
    case Result::kRenewed: return 1;
    case Result::kRepaired: return 2;
    case Result::kNotOurs:
    case Result::kOtherType: return 0;
  }
  return -1;
}

bool other_type(const CallPtr& c) {
  const auto r = renew_reply(c);
  return r && r->result == RenewReply::Result::kOtherType;
}

// The calls that failed because the server closed the connection just as we used it (its
// idle `timeout` firing in the same instant): worth one retry on a fresh connection.
std::vector<bool> closed_under_us(const std::vector<CallPtr>& calls) {
  std::vector<bool> again(calls.size(), false);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    again[i] = calls[i] && calls[i]->state() == Call::State::kFailed && calls[i]->fault() == Fault::kClosed;
  }
  return again;
}

bool any_of(const std::vector<bool>& v) { return std::find(v.begin(), v.end(), true) != v.end(); }

}  // namespace

void RedlockBackend::report_late_renewals(Renewal& rn) {
  // The last round was decided without some nodes' answers; one that has come since and
  // says the key was set again there is reported now (not a vote: that round is over).
  for (std::size_t i = 0; i < late_renewals_.size() && i < nodes_.size(); ++i) {
    const auto& c = late_renewals_[i];
    const int v = renew_vote(c);
    if (v == 2 && was_ours(i)) rn.errors.push_back(set_again_error(i));
    if (v >= 1) ours_[i] = true;  // renewed or set there: ours from now on, late or not
  }
  late_renewals_.assign(nodes_.size(), nullptr);
}

RedlockBackend::ScriptCall RedlockBackend::renew_call() const {
  // A key of ours gone from a node is set again while the lease is held (the caller only
  // renews before its local deadline). With several nodes a quorum still holds it; with
  // one, the node restarted empty or the key was deleted, and the restart guard keeps
  // anyone else from taking it first (docs/DESIGN.md "Restart guard").
  const bool repair = options_.token != 0;
  const bool claim = !options_.claim_key.empty();
  const bool rewrite = claim && options_.claim_start_ms > 0 && (!options_.claim_made || options_.claim_made->load());
  ScriptCall call;
  call.keys = {held_key(), keys_.fence};
  call.args = {options_.lease_id,
               ttl_arg_,
               repair ? std::to_string(options_.token) : "",
               fence_ttl_arg_,
               claim ? std::to_string(options_.claim_ttl.count()) : "",
               rewrite ? std::to_string(options_.claim_start_ms) : "",
               // One node and one slot: a counter above our token proves a later grant
               // of this key (a semaphore's slots share the counter: it proves nothing).
               nodes_.size() == 1 && slot_keys_.size() == 1 ? "1" : ""};
  if (claim) call.keys.push_back(options_.claim_key);
  return call;
}

int RedlockBackend::count_renewals(const std::vector<CallPtr>& calls, Renewal& rn) {
  const bool repair = options_.token != 0;
  int not_ours = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const int v = renew_vote(calls[i]);
    if (v >= 0) rn.answered.push_back(nodes_[i].name);  // reachable again, if it was not
    if (v == 2) {
      // Our key was gone from this node and is set again. Said once per cause like any
      // node's fault: the node lost data, and an operator wants to know, but the lease
      // holds on every node again. Where the grant had missed this node, it is simply ours
      // now (ours_).
      ++rn.votes;
      if (was_ours(i)) {
        ++rn.repaired;
        rn.errors.push_back(set_again_error(i));
      }
      ours_[i] = true;
    } else if (v == 1) {
      ++rn.votes;
      ours_[i] = true;
    } else if (v == 0) {
      ++not_ours;
      // Said once (a cause of its own, apart from the node's reachability), even while a
      // quorum still holds: one more such node loses the lease. With several nodes a key
      // that was merely gone has been set again (2), so this is another holder's. Not said
      // of a node the grant missed: another contender's key there is no news.
      if (!was_ours(i)) continue;
      rn.errors.push_back({nodes_[i].name + " (lease)", Fault::kReply,
                           nodes_[i].conn->describe() +
                               (other_type(calls[i]) ? ": the lease key holds another type on this node now (something "
                                                       "else wrote over it): not ours"
                                : repair ? ": another holder has the key on this node, or was granted it since ours"
                                       : ": the lease is no longer ours on this node (key deleted, evicted or "
                                         "taken, or the node restarted empty)")});
    } else if (!calls[i] || calls[i]->done()) {
      if (calls[i] && calls[i]->ok()) {
        rn.errors.push_back({nodes_[i].name, Fault::kProtocol, nodes_[i].conn->describe() + ": unexpected reply to the renew script"});
      } else {
        rn.errors.push_back(error_of(i, calls[i]));
        if (redis::is_refusal(rn.errors.back().fault)) ++rn.refused;
      }
    }
  }
  return not_ours;
}

Renewal RedlockBackend::renew() {
  sweep();
  const std::size_t n = nodes_.size();
  const int q = quorum();
  Renewal rn;
  const auto start = clock_.now();
  if (ours_.size() != n) {
    // A lease this backend did not acquire (the renewal thread's): as the acquisition said.
    ours_ = options_.granted_on.size() == n ? options_.granted_on : std::vector<bool>(n, true);
  }
  report_late_renewals(rn);
  const ScriptCall request = renew_call();
  auto calls = send(kRenew, request.keys, request.args, {}, Send::kRespectBackoff);
  auto decided = [&] {
    int yes = 0, not_ours = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const int v = renew_vote(calls[i]);
      yes += v >= 1;
      not_ours += v == 0;
    }
    return yes >= q || not_ours > static_cast<int>(n) - q;
  };
  bool finished = wait(calls, decided, true);
  sweep();
  if (finished && !decided()) {
    // A connection closed under us is retried once on a fresh one, like a release: the
    // renew script is idempotent, and a node that is really gone fails again at once.
    const auto again = closed_under_us(calls);
    if (any_of(again)) {
      auto retried = send(kRenew, request.keys, request.args, again, Send::kAlways);
      for (std::size_t i = 0; i < n; ++i) {
        if (again[i] && retried[i]) calls[i] = retried[i];
      }
      finished = wait(calls, decided, true);
      sweep();
    }
  }
  const int not_ours = count_renewals(calls, rn);
  for (std::size_t i = 0; i < n; ++i) {
    if (calls[i] && !calls[i]->done()) late_renewals_[i] = calls[i];
  }
  if (!finished) rn.errors.push_back({"", Fault::kCancelled, "renewal cancelled"});
  // Only nodes that answered "not yours" prove anything: an unreachable node may still
  // hold our key. Lost once fewer than a quorum could possibly still confirm.
  rn.lost = not_ours > node_count() - q;
  rn.refused_quorum = rn.refused > node_count() - q;
  if (!rn.lost && rn.votes >= q) {
    auto until_ = validity_deadline(start, options_.ttl, options_.drift_factor, options_.drift_fixed);
    if (until_ > clock_.now()) {
      rn.confirmed = true;
      rn.valid_until = until_;
    } else {
      rn.errors.push_back({"", Fault::kTimeout, "renewal confirmed too late to extend the lease"});
    }
  }
  rn.sent = start;
  rn.took = clock_.now() - start;
  return rn;
}

std::vector<CallPtr> RedlockBackend::send_release(const std::vector<bool>& only) {
  // The freed key becomes the line head's turn (lock/scripts.h kReleaseFair), with fair =
  // false too: a line formed by fair daemons of the key is served first (send_acquire).
  return send(kReleaseFair, {held_key(), keys_.line, keys_.fence}, {options_.lease_id, window_arg_, keys_.channel}, only,
              Send::kAlways);
}

void RedlockBackend::note_not_released(std::size_t i, const ReleaseReply& r, Release& out) const {
  if (!r.other_type.empty() && out.other_type.empty()) out.other_type = nodes_[i].name + ": " + r.other_type;
  // Another holder's lease where ours stood. A waiter's turn is not one (nobody runs on it
  // yet), nor is a node the grant missed: another contender's key there is no news.
  if (r.holder.empty() || turn_of(r.holder) || pause_of(r.holder) || !was_ours(i)) return;
  out.taken.push_back({nodes_[i].name, r.holder, r.fence});
}

Release RedlockBackend::release() noexcept {
  holding_ = false;
  try {
    sweep();
    auto calls = send_release({});
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
    const auto again = closed_under_us(calls);
    if (any_of(again)) {
      auto retried = send_release(again);
      wait(retried, nullptr, false);
      sweep();
      for (std::size_t i = 0; i < calls.size(); ++i) {
        if (again[i]) calls[i] = retried[i];
      }
    }
    // Cluster: while the slot migrates, a script that names the line (absent on the
    // source) is refused (TRYAGAIN, or a script that touched a "non local key"). The lease
    // must go all the same: released plainly there (the head wakes at its own timer).
    std::vector<bool> plain(calls.size(), false);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& c = calls[i];
      plain[i] = c && c->state() == Call::State::kReplied && !c->ok() &&
                 (c->error().find("TRYAGAIN") != std::string::npos ||
                  c->error().find("non local key") != std::string::npos);
    }
    if (any_of(plain)) {
      auto retried = send(kRelease, {held_key()}, {options_.lease_id, keys_.channel}, plain, Send::kAlways);
      wait(retried, nullptr, false);
      sweep();
      for (std::size_t i = 0; i < calls.size(); ++i) {
        if (plain[i]) calls[i] = retried[i];
      }
    }
    Release out;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& c = calls[i];
      if (c && !c->done()) ++out.unanswered;
      if (c && c->done() && !c->ok() && out.error.empty()) out.error = c->error();
      if (!c || !c->ok()) continue;
      auto r = parse_release_reply(c->reply().get());
      if (r && r->released) {
        ++out.released;
        if (!r->published) ++out.unpublished;
        out.unfair_listeners += r->unfair_listeners;
        out.line_broken += r->line_broken ? 1 : 0;
      } else if (r) {
        note_not_released(i, *r, out);
      }
    }
    return out;
  } catch (...) {
    // Release never throws; the caller logs the count.
    return {};
  }
}

}  // namespace redisgo::lock
