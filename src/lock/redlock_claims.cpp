// RedlockBackend: what is read or written beside the lease: inspect (status), the end and
// the reading of once_per claims (the claim itself: redlock_once.cpp), control messages,
// pause and resume.
#include "lock/redlock.h"

#include "lock/replies.h"
#include "lock/replies_admin.h"
#include "lock/replies_line.h"
#include "lock/replies_once.h"
#include "lock/scripts.h"
#include "util/clock.h"

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
    // The status of a claim counts where the claim does, on a quorum: a node that does not
    // answer must not hold up the release that follows.
    quorum_round(kFinishClaim, {claim_key}, {options_.holder, status}, false);
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
      const auto& e = r->claims[k];
      if (e.holder.empty()) continue;  // no claim there
      // The most complete record any node has (one with the exit status wins).
      if (!out[k] || (out[k]->status.empty() && !e.status.empty())) out[k] = e;
    }
  }
  return out;
}

Published RedlockBackend::publish(const std::string& channel, const std::string& message) {
  Published out;
  auto calls = round(kPublish, {}, {channel, message}, true);
  for (const auto& c : calls) {
    if (!c || !c->done()) continue;
    auto v = c->ok() ? parse_publish_reply(c->reply().get()) : std::nullopt;
    if (v) {
      ++out.accepted;
      out.receivers += v->receivers;
      continue;
    }
    out.refused = out.refused || c->fault() == Fault::kAuth;
    if (out.error.empty()) out.error = c->ok() ? "unexpected reply to PUBLISH" : c->error();
  }
  return out;
}

namespace {
/// What pause and resume count: nodes where there was a pause (a pause is always recorded).
int paused_there(const PauseReply&) { return 1; }
int paused_there(const ResumeReply& r) { return r.was_paused ? 1 : 0; }

/// pause and resume answer {recorded or was paused, woken}: `parse` is the script's parser.
template <class Parse>
Published wake_round(const std::vector<CallPtr>& calls, Parse parse) {
  Published out;
  for (const auto& c : calls) {
    if (auto r = c && c->ok() ? parse(c->reply().get()) : std::nullopt) {
      ++out.accepted;
      out.receivers += paused_there(*r);
      out.unwoken += r->woken ? 0 : 1;
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
                          true),
                    parse_pause_reply);
}

Published RedlockBackend::resume() {
  std::vector<std::string> keys{keys_.pause(), keys_.line};
  keys.insert(keys.end(), slot_keys_.begin(), slot_keys_.end());
  return wake_round(
      round(kResume, keys, {window_arg_, keys_.channel, std::to_string(options_.restart_guard.count())}, true),
      parse_resume_reply);
}

int RedlockBackend::slots_beyond_limit() {
  if (options_.limit >= kMaxSlots) return 0;
  int most = -1;
  // A daemon of a larger limit holds its slot on a quorum, which any quorum of answers meets:
  // the look is asked before a child starts, and a silent node must not delay the child.
  for (const auto& c : quorum_round(kSlotsBeyond, keys_.slots_from(options_.limit), {}, true)) {
    auto v = c && c->ok() ? parse_slots_beyond_reply(c->reply().get()) : std::nullopt;
    if (v) most = std::max(most, static_cast<int>(v->held));
  }
  return most;
}

std::optional<PauseRecord> RedlockBackend::read_pause() {
  auto calls = round(kReadPause, {keys_.pause()}, {}, true);
  std::vector<PauseRecord> seen;
  for (const auto& c : calls) {
    auto r = c && c->ok() ? parse_read_pause_reply(c->reply().get()) : std::nullopt;
    if (!r || r->pttl_ms == -2) continue;
    seen.push_back({r->by, r->reason, r->since_ms, r->until_ms, r->pttl_ms});
  }
  if (static_cast<int>(seen.size()) < quorum()) return std::nullopt;
  return seen.front();
}

}  // namespace redisgo::lock
