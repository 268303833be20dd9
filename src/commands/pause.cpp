#include "commands/pause.h"

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "commands/quorum_view.h"
#include "daemon/servers.h"
#include "log/logging.h"
#include "util/duration.h"
#include "util/exit_status.h"

namespace redisgo::commands {

namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// "alice@ops1": who paused (the sudo caller rather than root, when there is one).
std::string operator_name() {
  std::string user;
  if (const char* sudo = std::getenv("SUDO_USER"); sudo && *sudo) user = sudo;
  if (user.empty()) {
    if (const passwd* pw = ::getpwuid(::geteuid())) user = pw->pw_name;
  }
  if (user.empty()) user = "uid " + std::to_string(::geteuid());
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return user + "@" + (host[0] ? host : "unknown-host");
}

/// The failure of a write that did not reach a quorum: 77 when a node refused it.
int not_on_a_quorum(const char* what, const lock::Published& p, const lock::LeaseBackend& backend,
                    const std::string& pause_key, std::ostream& err) {
  err << "redisgo_task: " << what << ": written on " << p.accepted << " of " << backend.node_count()
      << " node(s), fewer than the quorum of " << backend.quorum() << (p.error.empty() ? "" : ": " + log::printable(p.error))
      << (p.refused ? " (grant this user the key " + pause_key + " and HSET, PEXPIRE, PTTL, HMGET and DEL)" : "") << "\n";
  return p.refused ? kExitNoPerm : kExitUnavailable;
}

}  // namespace

int run_pause(const config::Config& config, Millis duration, const std::string& reason, bool stop, std::ostream& out,
              std::ostream& err) {
  auto backend = lock::make_redis_backend(daemon::lease_options(config, "pause"));
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
    return not_on_a_quorum("pause", written, *backend, keys.pause(), err);
  }
  out << "paused key " << log::printable(config.redis.key) << " until " << utc_text(record.until_ms / 1000) << " (for "
      << format_duration(duration) << ", by " << log::printable(record.by)
      << (reason.empty() ? "" : ": " + log::printable(reason)) << ")\n";
  const QuorumView now = quorum_view(backend->inspect(), backend->quorum());
  if (now.state != State::kHeld || lock::pause_of(now.holder)) return output_ok(out) ? 0 : kExitIoError;
  if (stop) {
    // As `handover` asks: the leader stops its child, releases and, paused, waits.
    const lock::Published asked = backend->publish(keys.control, now.holder);
    if (asked.receivers == 0) {
      err << "redisgo_task: pause: " << log::printable(now.holder)
          << " holds the key but heard no stop request (a oneshot holder, or one that cannot hear " << keys.control
          << "): it runs until its job ends\n";
      return kExitTempFail;
    }
    out << "asked " << log::printable(now.holder) << " to stop its job and release\n";
  } else {
    out << log::printable(now.holder)
        << " still holds the key: its job runs on until it ends (a supervise leader keeps its lease and restarts); "
           "--stop stops it now\n";
  }
  return output_ok(out) ? 0 : kExitIoError;
}

int run_resume(const config::Config& config, std::ostream& out, std::ostream& err) {
  auto backend = lock::make_redis_backend(daemon::lease_options(config, "resume"));
  const auto before = backend->read_pause();
  const lock::Published done = backend->resume();
  if (done.accepted < backend->quorum()) {
    return not_on_a_quorum("resume", done, *backend, lock::LeaseKeys::derive(config.redis.key).pause(), err);
  }
  if (done.receivers == 0) {
    out << "key " << log::printable(config.redis.key) << " was not paused\n";
  } else {
    out << "resumed key " << log::printable(config.redis.key)
        << (before ? " (" + log::printable(lock::describe_pause(*before)) + ")" : "") << "\n";
  }
  return output_ok(out) ? 0 : kExitIoError;
}

}  // namespace redisgo::commands
