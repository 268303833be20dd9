// RedlockBackend: the waiting line outside acquire and release (docs/DESIGN.md "The waiting
// line"): leaving it, and reading it for `status`.
#include "lock/redlock.h"
#include "lock/scripts.h"
#include "redis/reply.h"
#include "util/text.h"

namespace redisgo::lock {

using redis::CallPtr;

std::string RedlockBackend::leave_line() noexcept {
  const bool had_ticket = ticket_ > 0;
  ticket_ = 0;
  written_.assign(nodes_.size(), 0);
  if (!options_.fair || !had_ticket) return {};
  try {
    sweep();
    // Only nodes already connected: leaving must not cost a stopping daemon a connect
    // timeout per dead node. Where it is not sent, the entry goes when a release finds
    // nobody listening on its channel.
    // A plain ZREM, not a script: leaving is no attempt (retries_count = N stays N scripts).
    // Behind it, a look at the keys: a release may have handed us a turn that we will not
    // take, and it is handed on (kPassTurn) rather than left idle for a window. Once the ZREM
    // is in, no release can pick us again, so what the GETs show is all there is.
    const std::string turn = std::string("\1turn:") + options_.holder;
    std::vector<CallPtr> calls(nodes_.size());
    std::vector<std::vector<CallPtr>> looks(nodes_.size());
    std::vector<CallPtr> all;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i].conn->connected()) continue;
      calls[i] = nodes_[i].conn->send({"ZREM", keys_.line, options_.holder});
      nodes_[i].inflight.push_back(calls[i]);
      all.push_back(calls[i]);
      for (const auto& key : slot_keys_) {
        looks[i].push_back(nodes_[i].conn->send({"GET", key}));
        nodes_[i].inflight.push_back(looks[i].back());
        all.push_back(looks[i].back());
      }
    }
    wait(all, nullptr, false);
    std::vector<CallPtr> passes;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      for (std::size_t k = 0; k < looks[i].size(); ++k) {
        const auto& c = looks[i][k];
        if (!c->done() || !c->ok() || redis::as_string(c->reply().get()) != turn) continue;
        passes.push_back(nodes_[i].conn->eval(kPassTurn, {keys_.line, slot_keys_[k]},
                                             {options_.holder, window_arg_, keys_.channel}));
        nodes_[i].inflight.push_back(passes.back());
      }
    }
    if (!passes.empty()) wait(passes, nullptr, false);
    sweep();
    // A node that answered with an error (a user without +zrem would leave its entry without a
    // word). One that did not answer in time is not said: a stopping daemon.
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (calls[i] && calls[i]->done() && !calls[i]->ok() && calls[i]->fault() != redis::Fault::kClosed) {
        return error_of(i, calls[i]).message;
      }
    }
    for (const auto& p : passes) {
      if (p->done() && !p->ok() && p->fault() != redis::Fault::kClosed) {
        return "our turn could not be handed on: " + p->error();
      }
    }
  } catch (...) {
    // Never throws: a waiter that could not say it left is skipped by the next wake.
  }
  return {};
}

std::vector<LineView> RedlockBackend::read_line(int limit) {
  auto calls = round(kReadLine, {keys_.line}, {std::to_string(std::max(1, limit)), keys_.channel}, true);
  std::vector<LineView> out(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    LineView& v = out[i];
    v.node = nodes_[i].name;
    const auto& c = calls[i];
    if (!c || !c->done() || !c->ok()) {
      v.error = error_of(i, c).message;
      continue;
    }
    const redisReply* r = c->reply().get();
    const auto length = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 ? redis::as_integer(r->element[0])
                                                                               : std::nullopt;
    const redisReply* listening =
        r && r->type == REDIS_REPLY_ARRAY && r->elements >= 4 && r->element[3]->type == REDIS_REPLY_ARRAY ? r->element[3]
                                                                                                          : nullptr;
    const redisReply* list = length ? r->element[1] : nullptr;
    if (!length || !list || list->type != REDIS_REPLY_ARRAY || list->elements % 2 != 0) {
      v.error = nodes_[i].conn->describe() + ": unexpected reply reading the waiting line";
      continue;
    }
    v.reachable = true;
    v.length = *length;
    v.outside = redis::as_integer(r->element[2]).value_or(-1);
    for (std::size_t k = 0; k + 1 < list->elements; k += 2) {
      auto holder = redis::as_string(list->element[k]);
      auto score = redis::as_string(list->element[k + 1]);
      if (!holder || !score) continue;
      LineEntry e;
      e.holder = shown_text(*holder);  // shown only (a member written by hand can be 100 KB)
      if (listening && k / 2 < listening->elements) {
        e.listeners = redis::as_integer(listening->element[k / 2]).value_or(-1);
      }
      try {
        e.ticket = static_cast<std::uint64_t>(std::stod(*score));
      } catch (...) {
        e.ticket = 0;
      }
      v.entries.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace redisgo::lock
