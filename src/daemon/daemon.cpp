#include "daemon/daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "backoff/backoff.h"
#include "daemon/health.h"
#include "daemon/servers.h"
#include "daemon/state_machine.h"
#include "daemon/waiting.h"
#include "lock/renewer.h"
#include "log/cause_log.h"
#include "log/logging.h"
#include "metrics/metrics.h"
#include "process/child.h"
#include "process/signals.h"
#include "redis/subscriber.h"
#include "systemd/notify.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/strings.h"
#include "util/timer.h"

namespace redisgo::daemon {
namespace {

using config::Mode;

/// How long the undo of a last failed attempt may take to reach its nodes before a
/// oneshot run that gives up exits.
constexpr Millis kSettleBeforeExit{200};
/// A tree still alive this long after SIGKILL: its keeper does not act (stopped, wedged).
constexpr Millis kForceKillAfter{200};

std::string hex(const unsigned char* data, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

/// A failure's cause, stable across attempts: the node (whether its connection was
/// closed, then refused, it is one node down), or for a failure of the whole round its kind.
std::string cause_key(const lock::NodeError& e) { return e.node.empty() ? redis::to_string(e.fault) : e.node; }

/// The names the lease backend gives its nodes (NodeError::node, Acquisition::answered).
std::vector<std::string> node_names(const lock::LeaseOptions& o) {
  std::vector<std::string> names;
  for (const auto& n : o.nodes) names.push_back(n.locator ? n.locator->name() : n.endpoint.str());
  return names;
}

/// "2026-11-25T10:15:00Z".
std::string utc_text(std::int64_t seconds) {
  const time_t t = static_cast<time_t>(seconds);
  struct tm tm {};
  char buf[32] = "?";
  if (::gmtime_r(&t, &tm)) std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// A claim as a log line shows it: "holder h (token 7, started ..., exit status 0)".
std::string describe_claim(const lock::ClaimRecord& c) {
  std::string out = "holder " + c.holder + " (token " + (c.token.empty() ? "?" : c.token);
  if (!c.start_ms.empty()) {
    try {
      out += ", started " + utc_text(std::stoll(c.start_ms) / 1000);
    } catch (...) {
    }
  }
  out += c.status.empty() ? ", no exit status recorded" : ", exit status " + c.status;
  return out + ")";
}

class Runner {
 public:
  explicit Runner(const TaskOptions& options)
      : opts_(options),
        cfg_(options.config),
        lease_opts_(lease_options(cfg_, options.holder)),
        keys_(lock::LeaseKeys::derive(cfg_.redis.key)),
        log_(log::get("daemon")),
        watchdog_(notifier_, clock_),
        attempt_log_(log::get("lock"), "acquire"),
        renew_log_(log::get("lock"), "renew"),
        restarts_(cfg_.task.restart_limit, cfg_.task.restart_window, cfg_.task.restart_delay),
        waiting_(log_, cfg_.redis.key, terminal_stderr()),
        metrics_(cfg_.redis.key, node_names(lease_opts_)) {}

  int run();

 private:
  enum class WaitEnd { kTimer, kReleased, kSubscribed, kShutdown };

  // --- contending ---
  std::optional<int> contend();
  /// Waits until `until` (on the boot-time clock), ended early by a stop request and, with
  /// `wake_on_release`, by another holder's release message or a subscription that
  /// became active. Keeps the subscriptions up meanwhile.
  WaitEnd wait_until(Clock::time_point until, bool wake_on_release);
  /// Reads and discards what the subscriptions received while nobody listened.
  void drain_subscriptions();
  /// redisgo_task(1), MODES: stopped while waiting for the lease, oneshot exits 75 and supervise 0.
  int stopped_while_waiting() const;
  void report_attempt(const lock::Acquisition& acq);
  /// The restart guard's news from an attempt (docs/DESIGN.md "Restart guard"): a node
  /// that grants nothing yet (once per node and wait), one where the guard cannot apply
  /// (once per node), a holder with a longer `expire` than ours (once).
  void report_guard(const lock::Acquisition& acq);
  int give_up(const lock::Acquisition& acq, int attempts);
  // --- leading ---
  std::optional<int> lead(const lock::Acquisition& acquired);
  /// The child's spawn options for this lease: the config's, plus the REDISGO_TASK_* variables.
  process::SpawnOptions child_spawn(const lock::Acquisition& lease) const;
  bool spawn_child(process::SpawnOptions spawn, Clock::time_point kill_at, std::optional<process::Child>& child,
                   std::string& error, int& code);
  void log_release(const lock::Release& r);
  /// Stops the renewals and releases, logging the outcome.
  void release_lease(lock::Renewer& renewer);
  /// Waits out step_down_hold after stepping down; nullopt to contend again. A planned
  /// step-down (handover) holds step_down_hold as configured; a failing host longer each time.
  std::optional<int> hold_after_step_down(const std::string& why, bool planned);
  /// once_per: before contending, whether this run's slot was run already (exit 75 then).
  std::optional<int> slot_already_run();
  /// once_per: how long a claim is kept, from its writing and from every renewal of its
  /// run's lease: 2 x once_per (redisgo_task(1), MODES), and never less than 2 x expire, so that it outlives
  /// the gap between two renewals and a dead holder's lease.
  Millis claim_ttl() const { return std::max(*cfg_.task.once_per, cfg_.redis.expire) * 2; }
  /// The node health seen in a round, for redisgo_task_node_up.
  void note_nodes(const std::vector<std::string>& answered, const std::vector<lock::NodeError>& errors);
  // --- shared ---
  /// Reads pending signals. TERM/INT set stop_requested_; others are returned for forwarding.
  std::vector<int> read_signals();
  /// poll() on `fds` plus the boot-time timer armed at `wake_at`, for at most `cap`
  /// (steady-clock waits such as a subscriber's retry) and the watchdog's period.
  void poll_until(std::vector<pollfd>& fds, Clock::time_point wake_at, std::optional<Millis> cap = std::nullopt);

  const TaskOptions& opts_;
  const config::Config& cfg_;
  lock::LeaseOptions lease_opts_;
  lock::LeaseKeys keys_;
  std::shared_ptr<spdlog::logger> log_;
  const Clock& clock_ = SystemClock::instance();
  systemd::Notifier notifier_;
  systemd::Watchdog watchdog_;
  process::SignalFd signals_;
  BootTimer timer_;
  Interrupt renewer_wake_;
  std::unique_ptr<lock::LeaseBackend> backend_;
  std::unique_ptr<backoff::Backoff> backoff_;
  std::vector<std::unique_ptr<redis::Subscriber>> subscribers_;
  log::CauseLog attempt_log_;
  log::CauseLog renew_log_;  // used by the renewal thread only, while it runs
  RestartTracker restarts_;
  bool stop_requested_ = false;
  int stop_signal_ = SIGTERM;
  Clock::time_point last_stray_retry_{};  ///< contend(): last attempt re-run after a stray signal
  WaitReporter waiting_;                   ///< the terminal line or the quiet log lines of a long wait
  bool warned_unpublished_ = false;
  bool warned_never_expires_ = false;
  bool warned_longer_lease_ = false;
  bool guard_in_status_ = false;            ///< STATUS= names the restart guard's wait
  std::set<std::string> guard_said_;        ///< nodes whose guard wait was logged (this wait)
  std::set<std::string> unguarded_said_;    ///< nodes where the guard cannot apply, logged
  std::vector<int> subscriber_failures_;  // per subscriber, failures already logged
  log::CauseLog subscribe_log_{log::get("lock"), "subscribe"};
  metrics::Metrics metrics_;
  std::unique_ptr<metrics::Exporter> exporter_;
  std::uint64_t textfile_failures_ = 0;
  log::CauseLog metrics_log_{log::get("metrics"), "metrics"};
  std::optional<std::string> once_key_;   ///< once_per: the claim of this run's slot
  std::int64_t once_slot_s_ = 0;          ///< its start, seconds since the epoch
  std::int64_t started_ms_ = wall_ms();   ///< when this run started (wall clock)
};

void Runner::poll_until(std::vector<pollfd>& fds, Clock::time_point wake_at, std::optional<Millis> cap) {
  if (wake_at == Clock::time_point::max()) {
    timer_.disarm();
  } else {
    timer_.arm(wake_at);
  }
  fds.push_back(pollfd{timer_.fd(), POLLIN, 0});
  if (auto p = watchdog_.period()) cap = cap ? std::min(*cap, *p) : *p;
  int timeout = -1;
  if (cap) timeout = static_cast<int>(std::clamp<Millis::rep>(cap->count(), 0, INT_MAX));
  int rc = ::poll(fds.data(), fds.size(), timeout);
  if (rc < 0 && errno != EINTR) throw_errno("poll", errno);
  if (rc > 0 && fds.back().revents != 0) timer_.clear();
  fds.pop_back();
  watchdog_.heartbeat();
  if (exporter_) {
    // A textfile that can no longer be written (disk full, directory gone) is said once,
    // then summarised; the exporter keeps retrying on its own thread.
    const auto failures = exporter_->textfile_failures();
    if (failures > textfile_failures_) {
      metrics_log_.failure("textfile", "cannot write " + cfg_.metrics.textfile + ": " + exporter_->last_error());
    } else if (failures == textfile_failures_ && failures > 0 && exporter_->last_error().empty()) {
      metrics_log_.success("textfile");
    }
    textfile_failures_ = failures;
  }
}

std::vector<int> Runner::read_signals() {
  std::vector<int> forward;
  while (auto sig = signals_.read()) {
    if (*sig == SIGTERM || *sig == SIGINT) {
      if (!stop_requested_) {
        log_->info("received {}, stopping", config::signal_name(*sig));
        notifier_.stopping();
        stop_signal_ = *sig;  // the first one names the stop; a second does not rename it
      }
      stop_requested_ = true;
    } else {
      forward.push_back(*sig);
    }
  }
  return forward;
}

int Runner::run() {
  // A job whose keeper is killed from outside leaves orphans: they must come here.
  process::set_subreaper();
  // Only the main loop's acquisitions watch the signalfd: a stop must not wait on a hung node.
  lock::LeaseOptions main_opts = lease_opts_;
  main_opts.cancel_fd = signals_.fd();
  main_opts.heartbeat = [this] { watchdog_.heartbeat(); };
  if (auto period = watchdog_.period()) main_opts.heartbeat_every = *period;
  backend_ = lock::make_redis_backend(main_opts, clock_);
  std::uint64_t seed;
  if (::getrandom(&seed, sizeof seed, 0) != sizeof seed) seed = static_cast<std::uint64_t>(::getpid());
  backoff_ = backoff::make(cfg_.backoff, seed);
  for (const auto& node : lease_opts_.nodes) {
    subscribers_.push_back(std::make_unique<redis::Subscriber>(node, keys_.channel));
  }
  subscriber_failures_.assign(subscribers_.size(), 0);

  if (cfg_.metrics.enabled()) {
    // Fails loudly at start (an address in use, a directory that cannot be written), not
    // silently at the first scrape.
    try {
      exporter_ = std::make_unique<metrics::Exporter>(metrics_,
                                                      metrics::ExporterOptions{cfg_.metrics.listen, cfg_.metrics.textfile});
    } catch (const Error& e) {
      log_->error("cannot start [metrics]: {}; nothing was started", e.what());
      return kExitConfig;
    }
  }
  log_->info("contending for key={} as holder={} mode={} {} expire={} cron={}{}", cfg_.redis.key, opts_.holder,
             config::to_string(cfg_.task.mode), describe_servers(cfg_.redis), format_duration(cfg_.redis.expire),
             format_duration(cfg_.redis.cron),
             cfg_.task.limit > 1 ? " limit=" + std::to_string(cfg_.task.limit) : std::string());
  if (exporter_) {
    log_->info("metrics:{}{}", cfg_.metrics.listen.empty() ? "" : " http://" + cfg_.metrics.listen + "/metrics",
               cfg_.metrics.textfile.empty() ? "" : " textfile " + cfg_.metrics.textfile);
  }
  if (auto code = slot_already_run()) return *code;
  if (cfg_.redis.tls.enabled && cfg_.redis.tls.skip_verify) {
    log_->warn("tls_skip_verify = true: the Redis server's certificate is NOT verified (tests only)");
  }
  if (cfg_.redis.topology == config::Topology::kSentinel || cfg_.redis.topology == config::Topology::kCluster) {
    // redisgo_task(1), PRODUCTION REDIS: said once, at start, where an operator looks.
    log_->info("note: Redis replicates asynchronously, so a failover can lose the lease key and let a second "
               "holder in while the first still runs; REDISGO_TASK_TOKEN keeps increasing across it (the fence's "
               "TIME floor): have the protected resource reject lower tokens{}",
               cfg_.redis.topology == config::Topology::kSentinel && cfg_.redis.sentinel_wait_replicas == 0
                   ? "; sentinel_wait_replicas = 1 narrows the window"
                   : "");
  }
  notifier_.ready();
  notifier_.status("standby");
  for (;;) {
    if (auto code = contend()) {
      notifier_.stopping();
      // A last failed attempt's undo (or a release) may still be on its way out.
      backend_->settle(kSettleBeforeExit);
      return *code;
    }
  }
}

void Runner::drain_subscriptions() {
  std::vector<pollfd> fds;
  for (auto& s : subscribers_) fds.push_back(pollfd{s->fd(), s->events(), 0});
  if (::poll(fds.data(), fds.size(), 0) > 0) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) subscribers_[i]->on_ready(fds[i].revents);
    }
  }
  for (auto& s : subscribers_) s->take_payloads();
}

Runner::WaitEnd Runner::wait_until(Clock::time_point until, bool wake_on_release) {
  std::vector<pollfd> fds;
  for (;;) {
    if (stop_requested_) return WaitEnd::kShutdown;
    if (clock_.now() >= until) return WaitEnd::kTimer;
    fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
    std::optional<Millis> cap;
    if (wake_on_release) {
      const auto now = redis::SteadyClock::now();
      for (auto& s : subscribers_) {
        s->maintain(now);
        fds.push_back(pollfd{s->fd(), s->events(), 0});
        if (auto next = s->next_wakeup(); next != redis::SteadyClock::time_point::max()) {
          auto ms = std::max(Millis(0), std::chrono::ceil<Millis>(next - now));
          cap = cap ? std::min(*cap, ms) : ms;
        }
      }
    }
    poll_until(fds, until, cap);
    read_signals();  // nothing to forward while there is no child
    if (!wake_on_release) continue;
    bool released = false, subscribed = false;
    for (std::size_t i = 0; i < subscribers_.size(); ++i) {
      auto& s = subscribers_[i];
      if (fds[i + 1].revents != 0) s->on_ready(fds[i + 1].revents);
      s->maintain(redis::SteadyClock::now());
      for (const auto& holder : s->take_payloads()) {
        // Our own release (or any message naming us) says nothing about another holder.
        if (holder != opts_.holder) released = true;
      }
      if (s->take_became_active()) {
        log_->debug("subscribed to the release channel {} on {}", keys_.channel, s->describe());
        subscribe_log_.success(s->describe());
        subscribed = true;
      }
      if (s->failures() > subscriber_failures_[i]) {
        // A node that answers but refuses the SUBSCRIBE (an ACL user without the channel)
        // leaves us without wake-on-release: say so, once; waits still end at the holder's
        // TTL. A node that is down is reported by the acquisitions already.
        subscriber_failures_[i] = s->failures();
        if (s->last_fault() == redis::Fault::kAuth || s->last_fault() == redis::Fault::kReply) {
          subscribe_log_.failure(s->describe(), s->last_error() + " (standing by without wake-on-release)");
        }
      }
    }
    if (stop_requested_) return WaitEnd::kShutdown;
    if (released) return WaitEnd::kReleased;
    if (subscribed) return WaitEnd::kSubscribed;
  }
}

int Runner::stopped_while_waiting() const { return cfg_.task.mode == Mode::kOneshot ? kExitTempFail : 0; }

void Runner::report_attempt(const lock::Acquisition& acq) {
  for (const auto& node : acq.answered) attempt_log_.success(node);
  for (const auto& e : acq.errors) attempt_log_.failure(cause_key(e), e.message);
  note_nodes(acq.answered, acq.errors);
}

void Runner::report_guard(const lock::Acquisition& acq) {
  for (const auto& node : acq.unguarded) {
    if (!unguarded_said_.insert(node).second) continue;
    log_->warn("the restart guard cannot apply on {}: INFO was refused (an ACL user without +info), so a Redis "
               "restarted empty there could hand the lease to a second holder within expire; grant the user +info",
               node);
  }
  if (acq.longer_lease_ms > 0 && !warned_longer_lease_) {
    warned_longer_lease_ = true;
    log_->warn("key {} is held by {} with {} left, more than our expire of {}: the daemons of this key run different "
               "expire values. The restart guard now waits at least that long, which can still fall short of the "
               "other daemon's expire by its cron: until every daemon of this key runs one expire, a Redis restarted "
               "empty can let a second holder in",
               cfg_.redis.key, log::printable(acq.holder), format_duration(Millis(acq.longer_lease_ms)),
               format_duration(cfg_.redis.expire));
  }
  for (const auto& g : acq.guarded) {
    if (!guard_said_.insert(g.node).second) continue;
    log_->warn("{} has been up for less than expire ({}) and the lease key is not there: if it restarted empty, a "
               "holder may still run its child, so it grants nothing new for {} (restart guard)",
               g.node, format_duration(cfg_.redis.expire), format_duration(Millis(g.left_ms)));
  }
  if (acq.guard_wait_ms >= 0) {
    notifier_.status("standby (restart guard: a Redis node restarted; it grants nothing new for " +
                     format_duration(Millis(acq.guard_wait_ms)) + ")");
    guard_in_status_ = true;
  } else if (guard_in_status_) {
    notifier_.status("standby");
    guard_in_status_ = false;
  }
}

void Runner::note_nodes(const std::vector<std::string>& answered, const std::vector<lock::NodeError>& errors) {
  for (const auto& node : answered) metrics_.set_node_up(node, true);
  for (const auto& e : errors) {
    // An error reply comes from a live server; only a node that did not answer is down.
    if (!e.node.empty() && e.fault != redis::Fault::kReply) metrics_.set_node_up(e.node, false);
  }
}

std::optional<int> Runner::slot_already_run() {
  if (!cfg_.task.once_per) return std::nullopt;
  const Millis period = *cfg_.task.once_per;
  once_slot_s_ = lock::nearest_slot(started_ms_, period);
  once_key_ = keys_.claim(once_slot_s_);
  log_->info("once_per {}: this run belongs to the slot of {}", format_duration(period), utc_text(once_slot_s_));
  // One read, no lease needed: a host that fires while (or after) another runs this slot
  // exits at once instead of waiting for the lease only to find the claim. Unreadable:
  // contend as usual; the claim under the lease decides.
  try {
    const auto claims = backend_->read_claims({*once_key_});
    if (!claims.empty() && claims[0]) {
      log_->info("the slot of {} was run already by {}; not running it again", utc_text(once_slot_s_),
                 describe_claim(*claims[0]));
      return kExitTempFail;
    }
  } catch (const Error& e) {
    log_->debug("could not read the slot's claim before contending: {}", e.what());
  }
  return std::nullopt;
}

int Runner::give_up(const lock::Acquisition& acq, int attempts) {
  bool auth = false;
  int unreachable = 0, refused = 0;
  std::string example;
  for (const auto& e : acq.errors) {
    if (e.node.empty()) continue;  // a failure of the round, not of a node
    auth = auth || e.fault == redis::Fault::kAuth || e.fault == redis::Fault::kTls;
    (e.fault == redis::Fault::kReply || e.fault == redis::Fault::kAuth ? refused : unreachable) += 1;
    if (example.empty()) example = e.message;
  }
  const int answered = backend_->node_count() - unreachable - refused;
  const int code = give_up_code(acq.busy, auth, answered, backend_->quorum());
  if (code == kExitTempFail && (acq.busy > 0 || acq.guarded.empty())) {
    // Busy is the normal outcome of a cron job on every host but one: info, not louder.
    log_->info("lease not acquired after {} attempt(s){}; giving up", attempts,
               acq.holder.empty() ? "" : " (held by " + acq.holder + ")");
  } else if (code == kExitNoPerm) {
    log_->error("lease not acquired after {} attempt(s): Redis refused our credentials ({}); giving up", attempts,
                example);
  } else if (code == kExitTempFail) {
    // Not a busy lease: a Redis node restarted and its guard holds the lease back. Nobody
    // runs the job until it opens, and a cron job that skips for that must say why.
    log_->warn("lease not acquired after {} attempt(s): {} started less than expire ago and grants nothing new for "
               "{} (restart guard); giving up",
               attempts, acq.guarded.front().node, format_duration(Millis(acq.guarded.front().left_ms)));
  } else {
    log_->error("lease not acquired after {} attempt(s): no quorum of Redis nodes ({} unreachable, {} refused: {}); "
                "giving up",
                attempts, unreachable, refused, example);
  }
  return code;
}

std::optional<int> Runner::contend() {
  // Whichever way the wait ends, the terminal line goes.
  struct ClearLine {
    WaitReporter& w;
    ~ClearLine() { w.done(); }
  } clear_line{waiting_};
  const auto began = clock_.now();
  int attempts = 0;
  bool recheck = false;  // the attempt right after a new subscription does not count
  backoff_->reset();
  for (;;) {
    if (stop_requested_) return stopped_while_waiting();
    drain_subscriptions();  // messages from before this attempt are stale
    const auto started = clock_.now();
    lock::Acquisition acq;
    try {
      acq = backend_->acquire();
    } catch (const Error& e) {
      acq.errors.push_back({"", redis::Fault::kNone, e.what()});
    }
    read_signals();
    if (acq.cancelled && stop_requested_) return stopped_while_waiting();
    // Any signal wakes an attempt (it watches the signalfd). One that does not stop us
    // (SIGHUP, SIGWINCH from a resized terminal, ...) is no failure: a cron run must not
    // give up with 75 "busy" because of it. Tried again at once, at most every 100 ms, so
    // a flood of signals cannot make it hammer Redis (invariant 7): a rerun within 100 ms
    // of the last one waits out the rest first (a stop still ends that wait at once).
    if (acq.cancelled && !acq.acquired) {
      const auto next_rerun = last_stray_retry_ + std::chrono::milliseconds(100);
      if (clock_.now() < next_rerun && wait_until(next_rerun, false) == WaitEnd::kShutdown) {
        return stopped_while_waiting();
      }
      last_stray_retry_ = clock_.now();
      continue;
    }
    // With a bounded number of attempts every attempt counts, the re-check after a new
    // subscription included: retries_count = N means at most N requests.
    const bool counted = cfg_.task.mode == Mode::kOneshot && !cfg_.redis.monitor_try_all;
    if (!recheck || counted) ++attempts;
    recheck = false;
    report_attempt(acq);
    report_guard(acq);
    if (acq.acquired) {
      guard_said_.clear();
      attempt_log_.clear();
      waiting_.done();  // before "acquired" is logged on the same terminal
      return lead(acq);
    }
    // How long the lease stays out of reach: the holder's TTL, or else the restart guard's wait.
    const std::int64_t blocked_ms = acq.holder_ttl_ms >= 0 ? acq.holder_ttl_ms : acq.guard_wait_ms;
    backoff_->observe({acq.errors.empty(), blocked_ms});
    if (acq.holder_never_expires && !warned_never_expires_) {
      // No lease of ours ever lacks a TTL: someone set this by hand. Said once; the wait
      // goes on (it may be deleted any moment), paced as for any holder.
      log_->warn("key {} is held by {} without an expiry (set by hand?): it will not free itself; delete it "
                 "(redis-cli DEL) if no such holder runs",
                 cfg_.redis.key, log::printable(acq.holder));
      warned_never_expires_ = true;
    }
    MissContext miss;
    miss.mode = cfg_.task.mode;
    miss.wait_flag = opts_.wait;
    miss.monitor_try_all = cfg_.redis.monitor_try_all;
    miss.retries_count = cfg_.redis.retries_count;
    miss.attempts = attempts;
    miss.backoff = backoff_->next();
    miss.holder_ttl_ms = acq.holder_ttl_ms;
    miss.guard_ms = acq.guard_wait_ms;
    miss.subscribed = std::any_of(subscribers_.begin(), subscribers_.end(), [](const auto& s) { return s->active(); });
    miss.backoff_max = cfg_.backoff.max;
    AfterMiss next = after_miss(miss);
    if (next.give_up) return give_up(acq, attempts);
    waiting_.missed(acq.holder, acq.holder_ttl_ms, attempts, began, clock_.now(), acq.guard_wait_ms);
    // Whatever the strategy says: never sooner than kMinAttemptGap after this attempt
    // began, and never before a quorum of nodes is out of its retry backoff (there would
    // be nothing to send). Only another holder's release cuts the wait short.
    auto wake_at = std::max({clock_.now() + next.wait, started + kMinAttemptGap, acq.not_before});
    log_->debug("lease busy{}; next attempt in {}", acq.holder.empty() ? "" : " (held by " + acq.holder + ")",
                format_duration(until(wake_at, clock_.now())));
    bool rechecking = false;
    for (;;) {
      // At a terminal the line is redrawn every second (the TTL counts down); that
      // costs no request to Redis.
      const auto tick = waiting_.refreshes() ? std::min(wake_at, clock_.now() + std::chrono::seconds(1)) : wake_at;
      const WaitEnd end = wait_until(tick, true);
      if (end == WaitEnd::kShutdown) return stopped_while_waiting();
      if (end == WaitEnd::kTimer && clock_.now() < wake_at) {
        const auto since = std::chrono::duration_cast<Millis>(clock_.now() - started).count();
        auto left = [&](std::int64_t ms) { return ms < 0 ? -1 : std::max<std::int64_t>(0, ms - since); };
        waiting_.missed(acq.holder, left(acq.holder_ttl_ms), attempts, began, clock_.now(), left(acq.guard_wait_ms));
        continue;
      }
      if (end == WaitEnd::kReleased) {
        // Woken by another holder's release: try at once, unless this waiter tried less
        // than kMinAttemptGap ago (a flood of release messages, or a holder crash-looping
        // through the lease, must not drive it faster).
        const auto soon = std::max(started + kMinAttemptGap, acq.not_before);
        if (clock_.now() >= soon) {
          log_->debug("release message received; trying now");
          break;
        }
        if (soon < wake_at) {
          // Said once per wait: a flood of messages must not flood the log either.
          log_->debug("release message received; trying in {}", format_duration(until(soon, clock_.now())));
          wake_at = soon;
        }
        continue;
      }
      if (end == WaitEnd::kSubscribed) {
        // A release between the attempt and the SUBSCRIBE would have gone unheard: try
        // once more as soon as pacing allows (not counted as an attempt).
        auto soon = std::max(started + kMinAttemptGap, acq.not_before);
        if (soon < wake_at) {
          wake_at = soon;
          rechecking = true;
        }
        continue;
      }
      recheck = rechecking;
      break;
    }
  }
}

process::SpawnOptions Runner::child_spawn(const lock::Acquisition& lease) const {
  process::SpawnOptions spawn = spawn_options(cfg_);
  spawn.env["REDISGO_TASK_KEY"] = cfg_.redis.key;
  spawn.env["REDISGO_TASK_TOKEN"] = std::to_string(lease.token);
  spawn.env["REDISGO_TASK_HOLDER"] = opts_.holder;
  spawn.env["REDISGO_TASK_EXPIRE_MS"] = std::to_string(cfg_.redis.expire.count());
  spawn.env["REDISGO_TASK_SLOT"] = std::to_string(lease.slot);
  return spawn;
}

bool Runner::spawn_child(process::SpawnOptions spawn, Clock::time_point kill_at, std::optional<process::Child>& child,
                         std::string& error, int& code) {
  spawn.deadline_ns = kill_at.time_since_epoch().count();
  try {
    child.emplace(process::Child::spawn(spawn));
    metrics_.add_child_start();
    log_->info("child started pid={} token={}{}", child->pid(), spawn.env["REDISGO_TASK_TOKEN"],
               cfg_.task.limit > 1 ? " slot=" + spawn.env["REDISGO_TASK_SLOT"] : std::string());
    return true;
  } catch (const process::SpawnError& e) {
    error = e.what();
    switch (e.cause()) {
      case process::SpawnError::Cause::kNotFound: code = exit_status(Outcome::kNotFound); break;
      case process::SpawnError::Cause::kCannotRun: code = exit_status(Outcome::kCannotRun); break;
      case process::SpawnError::Cause::kTooLate: code = exit_status(Outcome::kLeaseLost); break;
    }
  } catch (const Error& e) {
    error = e.what();
    code = exit_status(Outcome::kCannotRun);
  }
  if (code == kExitTempFail) {
    log_->warn("{}", error);  // the lease ran out before the keeper could start the child
  } else {
    log_->error("cannot start the child: {}", error);
  }
  return false;
}

void Runner::release_lease(lock::Renewer& renewer) {
  // Once a renewal round has gone out, the release follows it on the same connections:
  // a round still queued at a slow node then runs before the DEL, never after it (where
  // it would set the key again for a holder that has gone). Those connections are also
  // the freshest (the main ones may have idled for hours). Before any round, the main
  // ones that just acquired: the renewer's may not even be open (a short job costs no
  // reconnect).
  renewer.stop();  // joined: no round begins after this
  log_release(renewer.rounds() > 0 ? renewer.stop_and_release() : backend_->release());
  backend_->released_elsewhere();
}

void Runner::log_release(const lock::Release& r) {
  // Counts the nodes where a lease of ours was deleted; elsewhere it had expired, was
  // taken, or the node did not answer (then it expires by its TTL).
  if (r.released > 0) {
    log_->info("released key={} on {} of {} node(s){}", cfg_.redis.key, r.released, backend_->node_count(),
               r.unanswered > 0 ? " (" + std::to_string(r.unanswered) + " more sent, not waited for)" : "");
  } else {
    log_->warn("release deleted nothing for key={}: the lease had already expired or was taken, or no node answered",
               cfg_.redis.key);
  }
  if (r.unpublished > 0 && !warned_unpublished_) {
    // Once: it is a setting, not an event.
    log_->warn("Redis refused the release message on {} (ACL: the user lacks the channel); standbys are not "
               "woken and take over only when they next try. Grant it with ACL SETUSER <user> &{}",
               keys_.channel, keys_.channel);
    warned_unpublished_ = true;
  }
}

std::optional<int> Runner::hold_after_step_down(const std::string& why, bool planned) {
  // At least one TTL, and longer with every step-down until the child runs stably again:
  // a host that keeps failing must not keep taking the lease back (RestartTracker). A
  // handover is no failure: step_down_hold as configured, but at least one TTL, or a
  // step_down_hold of 0 would take the lease straight back from the standby it was for.
  const Millis hold = planned ? std::max(config::effective_step_down_hold(cfg_), cfg_.redis.expire)
                              : restarts_.on_step_down(config::effective_step_down_hold(cfg_), cfg_.redis.expire);
  log_->warn("stepped down: {}; not contending for {}", why, format_duration(hold));
  notifier_.status("stepped down: " + why);
  if (wait_until(clock_.now() + hold, false) == WaitEnd::kShutdown) return stopped_while_waiting();
  notifier_.status("standby");
  return std::nullopt;
}

std::optional<int> Runner::lead(const lock::Acquisition& acquired) {
  const auto& task = cfg_.task;
  const Millis ttl = cfg_.redis.expire;
  log_->info("acquired key={} token={}{} valid for {}", cfg_.redis.key, acquired.token,
             cfg_.task.limit > 1 ? " slot=" + std::to_string(acquired.slot) : std::string(),
             format_duration(until(acquired.valid_until, clock_.now())));
  metrics_.add_acquisition();
  metrics_.set_token(acquired.token);
  metrics_.set_leader(true);
  metrics_.set_lease_deadline(acquired.valid_until);
  // Whatever way this lease ends, the gauges say so.
  struct NotLeader {
    metrics::Metrics& m;
    ~NotLeader() {
      m.set_leader(false);
      m.set_lease_deadline(std::nullopt);
    }
  } not_leader{metrics_};
  renewer_wake_.clear();
  std::unique_ptr<lock::Renewer> renewer;
  try {
    auto make = [this, slot = acquired.slot, token = acquired.token](int cancel_fd) {
      lock::LeaseOptions o = lease_opts_;
      o.cancel_fd = cancel_fd;
      o.slot = slot;
      o.token = token;
      if (once_key_) {
        o.claim_key = *once_key_;
        o.claim_ttl = claim_ttl();
        o.claim_start_ms = started_ms_;
      }
      // A node that failed is tried again at the renewer's own retry pace, not after the
      // node's doubling backoff: a Redis back from a restart within a second must get the
      // next renewal, or the child is stopped for nothing (the pace is still >= 100 ms).
      o.node_retry_max = std::min(o.node_retry_max, lock::Renewer::retry_interval(cfg_.redis.cron));
      o.node_retry_initial = std::min(o.node_retry_initial, o.node_retry_max);
      return lock::make_redis_backend(o, clock_);
    };
    // A node that fails while we lead is reported once per cause, then summarised.
    renew_log_.clear();
    auto observe = [this](const lock::Renewal& r) {
      for (const auto& node : r.answered) renew_log_.success(node);
      for (const auto& e : r.errors) {
        if (!e.node.empty()) renew_log_.failure(cause_key(e), e.message);
      }
      note_nodes(r.answered, r.errors);
      metrics_.add_renewal(r.confirmed ? "confirmed" : r.lost ? "lost" : "failed",
                           std::chrono::duration<double>(r.took).count());
      if (r.confirmed) metrics_.set_lease_deadline(r.valid_until);
    };
    renewer = std::make_unique<lock::Renewer>(make, cfg_.redis.cron, acquired.started, acquired.valid_until,
                                              renewer_wake_, clock_, observe);
  } catch (const std::exception& e) {
    // No renewal means no safe child: release first, then report the bug (exit 70, redisgo_task(1), EXIT STATUS).
    log_->error("cannot start the renewal thread: {}; releasing", e.what());
    log_release(backend_->release());
    return kExitSoftware;
  }
  // A stop that arrived while acquiring (between the last look and now) starts no child.
  read_signals();
  if (stop_requested_) {
    release_lease(*renewer);
    return stopped_while_waiting();
  }
  if (once_key_) {
    // once_per: the slot is claimed under the lease, before the child can start.
    // Restart guard: a run of this slot can have started half a period before it (hosts
    // name the nearest slot); a server that started after that may have forgotten it.
    const std::int64_t guard_from_ms =
        cfg_.redis.restart_guard ? once_slot_s_ * 1000 - task.once_per->count() / 2 : 0;
    const lock::Claim claim = backend_->claim(*once_key_, acquired.token, started_ms_, claim_ttl(), guard_from_ms);
    if (claim.kind != lock::Claim::Kind::kClaimed) {
      release_lease(*renewer);
      read_signals();
      if (stop_requested_) return stopped_while_waiting();
      if (claim.kind == lock::Claim::Kind::kTaken) {
        log_->info("the slot of {} was run already by {}; not running it again", utc_text(once_slot_s_),
                   describe_claim(claim.previous));
        return kExitTempFail;
      }
      if (claim.kind == lock::Claim::Kind::kGuarded) {
        // At most once per slot: a server that lost its data after this slot's run may
        // have begun would hand it out again. Not run, and said where cron mails it.
        log_->warn("the slot of {} is not run: {} (after a run of the slot could have begun) and has no claim "
                   "for it; without persistence it would have forgotten one (restart guard)",
                   utc_text(once_slot_s_), claim.error);
        return kExitTempFail;
      }
      log_->error("cannot claim the slot of {} (once_per): {}; not running", utc_text(once_slot_s_), claim.error);
      return claim.refused ? kExitNoPerm : kExitUnavailable;
    }
    log_->info("claimed the slot of {} (once_per {})", utc_text(once_slot_s_), format_duration(*task.once_per));
  }
  notifier_.status("leader token=" + std::to_string(acquired.token) +
                   (task.limit > 1 ? " slot=" + std::to_string(acquired.slot) : std::string()));
  const process::SpawnOptions spawn_base = child_spawn(acquired);
  HealthCheck health(task, log::get("health"), clock_);
  // supervise: a handover (a control message naming this holder, or "any") is heard on
  // every node's control channel while this lease lasts.
  std::vector<std::unique_ptr<redis::Subscriber>> control;
  if (task.mode == Mode::kSupervise) {
    for (const auto& node : lease_opts_.nodes) control.push_back(std::make_unique<redis::Subscriber>(node, keys_.control));
  }
  std::vector<int> control_failures(control.size(), 0);

  std::optional<process::Child> child;
  StopCause cause = StopCause::kNone;
  Clock::time_point stop_kill_at{};     // latest SIGKILL time of the stop in progress
  Clock::time_point stop_began{};
  bool sigkill_sent = false;
  Clock::time_point sigkill_at{};
  bool forced = false;
  std::optional<Clock::time_point> restart_at;
  std::optional<Clock::time_point> timeout_at;
  std::uint64_t renewals_seen = 0;
  Clock::time_point keeper_deadline{};  // the kill deadline the keeper holds
  struct Outcome {
    AfterExit::Kind kind;
    int exit_code = 0;
    Millis delay{0};
    std::string step_down;  // non-empty: step down for this reason
    std::string cause;      // with step_down: its metrics label
  };
  std::optional<Outcome> outcome;
  std::string step_down_reason;  // set: stop the child, then step down
  std::string step_down_cause;

  auto start = [&]() {
    cause = StopCause::kNone;
    sigkill_sent = false;
    forced = false;
    restart_at.reset();
    std::string error;
    int code = 0;
    // The deadline first, every time (the first start too): a pause between the
    // acquisition and here may have let the lease run out, and another host may hold it.
    const auto deadline = renewer->valid_until();
    if (renewer->lost() || !can_start_child(clock_.now(), deadline, task.kill_grace, ttl)) {
      log_->warn("not starting the child: {}", renewer->lost() ? renewer->lost_reason()
                                                              : "too little of the lease is left to stop it in time");
      notifier_.status("lease lost before the child started");
      outcome = task.mode == Mode::kOneshot ? Outcome{AfterExit::Kind::kExit, kExitTempFail, Millis(0), "", ""}
                                            : Outcome{AfterExit::Kind::kRecontend, 0, task.restart_delay, "", ""};
      return;
    }
    keeper_deadline = stop_schedule(deadline, task.kill_grace, ttl).kill_at;
    if (spawn_child(spawn_base, keeper_deadline, child, error, code)) {
      restarts_.on_start(clock_.now());
      health.arm(spawn_base);
      if (task.timeout && task.mode == Mode::kOneshot) timeout_at = clock_.now() + *task.timeout;
      return;
    }
    if (code == kExitTempFail) {  // the keeper saw the lease could have ended
      outcome = task.mode == Mode::kOneshot ? Outcome{AfterExit::Kind::kExit, kExitTempFail, Millis(0), "", ""}
                                            : Outcome{AfterExit::Kind::kRecontend, 0, task.restart_delay, "", ""};
      return;
    }
    // A command that cannot be started: oneshot reports it (127/126); a supervise leader
    // steps down, so a host that cannot run the service does not keep it from the others.
    if (task.mode == Mode::kOneshot) {
      outcome = Outcome{AfterExit::Kind::kExit, code, Millis(0), "", ""};
    } else {
      outcome = Outcome{AfterExit::Kind::kRecontend, 0, Millis(0), "cannot start the command: " + error, "cannot_start"};
    }
  };
  auto begin_stop = [&](StopCause why, int sig, Clock::time_point kill_at, const std::string& reason) {
    if (cause != StopCause::kNone || !child || !child->running()) return;
    cause = why;
    stop_kill_at = kill_at;
    stop_began = clock_.now();
    // A planned stop (shutdown, handover) is no warning; a stop forced by the lease, a
    // timeout or a failing host is.
    if (why == StopCause::kShutdown || (why == StopCause::kStepDown && step_down_cause == "handover")) {
      log_->info("stopping child pid={} with {}: {}", child->pid(), config::signal_name(sig), reason);
    } else {
      log_->warn("stopping child pid={} with {}: {}", child->pid(), config::signal_name(sig), reason);
    }
    if (why == StopCause::kLeaseLost || why == StopCause::kDeadline) notifier_.status("lease lost: " + reason);
    child->signal_group(sig);
    if (sig != SIGCONT && sig != SIGKILL) child->signal_group(SIGCONT);
  };
  // The lease comes first: stop the child when the renewer lost the lease or the local
  // deadline is within kill_grace (docs/DESIGN.md, invariant 2), or when it ran past its timeout.
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
    } else if (!step_down_reason.empty()) {
      begin_stop(StopCause::kStepDown, task.kill_signal, std::min(sched.kill_at, now + task.kill_grace),
                 "stepping down: " + step_down_reason);
    }
  };
  // The child ended: decide what comes next.
  auto on_child_end = [&](int code) {
    ExitContext ec{task.mode, task.restart, task.restart_delay, code, cause};
    if (stop_requested_ && cause == StopCause::kNone) ec.cause = StopCause::kShutdown;
    AfterExit next = after_exit(ec);
    if (task.mode == Mode::kSupervise && ec.cause == StopCause::kStepDown) {
      outcome = Outcome{AfterExit::Kind::kRecontend, 0, Millis(0), step_down_reason, step_down_cause};
      return;
    }
    if (task.mode == Mode::kSupervise && ec.cause == StopCause::kNone) {
      // The child ended by itself: a crash loop restarts with a growing delay, then the
      // leader steps down (redisgo_task(1), MODES).
      auto delay = restarts_.on_exit(clock_.now());
      if (!delay) {
        outcome = Outcome{AfterExit::Kind::kRecontend, 0, Millis(0),
                          "the child exited " + std::to_string(restarts_.recent(clock_.now())) + " times within " +
                              format_duration(task.restart_window) + " (restart_limit " +
                              std::to_string(task.restart_limit) + ")",
                          "restart_limit"};
        return;
      }
      next.delay = *delay;
    }
    if (next.kind == AfterExit::Kind::kRestart && !stop_requested_ && !renewer->lost()) {
      log_->info("restarting child in {} (restart={})", format_duration(next.delay), config::to_string(task.restart));
      restart_at = clock_.now() + next.delay;
      return;
    }
    if (next.kind == AfterExit::Kind::kRestart) next.kind = AfterExit::Kind::kRecontend;
    outcome = Outcome{next.kind, next.exit_code, next.delay, "", ""};
  };

  start();

  std::vector<pollfd> fds;
  while (!outcome) {
    auto now = clock_.now();
    const auto deadline = renewer->valid_until();
    const auto sched = stop_schedule(deadline, task.kill_grace, ttl);
    bool running = child && child->running();

    check_lease(now);
    if (running && sched.kill_at != keeper_deadline) {
      // The keeper kills the tree at the same instant on its own, should this loop be
      // stopped or wedged (SIGSTOP of the daemon alone).
      keeper_deadline = sched.kill_at;
      child->set_deadline(keeper_deadline.time_since_epoch().count());
      health.set_deadline(keeper_deadline.time_since_epoch().count());
    }
    if (running && cause != StopCause::kNone && !sigkill_sent && now >= std::min(stop_kill_at, sched.kill_at)) {
      log_->warn("child pid={} still running {} after {}; sending SIGKILL to its tree", child->pid(),
                 format_duration(std::chrono::duration_cast<Millis>(now - stop_began)),
                 config::signal_name(cause == StopCause::kShutdown && task.mode == Mode::kOneshot ? stop_signal_
                                                                                                   : task.kill_signal));
      child->signal_group(SIGKILL);
      sigkill_sent = true;
      sigkill_at = now;
    }
    if (running && sigkill_sent && now - sigkill_at >= kForceKillAfter && !forced) {
      // The tree did not die from a SIGKILL: the keeper is stopped or wedged. Kill it and
      // the job from here; the orphans come to this process and are killed on reaping.
      log_->error("child pid={} survived SIGKILL for {}; killing its keeper pid={} from the daemon", child->pid(),
                  format_duration(kForceKillAfter), child->keeper_pid());
      child->force_kill();
      forced = true;
    }
    if (!running && !step_down_reason.empty() && task.mode == Mode::kSupervise) {
      // Asked to step down between two runs of the child (a handover during restart_delay).
      outcome = Outcome{AfterExit::Kind::kRecontend, 0, Millis(0), step_down_reason, step_down_cause};
      break;
    }
    if (!running && restart_at) {
      if (stop_requested_) {
        outcome = Outcome{AfterExit::Kind::kExit, 0, Millis(0), "", ""};
        break;
      }
      if (renewer->lost() || !can_start_child(now, deadline, task.kill_grace, ttl)) {
        notifier_.status("lease lost: " + (renewer->lost() ? renewer->lost_reason() : "deadline before restart"));
        outcome = Outcome{AfterExit::Kind::kRecontend, 0, task.restart_delay, "", ""};
        break;
      }
      if (now >= *restart_at) {
        start();
        continue;
      }
    }
    if (renewer->renewals() != renewals_seen) {
      renewals_seen = renewer->renewals();
      log_->debug("lease renewed ({}); valid for {}", renewals_seen, format_duration(until(deadline, now)));
    }

    // Sleep until the next thing that could need doing (boot-time timer: a host suspend
    // does not postpone the lease deadline).
    Clock::time_point next = Clock::time_point::max();
    if (running && cause == StopCause::kNone) next = std::min(next, sched.term_at);
    if (running && cause != StopCause::kNone && !sigkill_sent) next = std::min({next, stop_kill_at, sched.kill_at});
    if (running && timeout_at && cause == StopCause::kNone) next = std::min(next, *timeout_at);
    if (!running && restart_at) next = std::min({next, *restart_at, sched.term_at});
    if (running && cause == StopCause::kNone) next = std::min(next, health.next_wakeup());
    std::optional<Millis> cap;
    if (running && (sigkill_sent || child->exit_fd() < 0)) cap = Millis(50);  // re-check reaping

    fds.assign({{signals_.fd(), POLLIN, 0}, {renewer_wake_.fd(), POLLIN, 0}});
    if (running && child->exit_fd() >= 0) fds.push_back({child->exit_fd(), POLLIN, 0});
    health.append_fds(fds);
    const std::size_t first_control = fds.size();
    const auto steady_now = redis::SteadyClock::now();
    for (auto& c : control) {
      c->maintain(steady_now);
      fds.push_back({c->fd(), c->events(), 0});
      if (auto at = c->next_wakeup(); at != redis::SteadyClock::time_point::max()) {
        const auto ms = std::max(Millis(0), std::chrono::ceil<Millis>(at - steady_now));
        cap = cap ? std::min(*cap, ms) : ms;
      }
    }
    poll_until(fds, next, cap);
    if (fds[1].revents & POLLIN) renewer_wake_.clear();
    for (std::size_t i = 0; i < control.size(); ++i) {
      auto& c = control[i];
      if (fds[first_control + i].revents != 0) c->on_ready(fds[first_control + i].revents);
      c->maintain(redis::SteadyClock::now());
      if (c->failures() > control_failures[i]) {
        // A leader that cannot hear handover requests (an ACL user without the control
        // channel) says so once; nothing else depends on it.
        control_failures[i] = c->failures();
        if (c->last_fault() == redis::Fault::kAuth || c->last_fault() == redis::Fault::kReply) {
          subscribe_log_.failure(c->describe() + " control", c->last_error() + " (handover requests are not heard)");
        }
      }
      for (const auto& message : c->take_payloads()) {
        if (message != opts_.holder && message != "any") continue;
        if (step_down_reason.empty()) {
          log_->info("handover requested (a control message on {}); stepping down", keys_.control);
          step_down_reason = "handover requested";
          step_down_cause = "handover";
        }
      }
    }
    if (child && child->running() && cause == StopCause::kNone) {
      const auto kill_at = stop_schedule(renewer->valid_until(), task.kill_grace, ttl).kill_at;
      if (auto why = health.service(fds, kill_at.time_since_epoch().count()); why && step_down_reason.empty()) {
        step_down_reason = *why;
        step_down_cause = "health";
      }
    } else {
      health.disarm();
    }
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
        health.disarm();
        metrics_.set_child_exit(*code);
        if (*code == 0 || cause != StopCause::kNone) {
          log_->info("child exited status={}", *code);
        } else {
          log_->warn("child exited status={}", *code);
        }
        on_child_end(*code);
      }
    }
  }

  if (child && child->running()) child->terminate_group(SIGKILL, Millis(0));  // never outlive the lease phase
  health.disarm();
  if (renewer->lost()) {
    log_->warn("lease lost: {}", renewer->lost_reason());
    metrics_.add_lease_loss("lost");
  } else if (cause == StopCause::kDeadline) {
    metrics_.add_lease_loss("deadline");
  }
  // once_per: the claim records how the run ended (before the release, so that whoever
  // takes the lease next finds it complete).
  if (once_key_ && outcome->kind == AfterExit::Kind::kExit) {
    backend_->finish_claim(*once_key_, std::to_string(outcome->exit_code));
  }
  release_lease(*renewer);
  metrics_.set_leader(false);
  metrics_.set_lease_deadline(std::nullopt);
  if (outcome->kind == AfterExit::Kind::kExit) return outcome->exit_code;
  if (!outcome->step_down.empty()) {
    metrics_.add_step_down(outcome->cause.empty() ? "other" : outcome->cause);
    return hold_after_step_down(outcome->step_down, outcome->cause == "handover");
  }
  notifier_.status("standby");
  log_->info("contending again in {}", format_duration(outcome->delay));
  if (wait_until(clock_.now() + outcome->delay, false) == WaitEnd::kShutdown) return stopped_while_waiting();
  return std::nullopt;
}

}  // namespace

process::SpawnOptions spawn_options(const config::Config& config) {
  process::SpawnOptions spawn;
  spawn.argv = config.task.command;
  spawn.workdir = config.task.workdir;
  spawn.env = config.task.env;
  // systemd's notify and watchdog variables address the daemon, the unit's main process.
  // A child that speaks sd_notify would otherwise report READY/STATUS/WATCHDOG as if it
  // were the service, and with WATCHDOG_PID absent it would even feed the watchdog.
  spawn.unset_env = {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"};
  // The child never sees the Redis password (redisgo_task(1), ENVIRONMENT), unless the
  // operator hands it over on purpose through [task] env.
  if (config.redis.password_source == config::PasswordSource::kEnv) spawn.unset_env.push_back(config.redis.password_origin);
  if (config.redis.sentinel_password_source == config::PasswordSource::kEnv) {
    spawn.unset_env.push_back(config.redis.sentinel_password_origin);
  }
  return spawn;
}

std::string holder_head(const std::string& prefix) {
  if (!prefix.empty()) return prefix;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  return host;
}

std::string default_holder_id(const std::string& prefix) {
  const std::string head = holder_head(prefix);
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
  return head + ":" + std::to_string(::getpid()) + ":" + hex(random, sizeof random);
}

int run_task(const TaskOptions& options) {
  Runner runner(options);
  return runner.run();
}

}  // namespace redisgo::daemon
