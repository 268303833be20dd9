#include "daemon/daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <vector>

#include "backoff/backoff.h"
#include "daemon/state_machine.h"
#include "lock/renewer.h"
#include "log/logging.h"
#include "process/child.h"
#include "process/signals.h"
#include "redis/subscriber.h"
#include "systemd/notify.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/strings.h"

namespace redisgo::daemon {
namespace {

using config::Mode;

/// How long a failed subscriber waits before trying that node again (doubling).
constexpr Millis kResubscribeMin{500};
constexpr Millis kResubscribeMax{30'000};
/// Least delay before retrying a child that could not be started at all.
constexpr Millis kSpawnRetryMin{1000};
/// A repeated acquisition error is logged at warn at most this often.
constexpr Millis kErrorLogInterval{10'000};

std::string hex(const unsigned char* data, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

/// A release-channel subscription to one node, resubscribed with its own backoff.
struct NodeSubscription {
  std::string node;
  redis::Subscriber subscriber;
  Clock::time_point retry_at{};
  Millis retry_delay = kResubscribeMin;
  explicit NodeSubscription(const redis::ConnectionOptions& o) : node(o.endpoint.str()), subscriber(o) {}
};

/// What the wait between attempts ended with.
enum class WaitEnd { kTimer, kReleased, kShutdown };

class Runner {
 public:
  explicit Runner(const TaskOptions& options)
      : opts_(options),
        cfg_(options.config),
        lease_opts_(lease_options(cfg_, options.holder)),
        keys_(lock::LeaseKeys::derive(cfg_.redis.key)),
        log_(log::get("daemon")),
        watchdog_(notifier_, clock_) {}

  int run();

 private:
  // --- contending ---
  std::optional<int> contend();
  /// Sleeps `wait`, ended early by a stop request, and with `wake_on_release` by a
  /// message on the release channel.
  WaitEnd wait_for(Millis wait, bool wake_on_release);
  /// SPEC: stopped while waiting for the lease, oneshot exits 75 and supervise 0.
  int stopped_while_waiting() const;
  /// Subscribes the nodes that are not yet (due for a retry); true if one became active.
  bool ensure_subscribed();
  int drain_subscriptions();
  bool any_subscribed() const;
  // --- leading ---
  std::optional<int> lead(const lock::Acquisition& acquired);
  bool spawn_child(std::uint64_t token, std::optional<process::Child>& child, int& spawn_failure);
  void log_release(int released);
  // --- shared ---
  /// Reads pending signals. TERM/INT set stop_requested_; others are returned for forwarding.
  std::vector<int> read_signals();
  int poll_fds(std::vector<pollfd>& fds, Millis timeout);
  Millis watchdog_cap(Millis timeout) const;

  const TaskOptions& opts_;
  const config::Config& cfg_;
  lock::LeaseOptions lease_opts_;
  lock::LeaseKeys keys_;
  std::shared_ptr<spdlog::logger> log_;
  const Clock& clock_ = SystemClock::instance();
  systemd::Notifier notifier_;
  systemd::Watchdog watchdog_;
  process::SignalFd signals_;
  Interrupt renewer_wake_;
  std::unique_ptr<lock::LeaseBackend> backend_;
  std::unique_ptr<backoff::Backoff> backoff_;
  std::vector<std::unique_ptr<NodeSubscription>> subscriptions_;
  bool stop_requested_ = false;
  int stop_signal_ = SIGTERM;
  std::string last_error_;
  Clock::time_point last_error_logged_{};
};

int Runner::poll_fds(std::vector<pollfd>& fds, Millis timeout) {
  timeout = watchdog_cap(timeout);
  int rc = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<Millis::rep>(timeout.count(), 1 << 30)));
  if (rc < 0 && errno != EINTR) throw_errno("poll", errno);
  watchdog_.heartbeat();
  return std::max(rc, 0);
}

Millis Runner::watchdog_cap(Millis timeout) const {
  if (auto p = watchdog_.period()) return std::min(timeout, *p);
  return timeout;
}

std::vector<int> Runner::read_signals() {
  std::vector<int> forward;
  while (auto sig = signals_.read()) {
    if (*sig == SIGTERM || *sig == SIGINT) {
      if (!stop_requested_) {
        log_->info("received {}, stopping", config::signal_name(*sig));
        notifier_.stopping();
      }
      stop_requested_ = true;
      stop_signal_ = *sig;
    } else {
      forward.push_back(*sig);
    }
  }
  return forward;
}

int Runner::run() {
  // Only the main loop's acquisitions watch the signalfd: a stop must not wait on a hung node.
  lock::LeaseOptions main_opts = lease_opts_;
  main_opts.cancel_fd = signals_.fd();
  backend_ = lock::make_redis_backend(main_opts, clock_);
  std::uint64_t seed;
  if (::getrandom(&seed, sizeof seed, 0) != sizeof seed) seed = static_cast<std::uint64_t>(::getpid());
  backoff_ = backoff::make(cfg_.backoff, seed);
  for (const auto& node : lease_opts_.nodes) subscriptions_.push_back(std::make_unique<NodeSubscription>(node));

  log_->info("contending for key={} as holder={} mode={} nodes={} expire={} cron={}", cfg_.redis.key, opts_.holder,
             config::to_string(cfg_.task.mode), join(cfg_.redis.nodes, ","), format_duration(cfg_.redis.expire),
             format_duration(cfg_.redis.cron));
  notifier_.ready();
  notifier_.status("standby");
  for (;;) {
    if (auto code = contend()) return *code;
  }
}

bool Runner::any_subscribed() const {
  return std::any_of(subscriptions_.begin(), subscriptions_.end(),
                     [](const auto& s) { return s->subscriber.active(); });
}

bool Runner::ensure_subscribed() {
  auto now = clock_.now();
  bool added = false;
  for (auto& s : subscriptions_) {
    if (s->subscriber.active() || now < s->retry_at) continue;
    try {
      s->subscriber.subscribe(keys_.channel, signals_.fd());
      s->retry_delay = kResubscribeMin;
      added = true;
      log_->debug("subscribed to {} on {}", keys_.channel, s->node);
    } catch (const Error& e) {
      log_->debug("cannot subscribe to the release channel: {}", e.what());
      s->retry_at = now + s->retry_delay;
      s->retry_delay = std::min(s->retry_delay * 2, kResubscribeMax);
    }
  }
  return added;
}

int Runner::drain_subscriptions() {
  int messages = 0;
  for (auto& s : subscriptions_) messages += s->subscriber.drain();
  return messages;
}

WaitEnd Runner::wait_for(Millis wait, bool wake_on_release) {
  auto until_tp = clock_.now() + wait;
  for (;;) {
    if (stop_requested_) return WaitEnd::kShutdown;
    auto left = until(until_tp, clock_.now());
    if (left <= Millis(0)) return WaitEnd::kTimer;
    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
    if (wake_on_release) {
      for (auto& s : subscriptions_) {
        if (s->subscriber.active()) fds.push_back({s->subscriber.fd(), POLLIN, 0});
      }
    }
    poll_fds(fds, left);
    read_signals();  // nothing to forward while there is no child
    if (wake_on_release && drain_subscriptions() > 0 && !stop_requested_) return WaitEnd::kReleased;
  }
}

int Runner::stopped_while_waiting() const { return cfg_.task.mode == Mode::kOneshot ? kExitTempFail : 0; }

std::optional<int> Runner::contend() {
  int attempts = 0;
  bool recheck = false;  // the attempt right after a new subscription does not count
  backoff_->reset();
  for (;;) {
    if (stop_requested_) return stopped_while_waiting();
    drain_subscriptions();  // messages from before this attempt are stale
    lock::Acquisition acq;
    try {
      acq = backend_->acquire();
    } catch (const Error& e) {
      acq.errors.push_back(e.what());
    }
    if (!recheck) ++attempts;
    if (acq.acquired) {
      backoff_->reset();
      return lead(acq);
    }
    if (!acq.errors.empty()) {
      std::string err = join(acq.errors, "; ");
      auto now = clock_.now();
      if (err != last_error_ || now - last_error_logged_ >= kErrorLogInterval) {
        log_->warn("acquire attempt {} failed on {} node(s): {}", attempts, acq.errors.size(), err);
        last_error_ = err;
        last_error_logged_ = now;
      }
    }
    backoff_->observe({acq.errors.empty(), acq.holder_ttl_ms});
    MissContext miss;
    miss.mode = cfg_.task.mode;
    miss.wait_flag = opts_.wait;
    miss.monitor_try_all = cfg_.redis.monitor_try_all;
    miss.retries_count = cfg_.redis.retries_count;
    miss.attempts = attempts;
    miss.backoff = backoff_->next();
    miss.holder_ttl_ms = acq.holder_ttl_ms;
    miss.subscribed = any_subscribed();
    miss.backoff_max = cfg_.backoff.max;
    AfterMiss next = after_miss(miss);
    if (next.give_up) {
      log_->info("lease not acquired after {} attempt(s){}; giving up", attempts,
                 acq.holder.empty() ? "" : " (held by " + acq.holder + ")");
      return kExitTempFail;
    }
    // Subscribe only once there is something to wait for: an uncontended run costs no
    // extra connection. A release between the attempt above and the SUBSCRIBE would be
    // missed, so a new subscription is followed at once by another attempt.
    recheck = ensure_subscribed();
    if (recheck) continue;
    log_->debug("lease busy{}; next attempt in {}", acq.holder.empty() ? "" : " (held by " + acq.holder + ")",
                format_duration(next.wait));
    switch (wait_for(next.wait, true)) {
      case WaitEnd::kShutdown: return stopped_while_waiting();
      case WaitEnd::kReleased: log_->debug("release message received; trying now"); break;
      case WaitEnd::kTimer: break;
    }
  }
}

bool Runner::spawn_child(std::uint64_t token, std::optional<process::Child>& child, int& spawn_failure) {
  process::SpawnOptions spawn;
  spawn.argv = cfg_.task.command;
  spawn.workdir = cfg_.task.workdir;
  spawn.env = cfg_.task.env;
  // systemd's notify and watchdog variables address the daemon, the unit's main process.
  // A child that speaks sd_notify would otherwise report READY/STATUS/WATCHDOG as if it
  // were the service (NotifyAccess=all lets it; under NotifyAccess=main systemd logs a
  // rejection for each), and with WATCHDOG_PID absent it would even feed the watchdog.
  spawn.unset_env = {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"};
  spawn.env["REDISGO_TASK_KEY"] = cfg_.redis.key;
  spawn.env["REDISGO_TASK_TOKEN"] = std::to_string(token);
  spawn.env["REDISGO_TASK_HOLDER"] = opts_.holder;
  spawn.env["REDISGO_TASK_EXPIRE_MS"] = std::to_string(cfg_.redis.expire.count());
  try {
    child.emplace(process::Child::spawn(spawn));
    log_->info("child started pid={} token={}", child->pid(), token);
    return true;
  } catch (const process::SpawnError& e) {
    log_->error("cannot start the child: {}", e.what());
    spawn_failure = e.exit_code();
  } catch (const Error& e) {
    log_->error("cannot start the child: {}", e.what());
    spawn_failure = 126;
  }
  return false;
}

void Runner::log_release(int released) {
  // release() counts the nodes where a lease of ours was deleted; elsewhere it had
  // expired, was taken, or the node did not answer (then it expires by its TTL).
  if (released > 0) {
    log_->info("released key={} on {} of {} node(s)", cfg_.redis.key, released, backend_->node_count());
  } else {
    log_->warn("release deleted nothing for key={}: the lease had already expired or was taken, or no node answered",
               cfg_.redis.key);
  }
}

std::optional<int> Runner::lead(const lock::Acquisition& acquired) {
  const auto& task = cfg_.task;
  const Millis ttl = cfg_.redis.expire;
  log_->info("acquired key={} token={} valid for {}", cfg_.redis.key, acquired.token,
             format_duration(until(acquired.valid_until, clock_.now())));
  notifier_.status("leader token=" + std::to_string(acquired.token));
  renewer_wake_.clear();
  auto renewer = std::make_unique<lock::Renewer>(lock::make_redis_backend(lease_opts_, clock_), cfg_.redis.cron,
                                                 acquired.valid_until, renewer_wake_, clock_);

  std::optional<process::Child> child;
  StopCause cause = StopCause::kNone;
  Clock::time_point stop_kill_at{};     // latest SIGKILL time of the stop in progress
  bool sigkill_sent = false;
  std::optional<Clock::time_point> restart_at;
  std::optional<Clock::time_point> timeout_at;
  std::uint64_t renewals_seen = 0;
  std::optional<AfterExit> outcome;     // set when the leader phase ends
  int spawn_failure = 0;

  auto start = [&]() {
    cause = StopCause::kNone;
    sigkill_sent = false;
    restart_at.reset();
    if (!spawn_child(acquired.token, child, spawn_failure)) return false;
    if (task.timeout && task.mode == Mode::kOneshot) timeout_at = clock_.now() + *task.timeout;
    return true;
  };
  auto begin_stop = [&](StopCause why, int sig, Clock::time_point kill_at, const std::string& reason) {
    if (cause != StopCause::kNone || !child || !child->running()) return;
    cause = why;
    stop_kill_at = kill_at;
    log_->warn("stopping child pid={} with {}: {}", child->pid(), config::signal_name(sig), reason);
    if (why == StopCause::kLeaseLost || why == StopCause::kDeadline) notifier_.status("lease lost: " + reason);
    child->signal_group(sig);
  };
  // The lease comes first: stop the child when the renewer lost the lease or the local
  // deadline is within kill_grace (SPEC invariant 2), or when it ran past its timeout.
  auto check_lease = [&](Clock::time_point now) {
    if (!child || !child->running() || cause != StopCause::kNone) return;
    const auto deadline = renewer->valid_until();
    const auto sched = stop_schedule(deadline, task.kill_grace, ttl);
    if (renewer->lost()) {
      begin_stop(StopCause::kLeaseLost, task.kill_signal, std::min(sched.kill_at, now + task.kill_grace),
                 renewer->lost_reason());
    } else if (now >= sched.term_at) {
      begin_stop(StopCause::kDeadline, task.kill_signal, sched.kill_at,
                 "no confirmed renewal; lease deadline in " + format_duration(until(deadline, now)));
    } else if (timeout_at && now >= *timeout_at) {
      begin_stop(StopCause::kTimeout, task.kill_signal, std::min(sched.kill_at, now + task.kill_grace),
                 "ran past timeout " + format_duration(*task.timeout));
    }
  };
  // The child ended (or never started): decide what comes next.
  auto on_child_end = [&](int code, bool child_never_started = false) {
    ExitContext ec{task.mode, task.restart, task.restart_delay, code, cause};
    if (stop_requested_ && cause == StopCause::kNone) ec.cause = StopCause::kShutdown;
    AfterExit next = after_exit(ec);
    if (next.kind == AfterExit::Kind::kRestart && !stop_requested_ && !renewer->lost()) {
      // A command that cannot even be started (127/126) is retried no faster than once a
      // second, whatever restart_delay says, so a typo cannot spin the loop.
      if (child_never_started) next.delay = std::max(next.delay, kSpawnRetryMin);
      log_->info("restarting child in {} (restart={})", format_duration(next.delay), config::to_string(task.restart));
      restart_at = clock_.now() + next.delay;
    } else {
      if (next.kind == AfterExit::Kind::kRestart) next.kind = AfterExit::Kind::kRecontend;
      outcome = next;
    }
  };

  if (!start()) on_child_end(spawn_failure, true);

  while (!outcome) {
    auto now = clock_.now();
    const auto deadline = renewer->valid_until();
    const auto sched = stop_schedule(deadline, task.kill_grace, ttl);
    bool running = child && child->running();

    check_lease(now);
    if (running && cause != StopCause::kNone && !sigkill_sent && now >= std::min(stop_kill_at, sched.kill_at)) {
      log_->warn("child pid={} still running after {}; sending SIGKILL to its group", child->pid(),
                 format_duration(task.kill_grace));
      child->signal_group(SIGKILL);
      sigkill_sent = true;
    }
    if (!running && restart_at) {
      if (stop_requested_) {
        outcome = AfterExit{AfterExit::Kind::kExit, 0, Millis(0)};
        break;
      }
      if (renewer->lost() || !can_start_child(now, deadline, task.kill_grace, ttl)) {
        notifier_.status("lease lost: " + (renewer->lost() ? renewer->lost_reason() : "deadline before restart"));
        outcome = AfterExit{AfterExit::Kind::kRecontend, 0, task.restart_delay};
        break;
      }
      if (now >= *restart_at) {
        if (!start()) on_child_end(spawn_failure, true);
        continue;
      }
    }
    if (renewer->renewals() != renewals_seen) {
      renewals_seen = renewer->renewals();
      log_->debug("lease renewed ({}); valid for {}", renewals_seen, format_duration(until(deadline, now)));
    }

    // Sleep until the next thing that could need doing.
    Clock::time_point next = now + Millis(60'000);
    if (running && cause == StopCause::kNone) next = std::min(next, sched.term_at);
    if (running && cause != StopCause::kNone && !sigkill_sent) next = std::min({next, stop_kill_at, sched.kill_at});
    if (running && timeout_at && cause == StopCause::kNone) next = std::min(next, *timeout_at);
    if (!running && restart_at) next = std::min({next, *restart_at, sched.term_at});
    if (running && (sigkill_sent || child->exit_fd() < 0)) next = std::min(next, now + Millis(50));  // re-check reaping

    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}, {renewer_wake_.fd(), POLLIN, 0}};
    if (running && child->exit_fd() >= 0) fds.push_back({child->exit_fd(), POLLIN, 0});
    poll_fds(fds, until(next, clock_.now()));
    if (fds[1].revents & POLLIN) renewer_wake_.clear();
    // After any wake-up, a pause included (SIGSTOP, a VM freeze), the deadline is
    // checked before anything else: a child that ended while the lease ran out did not
    // run to its end under the lease.
    check_lease(clock_.now());

    for (int sig : read_signals()) {
      if (child && child->running()) {
        log_->info("forwarding {} to child pid={}", config::signal_name(sig), child->pid());
        child->signal_group(sig);
      }
    }
    if (stop_requested_ && child && child->running() && cause == StopCause::kNone) {
      // supervise stops its child the configured way; oneshot forwards the signal received.
      int sig = task.mode == Mode::kSupervise ? task.kill_signal : stop_signal_;
      auto sched_now = stop_schedule(renewer->valid_until(), task.kill_grace, ttl);
      begin_stop(StopCause::kShutdown, sig, std::min(sched_now.kill_at, clock_.now() + task.kill_grace),
                 "shutdown requested");
    }
    if (child && child->running()) {
      if (auto code = child->try_wait()) {
        log_->info("child exited status={}", *code);
        on_child_end(*code);
      }
    }
  }

  if (child && child->running()) child->terminate_group(SIGKILL, Millis(0));  // never outlive the lease phase
  if (renewer->lost()) log_->warn("lease lost: {}", renewer->lost_reason());
  // Release through whichever connections are freshest: the renewer's once it has been
  // renewing (the main ones may have idled for hours), else the main ones that just
  // acquired (the renewer's may not even be open yet: a short job costs no reconnect).
  if (renewer->renewals() > 0) {
    log_release(renewer->stop_and_release());
  } else {
    renewer->stop();
    log_release(backend_->release());
  }
  if (outcome->kind == AfterExit::Kind::kExit) return outcome->exit_code;
  notifier_.status("standby");
  log_->info("contending again in {}", format_duration(outcome->delay));
  if (wait_for(outcome->delay, false) == WaitEnd::kShutdown) return stopped_while_waiting();
  return std::nullopt;
}

}  // namespace

std::string default_holder_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  unsigned char random[16] = {};
  std::size_t got = 0;
  while (got < sizeof random) {
    ssize_t n = ::getrandom(random + got, sizeof random - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("getrandom", errno);
    }
    got += static_cast<std::size_t>(n);
  }
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + hex(random, sizeof random);
}

lock::LeaseOptions lease_options(const config::Config& config, const std::string& holder) {
  lock::LeaseOptions o;
  const auto& r = config.redis;
  for (const auto& node : r.nodes) {
    redis::ConnectionOptions c;
    std::string why;
    auto endpoint = redis::Endpoint::parse(node, &why);
    if (!endpoint) throw Error("invalid node '" + node + "': " + why);
    c.endpoint = *endpoint;
    c.connect_timeout = r.connect_timeout;
    c.io_timeout = r.io_timeout;
    c.username = r.username;
    c.password = r.password;
    c.db = r.db;
    o.nodes.push_back(std::move(c));
  }
  o.key = r.key;
  o.holder = holder;
  o.ttl = r.expire;
  o.drift_factor = r.drift_factor;
  o.drift_fixed = r.drift_fixed;
  o.node_timeout = r.io_timeout;
  return o;
}

int run_task(const TaskOptions& options) {
  Runner runner(options);
  return runner.run();
}

}  // namespace redisgo::daemon
