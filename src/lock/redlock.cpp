#include "lock/redlock.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <stdexcept>

#include "lock/fencing.h"
#include "redis/scripts.h"
#include "util/error.h"

namespace redisgo::lock {
namespace {

using std::chrono::steady_clock;

Millis effective_node_timeout(const LeaseOptions& o) {
  if (o.node_timeout > Millis(0)) return o.node_timeout;
  if (!o.nodes.empty() && o.nodes.front().io_timeout > Millis(0)) return o.nodes.front().io_timeout;
  return std::max(Millis(1), o.ttl / 4);
}

// A blocking step inside a round (connect, AUTH on reconnect, the write) must not take
// longer than the round itself, or one unreachable node would stall the others' renewal.
redis::ConnectionOptions bounded(redis::ConnectionOptions o, Millis limit) {
  if (o.connect_timeout <= Millis(0) || o.connect_timeout > limit) o.connect_timeout = limit;
  if (o.io_timeout <= Millis(0) || o.io_timeout > limit) o.io_timeout = limit;
  return o;
}

const redisReply* element(const redis::Reply& r, std::size_t i) {
  return i < r.size() ? r.element(i) : nullptr;
}

std::optional<std::int64_t> as_integer(const redisReply* e) {
  if (e && e->type == REDIS_REPLY_INTEGER) return e->integer;
  return std::nullopt;
}

std::optional<std::string> as_string(const redisReply* e) {
  if (e && (e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_STATUS)) return std::string(e->str, e->len);
  return std::nullopt;
}

}  // namespace

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
  node_timeout_ = effective_node_timeout(options_);
  ttl_arg_ = std::to_string(options_.ttl.count());
  nodes_.reserve(options_.nodes.size());
  for (const auto& n : options_.nodes) nodes_.emplace_back(bounded(n, node_timeout_));
}

void RedlockBackend::node_failed(Node& node, std::string error) noexcept {
  node.conn.disconnect();
  node.backoff = next_node_backoff(node.backoff, options_.node_retry_initial, options_.node_retry_max);
  node.retry_at = clock_.now() + node.backoff;
  node.last_error = std::move(error);
}

void RedlockBackend::node_ok(Node& node) noexcept {
  node.backoff = Millis(0);
  node.retry_at = {};
  node.last_error.clear();
}

std::vector<RedlockBackend::NodeReply> RedlockBackend::round(const redis::Script& script,
                                                             const std::vector<std::string>& keys,
                                                             const std::vector<std::string>& args,
                                                             const std::vector<bool>* only, bool respect_backoff,
                                                             bool cancellable) {
  using Status = NodeReply::Status;
  const std::size_t n = nodes_.size();
  std::vector<NodeReply> out(n);
  std::vector<std::pair<std::size_t, steady_clock::time_point>> pending;  // node, its deadline
  const auto now = clock_.now();

  auto fail = [&](std::size_t i, std::string error) {
    out[i].status = Status::kFailed;
    out[i].error = error;
    node_failed(nodes_[i], std::move(error));
  };

  // Connected nodes first: their requests are on the wire while a reconnect (which
  // blocks up to the bounded connect timeout) is attempted for the others.
  for (bool want_connected : {true, false}) {
    for (std::size_t i = 0; i < n; ++i) {
      Node& node = nodes_[i];
      if (node.conn.connected() != want_connected) continue;
      if (only && !(*only)[i]) continue;
      if (respect_backoff && node.backoff > Millis(0) && now < node.retry_at) {
        out[i].error = node.conn.describe() + ": not retried for another " +
                       std::to_string(until(node.retry_at, now).count()) + " ms after: " + node.last_error;
        continue;  // kSkipped
      }
      try {
        node.conn.send_eval(script, keys, args);
        pending.emplace_back(i, steady_clock::now() + node_timeout_);
      } catch (const std::exception& e) {
        fail(i, e.what());
      }
    }
  }

  std::vector<pollfd> fds;
  while (!pending.empty()) {
    // Each node has node_timeout from its own send: a node sent after another node's
    // blocking reconnect still gets its full time. Every node gets at least one look
    // (a poll with timeout 0 when its time is already up) before it is given up.
    auto earliest = pending.front().second;
    for (const auto& p : pending) earliest = std::min(earliest, p.second);
    const auto left = std::max(Millis(0), std::chrono::ceil<Millis>(earliest - steady_clock::now()));
    fds.clear();
    for (const auto& p : pending) fds.push_back(pollfd{nodes_[p.first].conn.fd(), POLLIN, 0});
    const bool watch_cancel = cancellable && options_.cancel_fd >= 0;
    if (watch_cancel) fds.push_back(pollfd{options_.cancel_fd, POLLIN, 0});
    int rc = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (rc > 0 && watch_cancel && fds.back().revents != 0) {
      // A stop was requested: a waiter must not hang on a slow node (SPEC: within 100 ms).
      for (const auto& p : pending) {
        nodes_[p.first].conn.disconnect();  // its reply would be misread later
        out[p.first].status = Status::kFailed;
        out[p.first].error = nodes_[p.first].conn.describe() + ": cancelled";
      }
      pending.clear();
      break;
    }
    if (rc < 0) {
      if (errno == EINTR) continue;
      const std::string why = errno_message("poll", errno);
      for (const auto& p : pending) fail(p.first, nodes_[p.first].conn.describe() + ": " + why);
      pending.clear();
      break;
    }
    const auto after = steady_clock::now();
    std::vector<std::pair<std::size_t, steady_clock::time_point>> still;
    for (std::size_t k = 0; k < pending.size(); ++k) {
      const std::size_t i = pending[k].first;
      Node& node = nodes_[i];
      if (fds[k].revents != 0) {
        try {
          auto reply = node.conn.read_reply();
          if (reply) {
            out[i].status = Status::kReply;
            out[i].reply = std::move(*reply);
            node_ok(node);
            continue;
          }
          // Partial reply, or NOSCRIPT re-sent as EVAL: keep waiting (until its deadline).
        } catch (const ReplyError& e) {
          // The server answered (the connection is fine) but refused: a "no" vote,
          // without the reconnect backoff meant for unreachable nodes.
          out[i].status = Status::kFailed;
          out[i].error = e.what();
          continue;
        } catch (const std::exception& e) {
          fail(i, e.what());
          continue;
        }
      }
      if (pending[k].second <= after) {
        fail(i, node.conn.describe() + ": no reply within " + std::to_string(node_timeout_.count()) + " ms");
      } else {
        still.push_back(pending[k]);
      }
    }
    pending.swap(still);
  }
  return out;
}

Acquisition RedlockBackend::acquire() {
  using Status = NodeReply::Status;
  Acquisition a;
  const std::size_t n = nodes_.size();
  a.node_tokens.assign(n, 0);
  const auto start = clock_.now();
  auto replies =
      round(redis::kAcquire, {keys_.key, keys_.fence}, {options_.holder, ttl_arg_}, nullptr, true, true);

  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = replies[i];
    if (r.status != Status::kReply) {
      a.errors.push_back(r.error);
      continue;
    }
    auto granted = as_integer(element(r.reply, 0));
    if (granted == 1) {
      auto text = as_string(element(r.reply, 1));
      auto token = text ? parse_token(*text) : std::nullopt;
      if (token && *token > 0) {
        a.node_tokens[i] = *token;
        ++a.votes;
      } else {
        // We hold the key there but cannot use its token; the release below covers it.
        a.errors.push_back(nodes_[i].conn.describe() + ": acquire returned no valid token");
      }
    } else if (granted == 0) {
      auto holder = as_string(element(r.reply, 1));
      auto pttl = as_integer(element(r.reply, 2));
      if (pttl && *pttl > a.holder_ttl_ms) {
        a.holder_ttl_ms = *pttl;
        if (holder) a.holder = *holder;
      } else if (a.holder.empty() && holder) {
        a.holder = *holder;
      }
    } else {
      a.errors.push_back(nodes_[i].conn.describe() + ": unexpected reply to the acquire script");
    }
  }

  bool ok = a.votes >= quorum();
  if (ok) {
    // Fencing across quorums (lock/fencing.h): a quorum must store at least the token.
    const auto token = quorum_token(a.node_tokens);
    auto raise = nodes_to_raise(a.node_tokens, token);
    int at_token = 0;
    for (std::size_t i = 0; i < n; ++i) at_token += (a.node_tokens[i] == token) ? 1 : 0;
    if (std::find(raise.begin(), raise.end(), true) != raise.end()) {
      auto raised = round(redis::kRaiseFence, {keys_.key, keys_.fence}, {options_.holder, std::to_string(token)},
                          &raise, true, true);
      for (std::size_t i = 0; i < n; ++i) {
        if (!raise[i]) continue;
        const auto& r = raised[i];
        if (r.status == Status::kReply && r.reply.is_integer() && r.reply.integer() == 1) {
          ++at_token;
        } else if (r.status != Status::kReply) {
          a.errors.push_back(r.error);
        } else {
          a.errors.push_back(nodes_[i].conn.describe() + ": lease gone before its fence could be raised");
        }
      }
    }
    if (at_token >= quorum()) {
      a.token = token;
    } else {
      ok = false;
      a.errors.push_back("fence raised on " + std::to_string(at_token) + " node(s), fewer than the quorum of " +
                         std::to_string(quorum()));
    }
  }
  if (ok) {
    a.valid_until = validity_deadline(start, options_.ttl, options_.drift_factor, options_.drift_fixed);
    if (a.valid_until <= clock_.now()) {
      ok = false;
      a.errors.push_back("acquired on a quorum, but too late: no validity left of the " +
                         std::to_string(options_.ttl.count()) + " ms lease");
    }
  }
  if (!ok) {
    // Undo this attempt: on the nodes that granted, and also on those that were sent it
    // but did not answer, since their SET may land after our timeout. Not on the nodes
    // that answered "held": the key there is not from this attempt (it may even be a lease
    // of ours that this refused re-acquisition must not destroy).
    std::vector<bool> undo(n, true);
    for (std::size_t i = 0; i < n; ++i) {
      if (replies[i].status == Status::kReply && as_integer(element(replies[i].reply, 0)) == 0) undo[i] = false;
      // A node skipped for its retry backoff was never sent the SET: nothing to undo, and
      // a hung node there would cost every failed attempt a node timeout.
      if (replies[i].status == Status::kSkipped) undo[i] = false;
    }
    // Cancellable: on a stop request a hung node is not waited for; what this attempt may
    // have set there expires by its TTL, and no child was started under it.
    release_on(&undo, true);
    a.token = 0;
    a.valid_until = {};
    return a;
  }
  a.acquired = true;
  return a;
}

Renewal RedlockBackend::renew() {
  using Status = NodeReply::Status;
  Renewal rn;
  const auto start = clock_.now();
  auto replies = round(redis::kRenew, {keys_.key}, {options_.holder, ttl_arg_}, nullptr, true);
  int not_ours = 0;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const auto& r = replies[i];
    if (r.status != Status::kReply) {
      rn.errors.push_back(r.error);
    } else if (r.reply.is_integer() && r.reply.integer() == 1) {
      ++rn.votes;
    } else if (r.reply.is_integer() && r.reply.integer() == 0) {
      ++not_ours;
    } else {
      rn.errors.push_back(nodes_[i].conn.describe() + ": unexpected reply to the renew script");
    }
  }
  // Only nodes that answered "not yours" prove anything: an unreachable node may still
  // hold our key. Lost once fewer than a quorum could possibly still confirm.
  rn.lost = not_ours > node_count() - quorum();
  if (!rn.lost && rn.votes >= quorum()) {
    auto until_ = validity_deadline(start, options_.ttl, options_.drift_factor, options_.drift_fixed);
    if (until_ > clock_.now()) {
      rn.confirmed = true;
      rn.valid_until = until_;
    } else {
      rn.errors.push_back("renewal confirmed too late to extend the lease");
    }
  }
  return rn;
}

int RedlockBackend::release_on(const std::vector<bool>* only, bool cancellable) noexcept {
  try {
    auto replies = round(redis::kRelease, {keys_.key, keys_.channel}, {options_.holder}, only, false, cancellable);
    int released = 0;
    for (const auto& r : replies) {
      if (r.status == NodeReply::Status::kReply && r.reply.is_integer() && r.reply.integer() == 1) ++released;
    }
    return released;
  } catch (...) {
    // Release never throws (STYLE.md "Errors"); the caller logs the count.
    return 0;
  }
}

int RedlockBackend::release() noexcept { return release_on(nullptr); }

std::vector<NodeView> RedlockBackend::inspect() {
  using Status = NodeReply::Status;
  auto replies = round(redis::kInspect, {keys_.key, keys_.fence}, {}, nullptr, false);
  std::vector<NodeView> views(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& v = views[i];
    const auto& r = replies[i];
    v.node = nodes_[i].conn.options().endpoint.str();
    if (r.status != Status::kReply) {
      v.error = r.error;
      continue;
    }
    auto exists = as_integer(element(r.reply, 0));
    auto holder = as_string(element(r.reply, 1));
    auto pttl = as_integer(element(r.reply, 2));
    auto fence = as_string(element(r.reply, 3));
    if (!exists || !holder || !pttl || !fence) {
      v.error = nodes_[i].conn.describe() + ": unexpected reply to the inspect script";
      continue;
    }
    v.reachable = true;
    v.held = *exists == 1;
    v.holder = *holder;
    v.pttl_ms = *pttl;
    v.token = parse_token(*fence).value_or(0);
  }
  return views;
}

}  // namespace redisgo::lock
