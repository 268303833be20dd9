// `redisgo_task handover`: ask the current holder to step down, then wait until another
// holder has the lease (redisgo_task(1), COMMANDS: handover).
#include <poll.h>

#include <chrono>
#include <optional>
#include <string>

#include "commands/quorum_view.h"
#include "commands/status.h"
#include "log/logging.h"
#include "util/duration.h"
#include "util/exit_status.h"
#include "wiring/servers.h"

namespace redisgo::commands {

using wiring::lease_options;
using Millis = std::chrono::milliseconds;

namespace {

/// The key's state as the nodes say it, how many of them refused our credentials or
/// TLS, and the first error any of them gave.
struct Look {
  QuorumView view;
  int refused = 0;
  std::string error;
};

Look look(lock::LeaseAdmin& backend, int quorum) {
  auto nodes = backend.inspect();
  Look l;
  l.view = quorum_view(nodes, quorum);
  for (const auto& n : nodes) {
    l.refused += redis::is_refusal(n.fault) ? 1 : 0;
    if (l.error.empty()) l.error = n.error;
  }
  return l;
}

/// Waits up to `limit` for a holder other than `leader`, asking `leader` again on
/// `channel` every second while it still holds the lease. 0 once another holder has it
/// (said on `out`), else 75 (why, on `err`).
int await_takeover(lock::LeaseAdmin& backend, int quorum, const std::string& channel, const std::string& leader,
                   const std::string& token_label, Millis limit, std::ostream& out, std::ostream& err) {
  using std::chrono::steady_clock;
  const auto deadline = steady_clock::now() + limit;
  auto last_ask = steady_clock::now();
  // Asked again while it still holds the lease (a message it missed), never once it let
  // go: a leader back from its step_down_hold with no standby about must not be sent off
  // a second time.
  bool let_go = false;
  while (steady_clock::now() < deadline) {
    ::poll(nullptr, 0, 100);  // a status read every 100 ms: a few commands per second
    const QuorumView now_view = look(backend, quorum).view;
    // A woken waiter's turn, or a pause answered for a holder, is nobody's job running yet.
    if (now_view.state == State::kHeld && now_view.holder != leader && !lock::turn_of(now_view.holder) &&
        !lock::pause_of(now_view.holder)) {
      out << "handed over: " << log::printable(now_view.holder) << " holds the lease now (" << token_label
          << token_text(now_view)
          << ")\n";
      return output_ok(out) ? 0 : kExitIoError;
    }
    let_go = let_go || now_view.state != State::kHeld || now_view.holder != leader;
    if (!let_go && steady_clock::now() - last_ask >= std::chrono::seconds(1)) {
      backend.publish(channel, leader);
      last_ask = steady_clock::now();
    }
  }
  if (!let_go) {
    err << "redisgo_task: handover: " << log::printable(leader) << " did not step down within " << format_duration(limit)
        << " (a oneshot holder, or one that cannot hear the control channel)\n";
  } else {
    err << "redisgo_task: handover: " << log::printable(leader) << " stepped down, but no other holder took the lease within "
        << format_duration(limit) << " (no standby?); it contends again after its step_down_hold\n";
  }
  return kExitTempFail;
}

/// How many nodes have a standby waiting: anyone in the key's line, or (fair = false, an older
/// version) listening for its release. -1 when fewer than `quorum` nodes could tell.
int nodes_with_a_standby(lock::LeaseAdmin& backend, int quorum, bool fair, bool& liveness_unknown) {
  int read = 0, with = 0;
  liveness_unknown = false;
  // A waiter killed without leaving stays in the line until the next release: counted only
  // while somebody listens on its wake channel (a dead standby must not pass for one). A user
  // without PUBSUB NUMSUB (an ACL without +pubsub|numsub) reads -1 there: counted as live.
  constexpr int kLooked = 64;
  for (const auto& line : backend.read_line(kLooked)) {
    if (!line.reachable) continue;
    std::int64_t live = std::max<std::int64_t>(0, line.length - kLooked);
    for (const auto& e : line.entries) {
      live += e.listeners != 0 ? 1 : 0;
      liveness_unknown = liveness_unknown || e.listeners < 0;
    }
    if (line.outside > 0) live += line.outside;
    // Listeners outside the line unknown: with fair = true every standby of this config
    // waits in the line, so the line alone tells; with fair = false only they would.
    if (line.outside < 0 && live == 0 && !fair) continue;
    ++read;
    if (live > 0) ++with;
  }
  return read < quorum ? -1 : with;
}

}  // namespace

int run_handover(const config::Config& config, std::optional<Millis> timeout, int slot, bool force, std::ostream& out,
                 std::ostream& err) {
  const Millis limit = timeout.value_or(config.redis.expire + std::chrono::seconds(5));
  const lock::LeaseKeys keys = lock::LeaseKeys::derive(config.redis.key);
  lock::LeaseOptions options = lease_options(config, "handover");
  options.slot = slot;  // what inspect() reads
  const std::unique_ptr<lock::LeaseAdmin> backend = lock::make_redis_backend(options);
  const std::string what = config.task.limit > 1 ? "slot " + std::to_string(slot) + " of key " : "key ";
  // A semaphore's slots share one fence counter: what it holds is the key's newest token,
  // not this slot's, and is labelled so.
  const std::string token_label = config.task.limit > 1 ? "the key's newest token " : "token ";
  const int quorum = backend->quorum();
  const Look first_look = look(*backend, quorum);
  const QuorumView& before = first_look.view;
  if (before.reachable < quorum) {
    err << "redisgo_task: handover: no quorum of nodes could be read (" << before.reachable << "/"
        << backend->node_count() << " reachable, quorum " << quorum << ")"
        << (first_look.error.empty() ? "" : ": " + log::printable(first_look.error)) << "\n";
    return first_look.refused > 0 ? kExitNoPerm : kExitUnavailable;
  }
  if (before.state != State::kHeld) {
    err << "redisgo_task: handover: " << what << log::printable(config.redis.key)
        << (before.state == State::kFree ? " is not held by anyone" : " has no holder with a quorum")
        << ": nothing to hand over\n";
    return kExitTempFail;
  }
  const std::string leader = before.holder;
  // Paused, nobody would take over: the handover would only stop the job.
  if (const auto pause = force ? std::nullopt : backend->read_pause()) {
    err << "redisgo_task: handover: " << what << log::printable(config.redis.key) << " is "
        << log::printable(lock::describe_pause(*pause))
        << ": no standby would take over, so " << log::printable(leader)
        << " was not asked to step down; `redisgo_task resume` first (or `pause --stop` to stop it)\n";
    return kExitTempFail;
  }
  // With no standby waiting, the leader would stop its child and nobody would start one for
  // its step_down_hold: a planned switchover must not stop the only copy of a service.
  bool liveness_unknown = false;
  const int standby_nodes = force ? quorum : nodes_with_a_standby(*backend, quorum, config.redis.fair, liveness_unknown);
  if (standby_nodes >= 0 && standby_nodes < quorum) {
    err << "redisgo_task: handover: no standby is waiting for " << what << log::printable(config.redis.key)
        << " (nobody in its waiting line or listening for its release"
        << (backend->node_count() > 1 ? " on a quorum of nodes" : "") << "): " << log::printable(leader)
        << " was not asked to step down, as nothing would take over; start a standby first, or --force to "
           "stop it anyway\n";
    return kExitTempFail;
  }
  if (liveness_unknown && standby_nodes >= quorum) {
    // Attack round: with the ops recipe of old (no +pubsub|numsub), waiters killed without
    // leaving passed for standbys and the only copy of the service was stopped.
    err << "redisgo_task: handover: warning: could not ask whether the waiters in line are alive (the user lacks "
           "+pubsub|numsub); a standby killed without leaving the line counts as one, so the job may stay stopped "
           "for step_down_hold if none is alive\n";
  }
  if (standby_nodes < 0) {
    err << "redisgo_task: handover: warning: could not read the waiting line on a quorum of nodes; asking without "
           "knowing whether a standby waits\n";
  }
  // The leader acts on a message naming its own id, so a leader that took over meanwhile
  // is never asked by mistake. Sent again every second (await_takeover): a leader whose
  // subscription was down for a moment hears the next one.
  const lock::Published first = backend->publish(keys.control, leader);
  if (first.accepted == 0) {
    // Refused by an ACL (the user lacks the channel or PUBLISH): the config's credentials
    // are the problem, as with a refused AUTH (77); otherwise nobody could be reached.
    err << "redisgo_task: handover: no node accepted the control message on " << keys.control << ": "
        << log::printable(first.error)
        << (first.refused ? " (grant it with ACL SETUSER <user> &" + keys.control + " +publish)" : "") << "\n";
    return first.refused ? kExitNoPerm : kExitUnavailable;
  }
  out << "asked " << log::printable(leader) << " to step down (" << what << log::printable(config.redis.key) << ", "
      << token_label << token_text(before) << ")\n";
  if (first.receivers == 0) {
    err << "redisgo_task: handover: warning: nobody is listening on " << keys.control
        << " yet (a oneshot holder ignores handover; a supervise leader subscribes as it starts); asking again\n";
  }
  return await_takeover(*backend, quorum, keys.control, leader, token_label, limit, out, err);
}

}  // namespace redisgo::commands
