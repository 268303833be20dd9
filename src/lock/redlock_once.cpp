// RedlockBackend: once_per's claim of a slot (redisgo_task(1), once_per; docs/DESIGN.md
// "Restart guard", once_per claims), the read of the nodes' side of its rule, and `adopt`.
#include <algorithm>

#include "lock/redlock.h"
#include "lock/replies_once.h"
#include "lock/scripts.h"
#include "util/duration.h"

namespace redisgo::lock {

using redis::Call;
using redis::CallPtr;
using redis::Fault;

/// What the claim round left on each node.
struct RedlockBackend::ClaimTally {
  std::vector<ClaimReply> replies;
  std::vector<bool> counted;   ///< claimed, and it counts as unclaimed there (the rule, W' included)
  std::vector<bool> durable;   ///< ... and, after make_durable(), fsynced and replicated as needed
  std::vector<std::string> notes;
  std::int64_t highest = 0;    ///< W': the highest witness of the read before and of the claim replies
  int yes = 0;                 ///< nodes that took our claim
  int guarded = 0;             ///< nodes that answered but do not count
  int unanswered = 0;          ///< still on its way: it may yet write our claim
  bool written = false;        ///< our claim is, or may be, on some node
};

namespace {

bool any_located(const std::vector<redis::ConnectionOptions>& nodes) {
  return std::any_of(nodes.begin(), nodes.end(), [](const auto& o) { return o.locator != nullptr; });
}

std::string ms_text(Millis d) { return format_duration(d); }

}  // namespace

Claim RedlockBackend::claim(const ClaimRequest& q) {
  Claim out;
  const std::size_t n = nodes_.size();
  const bool guard = q.guard_from_ms > 0;
  sweep();
  auto calls = send(kClaim, {held_key(), q.claim_key, q.witness_key},
                    {options_.lease_id, std::to_string(q.token), std::to_string(q.start_ms), std::to_string(q.ttl.count()),
                     guard ? std::to_string(q.guard_from_ms) : "", std::to_string(q.slot_s),
                     q.highest_witness > 0 ? std::to_string(q.highest_witness) : "",
                     std::to_string(q.witness_ttl.count()), any_located(options_.nodes) ? "1" : ""},
                    {}, Send::kAlways);
  auto reply_of = [&](std::size_t i) {
    return calls[i] && calls[i]->ok() ? parse_claim_reply(calls[i]->reply().get()) : ClaimReply{};
  };
  // Every node's answer is awaited (each within its own timeouts): the more nodes hold the
  // claim, the more hosts find it, and a witness seen in any reply raises W' for all. A node
  // that has another claim ends it at once: the slot was run.
  auto decided = [&] {
    for (std::size_t i = 0; i < n; ++i) {
      if (calls[i]->done() && reply_of(i).kind == ClaimReply::Kind::kTaken) return true;
    }
    return false;
  };
  const bool finished = wait(calls, decided, true);
  sweep();
  ClaimTally t;
  tally_claims(q, calls, t, out);
  // Our claim is dropped wherever it was written or may yet be (a claim still in flight: the
  // drop goes behind it on the same connection). A partial claim left behind made every host
  // skip that slot as "run already" though nothing ran.
  out.notes = t.notes;
  if (out.kind == Claim::Kind::kTaken) {
    if (t.written) finish_claim(q.claim_key, "");
    return out;
  }
  const bool durable_done = finished && make_durable(q, t, out);
  const int counted = static_cast<int>(std::count(t.counted.begin(), t.counted.end(), true));
  out.counted = counted;
  const int durable = static_cast<int>(std::count(t.durable.begin(), t.durable.end(), true));
  if (durable_done && durable >= quorum()) {
    out.kind = Claim::Kind::kClaimed;
    return out;
  }
  if (t.written) finish_claim(q.claim_key, "");
  if (!durable_done) {
    out.error = "cancelled";
    out.cancelled = true;
    return out;
  }
  if (counted >= quorum()) {
    out.kind = Claim::Kind::kNotDurable;
  } else if (t.guarded > 0 && counted + t.guarded >= quorum()) {
    out.kind = Claim::Kind::kGuarded;
  } else {
    out.error = "the slot was claimed on " + std::to_string(t.yes) + " node(s)" +
                (t.unanswered > 0 ? " (" + std::to_string(t.unanswered) + " more had not answered)" : "") +
                ", fewer than the quorum of " + std::to_string(quorum()) +
                (t.written ? "; our claim was dropped again" : "");  // each node's error is in `notes`
  }
  return out;
}

void RedlockBackend::tally_claims(const ClaimRequest& q, const std::vector<CallPtr>& calls, ClaimTally& t,
                                  Claim& out) {
  const std::size_t n = nodes_.size();
  auto reply_of = [&](std::size_t i) {
    return calls[i] && calls[i]->ok() ? parse_claim_reply(calls[i]->reply().get()) : ClaimReply{};
  };
  t.highest = q.highest_witness;
  for (std::size_t i = 0; i < n; ++i) {
    t.replies.push_back(reply_of(i));
    const auto& r = t.replies.back();
    if (r.kind == ClaimReply::Kind::kClaimed || r.kind == ClaimReply::Kind::kGuarded) {
      t.highest = std::max(t.highest, r.state.witness);
    }
  }
  t.counted.assign(n, false);
  t.durable.assign(n, false);
  std::vector<std::string> errors;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = t.replies[i];
    const std::string& name = nodes_[i].name;
    if (r.kind == ClaimReply::Kind::kTaken && out.kind != Claim::Kind::kTaken) {
      out.kind = Claim::Kind::kTaken;
      out.previous = {r.holder, r.token, r.start_ms, r.status};
    } else if (r.kind == ClaimReply::Kind::kClaimed) {
      ++t.yes;
      const OnceVerdict v = once_verdict(r.state, q.slot_s, q.guard_from_ms, t.highest);
      // Counted by its witness when it claimed, but a later reply showed a higher one: its
      // data is older than that node's. Claimed there, not counted.
      t.counted[i] = !(r.how == Counted::kWitness && v.how != Counted::kWitness);
      t.notes.push_back(name + (t.counted[i] ? ": counts as unclaimed (" : ": does not count: ") + v.why +
                        (t.counted[i] ? ")" : ""));
      if (!t.counted[i]) ++t.guarded;
      if (r.how == Counted::kAdopt) {
        out.adopted.push_back(name + " (" + r.state.adopted_by + ", " + utc_text(r.state.adopted_ms / 1000) + ")");
      }
    } else if (r.kind == ClaimReply::Kind::kGuarded) {
      ++t.guarded;
      t.notes.push_back(name + ": does not count: " + once_verdict(r.state, q.slot_s, q.guard_from_ms, t.highest).why);
    } else if (r.kind == ClaimReply::Kind::kNotOurs) {
      errors.push_back(name + ": the lease is no longer ours");
    } else if (calls[i]->done()) {
      out.refused = out.refused || calls[i]->fault() == Fault::kAuth;
      errors.push_back(calls[i]->ok() ? name + ": unexpected reply to the claim script" : calls[i]->error());
    } else {
      ++t.unanswered;
    }
  }
  for (const auto& e : errors) t.notes.push_back(e);
  t.written = t.yes > 0 || t.unanswered > 0;
}

bool RedlockBackend::make_durable(const ClaimRequest& q, ClaimTally& t, Claim& out) {
  const std::size_t n = nodes_.size();
  const std::string wait_ms = std::to_string(kDurableWait.count());
  // Sent behind the claim on its own connection: WAITAOF and WAIT cover the writes this
  // connection made before them (a script cannot block on them itself).
  std::vector<CallPtr> fsynced(n), replicated(n), all;
  for (std::size_t i = 0; i < n; ++i) {
    if (!t.counted[i]) continue;
    const auto& r = t.replies[i];
    auto& conn = *nodes_[i].conn;
    if (q.guard_from_ms > 0 && r.fsync) {
      fsynced[i] = conn.send({"WAITAOF", "1", "0", wait_ms}, kDurableWait);
      nodes_[i].inflight.push_back(fsynced[i]);
      all.push_back(fsynced[i]);
    }
    if (conn.located() && r.state.replicas > 0) {
      replicated[i] = conn.send({"WAIT", "1", wait_ms}, kDurableWait);
      nodes_[i].inflight.push_back(replicated[i]);
      all.push_back(replicated[i]);
    } else if (conn.located() && r.state.replicas == 0) {
      out.unreplicated.push_back(nodes_[i].name);
    }
  }
  const bool finished = all.empty() || wait(all, nullptr, true);
  sweep();
  for (std::size_t i = 0; i < n; ++i) {
    if (!t.counted[i]) continue;
    bool ok = true;
    std::string why;
    if (const auto& c = fsynced[i]) {
      const bool shaped = c->ok() && c->reply().is_array() && c->reply().size() == 2;
      const auto local = shaped ? redis::as_integer(c->reply().element(0)) : std::nullopt;
      if (!local || *local < 1) {
        ok = false;
        why = c->ok() ? "WAITAOF did not confirm the fsync within " + ms_text(kDurableWait) +
                            " (appendfsync no never does; set everysec or always)"
                      : "WAITAOF failed: " + c->error();
      }
    }
    if (const auto& c = replicated[i]; c && ok) {
      const auto acked = c->ok() ? redis::as_integer(c->reply().get()) : std::nullopt;
      if (!acked || *acked < 1) {
        ok = false;
        why = c->ok() ? "no replica acknowledged it within " + ms_text(kDurableWait) + " (WAIT)"
                      : "WAIT failed: " + c->error();
      }
    }
    t.durable[i] = ok;
    if (!ok) out.notes.push_back(nodes_[i].name + ": its claim does not count: " + why);
  }
  return finished;
}

std::vector<OnceNode> RedlockBackend::read_once(const std::string& witness_key, const std::vector<std::string>& claim_keys,
                                                std::vector<std::vector<std::optional<ClaimRecord>>>* claims) {
  std::vector<std::string> keys{witness_key};
  keys.insert(keys.end(), claim_keys.begin(), claim_keys.end());
  auto calls = round(kReadOnce, keys, {any_located(options_.nodes) ? "1" : ""}, true);
  std::vector<OnceNode> out(nodes_.size());
  if (claims) claims->assign(nodes_.size(), std::vector<std::optional<ClaimRecord>>(claim_keys.size()));
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& v = out[i];
    v.node = nodes_[i].name;
    const auto& c = calls[i];
    if (!c || !c->ok()) {
      const auto e = error_of(i, c);
      v.fault = e.fault;
      v.error = e.message;
      continue;
    }
    auto r = parse_read_once_reply(c->reply().get(), claim_keys.size());
    if (!r) {
      v.fault = Fault::kProtocol;
      v.error = nodes_[i].conn->describe() + ": unexpected reply to the once_per read";
      continue;
    }
    r->state.node = v.node;
    v = std::move(r->state);
    v.reachable = true;
    if (!r->claims.empty()) v.claim = r->claims.front();
    if (claims) (*claims)[i] = std::move(r->claims);
  }
  return out;
}

Adoption RedlockBackend::adopt(const std::string& claim_key, const std::string& witness_key,
                                             std::int64_t slot_s, const std::string& by, Millis witness_ttl) {
  Adoption out;
  out.written_ms.assign(nodes_.size(), 0);
  auto calls = round(kAdopt, {claim_key, witness_key}, {std::to_string(slot_s), by, std::to_string(witness_ttl.count())},
                     true);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto& c = calls[i];
    if (const auto r = c && c->ok() ? parse_adopt_reply(c->reply().get()) : std::nullopt) {
      if (r->kind == AdoptReply::Kind::kAdopted) {
        out.written_ms[i] = r->adopted_ms;
      } else if (!out.claimed) {
        out.claimed = ClaimRecord{r->holder, r->token, r->start_ms, r->status};
        out.claimed_on = nodes_[i].name;
      }
      continue;
    }
    if (c && c->done()) out.refused = out.refused || redis::is_refusal(c->fault());
    out.errors.push_back(c && c->ok() ? nodes_[i].name + ": unexpected reply to the adopt script" : error_of(i, c).message);
  }
  return out;
}

void RedlockBackend::drop_adoption(const std::string& witness_key, std::int64_t slot_s,
                                   const std::vector<std::int64_t>& written_ms) noexcept {
  try {
    std::vector<bool> only(nodes_.size(), false);
    for (std::size_t i = 0; i < nodes_.size() && i < written_ms.size(); ++i) only[i] = written_ms[i] > 0;
    auto calls = send_each(kDropAdopt, {witness_key},
                           [&](std::size_t i) { return std::vector<std::string>{std::to_string(slot_s), std::to_string(written_ms[i])}; },
                           only, Send::kAlways);
    wait(calls, nullptr, true);
    sweep();
  } catch (...) {
    // Never throws: a record left on a minority declares the slot there only.
  }
}

}  // namespace redisgo::lock
