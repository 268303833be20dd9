// RedlockBackend: what is read or written beside the lease: inspect (status), the end and
// the reading of once_per claims (the claim itself: redlock_once.cpp), control messages,
// pause and resume.
#include "lock/redlock.h"

#include "lock/fencing.h"
#include "lock/replies.h"
#include "lock/scripts.h"
#include "util/clock.h"
#include "util/text.h"

namespace redisgo::lock {

using redis::Call;
using redis::CallPtr;
using redis::Fault;

std::vector<NodeView> RedlockBackend::inspect() {
  sweep();
  auto calls = round(kInspect, {held_key(), keys_.fence}, {}, true);
  std::vector<NodeView> views(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& v = views[i];
    const auto& c = calls[i];
    v.node = nodes_[i].name;
    if (nodes_[i].conn->located() && !nodes_[i].conn->current().host.empty()) v.server = nodes_[i].conn->current().str();
    v.peer = nodes_[i].conn->peer_info();
    if (!c->ok()) {
      auto e = error_of(i, c);
      v.fault = e.fault;
      v.error = e.message;
      continue;
    }
    auto r = parse_inspect_reply(c->reply().get());
    if (!r) {
      v.fault = Fault::kProtocol;
      v.error = nodes_[i].conn->describe() + ": unexpected reply to the inspect script";
      continue;
    }
    v.reachable = true;
    v.held = r->held;
    v.holder = r->holder;
    v.pttl_ms = r->pttl_ms;
    v.token = r->token;
    v.bad_fence = r->bad_fence;
    v.uptime_s = r->uptime_s;
  }
  return views;
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

namespace {
/// pause and resume answer {done 1/0, woken 1/0}.
Published wake_round(const std::vector<CallPtr>& calls) {
  Published out;
  for (const auto& c : calls) {
    const bool shaped = c && c->ok() && c->reply().is_array() && c->reply().size() == 2;
    if (shaped) {
      ++out.accepted;
      out.receivers += redis::as_integer(c->reply().element(0)).value_or(0);
      out.unwoken += redis::as_integer(c->reply().element(1)).value_or(0) == 0 ? 1 : 0;
      continue;
    }
    if (!c || !c->done()) continue;
    out.refused = out.refused || redis::is_refusal(c->fault());
    if (out.error.empty()) out.error = c->ok() ? "unexpected reply" : c->error();
  }
  return out;
}
}  // namespace

Published RedlockBackend::pause(const PauseRecord& pause, Millis ttl) {
  std::vector<std::string> keys{keys_.pause(), keys_.line};
  keys.insert(keys.end(), slot_keys_.begin(), slot_keys_.end());
  return wake_round(round(kPause, keys,
                          {pause.by, pause.reason, std::to_string(pause.since_ms), std::to_string(pause.until_ms),
                           std::to_string(ttl.count()), window_arg_, keys_.channel,
                           std::to_string(options_.restart_guard.count())},
                          true));
}

Published RedlockBackend::resume() {
  std::vector<std::string> keys{keys_.pause(), keys_.line};
  keys.insert(keys.end(), slot_keys_.begin(), slot_keys_.end());
  return wake_round(round(kResume, keys, {window_arg_, keys_.channel, std::to_string(options_.restart_guard.count())}, true));
}

int RedlockBackend::slots_beyond_limit() {
  if (options_.limit >= kMaxSlots) return 0;
  int most = -1;
  for (const auto& c : round(kSlotsBeyond, keys_.slots_from(options_.limit), {}, true)) {
    auto v = c && c->ok() ? redis::as_integer(c->reply().get()) : std::nullopt;
    if (v) most = std::max(most, static_cast<int>(*v));
  }
  return most;
}

std::optional<PauseRecord> RedlockBackend::read_pause() {
  auto calls = round(kReadPause, {keys_.pause()}, {}, true);
  std::vector<PauseRecord> seen;
  for (const auto& c : calls) {
    if (!c || !c->ok() || !c->reply().is_array() || c->reply().size() != 5) continue;
    const auto& r = c->reply();
    PauseRecord p;
    p.ttl_ms = redis::as_integer(r.element(0)).value_or(-2);
    if (p.ttl_ms == -2) continue;
    p.by = shown_text(redis::as_string(r.element(1)).value_or(""));
    p.reason = shown_text(redis::as_string(r.element(2)).value_or(""));
    p.since_ms = parse_count(redis::as_string(r.element(3)).value_or(""));
    p.until_ms = parse_count(redis::as_string(r.element(4)).value_or(""));
    seen.push_back(std::move(p));
  }
  if (static_cast<int>(seen.size()) < quorum()) return std::nullopt;
  return seen.front();
}

}  // namespace redisgo::lock
