#include "commands/pause.h"

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>

#include "commands/quorum_view.h"
#include "lock/lease.h"
#include "log/logging.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/exit_status.h"
#include "wiring/holder.h"
#include "wiring/servers.h"

namespace redisgo::commands {

/// "alice@ops1": who paused (the sudo caller rather than root, when there is one).
std::string operator_name() {
  std::string user;
  if (const char* sudo = std::getenv("SUDO_USER"); sudo && *sudo) user = sudo;
  if (user.empty()) {
    if (const passwd* pw = ::getpwuid(::geteuid())) user = pw->pw_name;
  }
  if (user.empty()) user = "uid " + std::to_string(::geteuid());
  return user + "@" + wiring::holder_head("");  // this host's name, as in holder ids
}

namespace {

/// What an ACL user needs for `pause` and `resume` (README "A fleet view").
std::string rights(const lock::LeaseKeys& keys) {
  return "the keys " + keys.key + " and " + keys.base + ":*, the channels " + keys.base +
         ":*, and +eval +evalsha +get +set +pttl +hset +hmget +pexpire +del +publish +zrange +zremrangebyrank";
}

/// The failure of a write that did not reach a quorum: 77 when a node refused it.
int not_on_a_quorum(const char* what, const lock::Published& p, const lock::LeaseAdmin& backend,
                    const lock::LeaseKeys& keys, std::ostream& err) {
  err << "redisgo_task: " << what << ": written on " << p.accepted << " of " << backend.node_count()
      << " node(s), fewer than the quorum of " << backend.quorum() << (p.error.empty() ? "" : ": " + log::printable(p.error))
      << (p.refused ? " (an ACL user that pauses needs " + rights(keys) + ")" : "") << "\n";
  return p.refused ? kExitNoPerm : kExitUnavailable;
}

/// Waiters that a refused PUBLISH left asleep: said, 77.
int not_woken(const char* what, const lock::LeaseKeys& keys, const std::string& until, std::ostream& err) {
  err << "redisgo_task: " << what << ": done, but this user may not PUBLISH on " << keys.base
      << ":*: the waiters were not woken and sleep until " << until << " (an ACL user that pauses needs " << rights(keys)
      << ")\n";
  return kExitNoPerm;
}

/// Who holds slot `slot` now, when a real holder does (not a turn, not the pause).
std::optional<std::string> holder_of(lock::LeaseAdmin& backend, int slot) {
  backend.select_slot(slot);
  const QuorumView v = quorum_view(backend.inspect(), backend.quorum());
  if (v.state != State::kHeld || lock::turn_of(v.holder) || lock::pause_of(v.holder)) return std::nullopt;
  return v.holder;
}

}  // namespace

int run_pause(const config::Config& config, Millis duration, const std::string& reason, bool stop, std::ostream& out,
              std::ostream& err) {
  const std::unique_ptr<lock::LeaseAdmin> backend = lock::make_redis_backend(wiring::lease_options(config, "pause"));
  const lock::LeaseKeys keys = lock::LeaseKeys::derive(config.redis.key);
  lock::PauseRecord record;
  record.by = operator_name();
  record.reason = reason;
  record.since_ms = wall_ms();
  record.until_ms = record.since_ms + duration.count();
  const lock::Published written = backend->pause(record, duration);
  if (written.accepted < backend->quorum()) {
    // A pause on a minority would only take nodes away from every acquisition: dropped.
    backend->resume();
    return not_on_a_quorum("pause", written, *backend, keys, err);
  }
  out << "paused key " << log::printable(config.redis.key) << " until " << utc_text(record.until_ms / 1000) << " (for "
      << format_duration(duration) << ", by " << log::printable(record.by)
      << (reason.empty() ? "" : ": " + log::printable(reason)) << ")\n";
  if (written.unwoken > 0) return not_woken("pause", keys, "the end of the pause it replaced", err);
  int code = 0;
  int held = 0;
  for (int slot = 0; slot < config.task.limit; ++slot) {
    const auto holder = holder_of(*backend, slot);
    if (!holder) continue;
    ++held;
    const std::string which = config.task.limit > 1 ? " (slot " + std::to_string(slot) + ")" : "";
    if (!stop) {
      out << log::printable(*holder) << which << " still holds the key: its job runs on until it ends"
          << (config.task.mode == config::Mode::kSupervise ? " (a supervise leader keeps its lease, restarts included)"
                                                            : "")
          << "; --stop stops it now\n";
      continue;
    }
    // As `handover` asks, in words of its own (so that the leader says and counts it as a
    // pause, not a handover): it stops its child, releases and, paused, waits.
    const lock::Published asked = backend->publish(keys.control, lock::kPauseStopPrefix + *holder);
    if (asked.refused) {
      err << "redisgo_task: pause: may not PUBLISH on " << keys.control << " to ask " << log::printable(*holder) << which
          << " to stop: " << log::printable(asked.error) << "\n";
      code = kExitNoPerm;
    } else if (asked.receivers == 0) {
      err << "redisgo_task: pause: " << log::printable(*holder) << which
          << " holds the key but heard no stop request (a oneshot holder, or one that cannot hear " << keys.control
          << "): it runs until its job ends\n";
      code = code ? code : kExitTempFail;
    } else {
      out << "asked " << log::printable(*holder) << which << " to stop its job and release\n";
    }
  }
  // Nothing runs and, paused, nothing starts: what --stop is for, so no failure; said, so
  // that a script can tell it from a holder that was asked.
  if (stop && held == 0) out << "nobody holds the key: there is no job to stop\n";
  return output_ok(out) ? code : kExitIoError;
}

int run_resume(const config::Config& config, std::ostream& out, std::ostream& err) {
  const std::unique_ptr<lock::LeaseAdmin> backend = lock::make_redis_backend(wiring::lease_options(config, "resume"));
  const lock::LeaseKeys keys = lock::LeaseKeys::derive(config.redis.key);
  const auto before = backend->read_pause();
  const lock::Published done = backend->resume();
  if (done.accepted < backend->quorum()) return not_on_a_quorum("resume", done, *backend, keys, err);
  if (done.receivers == 0) {
    out << "key " << log::printable(config.redis.key) << " was not paused\n";
  } else {
    out << "resumed key " << log::printable(config.redis.key)
        << (before ? " (" + log::printable(lock::describe_pause(*before)) + ")" : "") << "\n";
  }
  if (done.unwoken > 0 && done.receivers > 0) {
    return not_woken("resume", keys, before && before->until_ms > 0 ? utc_text(before->until_ms / 1000) : "its end", err);
  }
  return output_ok(out) ? 0 : kExitIoError;
}

}  // namespace redisgo::commands
