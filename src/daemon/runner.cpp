#include "daemon/runner.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "log/logging.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/exit_status.h"
#include "wiring/servers.h"

namespace redisgo::daemon {
namespace {

using config::Mode;

/// The names the lease backend gives its nodes (NodeError::node, Acquisition::answered).
std::vector<std::string> node_names(const lock::LeaseOptions& o) {
  std::vector<std::string> names;
  for (const auto& n : o.nodes) names.push_back(n.locator ? n.locator->name() : n.endpoint.str());
  return names;
}

}  // namespace

std::string cause_key(const lock::NodeError& e) { return e.node.empty() ? redis::to_string(e.fault) : e.node; }

Runner::Runner(const TaskOptions& options, const Dependencies& deps)
    : opts_(options),
      deps_(deps),
      cfg_(options.config),
      lease_opts_(wiring::lease_options(cfg_, options.holder)),
      keys_(lock::LeaseKeys::derive(cfg_.redis.key)),
      log_(log::get("daemon")),
      clock_(*deps.clock),
      watchdog_(notifier_, clock_),
      attempt_log_(log::get("lock"), "acquire"),
      renew_log_(log::get("lock"), "renew"),
      restarts_(cfg_.task.restart_limit, cfg_.task.restart_window, cfg_.task.restart_delay),
      waiting_(log_, cfg_.redis.key, terminal_stderr()),
      subscribe_log_(log::get("lock"), "subscribe"),
      metrics_(cfg_.redis.key, node_names(lease_opts_)),
      metrics_log_(log::get("metrics"), "metrics"),
      started_ms_(wall_ms()),
      started_at_(clock_.now()) {
  // Every connection of this daemon to a node (attempts, renewals, subscriptions) counts its
  // failures under the node's name, as redisgo_task_node_up names it.
  const auto names = node_names(lease_opts_);
  for (std::size_t i = 0; i < lease_opts_.nodes.size(); ++i) {
    lease_opts_.nodes[i].on_fault = [count = metrics_.redis_error_counter(names[i])](redis::Fault fault) {
      if (const char* kind = wiring::redis_error_kind(fault)) count(kind);
    };
  }
  metrics::Metrics::Settings settings;
  settings.mode = config::to_string(cfg_.task.mode);
  settings.limit = cfg_.task.limit;
  settings.expire_seconds = std::chrono::duration<double>(cfg_.redis.expire).count();
  if (cfg_.task.once_per) settings.once_per_seconds = std::chrono::duration<double>(*cfg_.task.once_per).count();
  metrics_.configure(settings);
}

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

void Runner::say_status(std::string text) {
  if (text == status_text_) return;
  notifier_.status(text);
  status_text_ = std::move(text);
}

bool Runner::start_exporter() {
  if (!cfg_.metrics.enabled()) return true;
  // Fails loudly at start (an address in use, a directory that cannot be written), not
  // silently at the first scrape.
  try {
    metrics::ExporterOptions options;
    options.listen = cfg_.metrics.listen;
    options.textfile = cfg_.metrics.textfile;
    // At a clean exit a supervise daemon takes its textfile away (a stopped service reports
    // nothing, rather than a leader that is gone); a oneshot run leaves the record of the
    // run, so that cron's last success outlives it. Only a killed daemon leaves a live
    // file behind, and its written timestamp goes stale.
    options.at_stop = cfg_.task.mode == Mode::kOneshot ? metrics::ExporterOptions::AtStop::kRecord
                                                       : metrics::ExporterOptions::AtStop::kRemove;
    if (!options.textfile.empty()) {
      // The last success and the once_per slots skipped of the runs before this one (a cron
      // job's runs are processes of their own). Bounded: a hung mount does not hold up the start.
      const std::string previous = metrics::read_previous_textfile(options.textfile, std::chrono::seconds(1));
      metrics_.restore_last_success(previous);
      metrics_.restore_once_skipped(previous);
    }
    exporter_ = std::make_unique<metrics::Exporter>(metrics_, std::move(options));
  } catch (const Error& e) {
    log_->error("cannot start [metrics]: {}; nothing was started", e.what());
    return false;
  }
  return true;
}

void Runner::log_start() const {
  log_->info("contending for key={} as holder={} mode={} {} expire={} cron={}{}", cfg_.redis.key, opts_.holder,
             config::to_string(cfg_.task.mode), wiring::describe_servers(cfg_.redis), format_duration(cfg_.redis.expire),
             format_duration(cfg_.redis.cron),
             cfg_.task.limit > 1 ? " limit=" + std::to_string(cfg_.task.limit) : std::string());
  if (exporter_) {
    log_->info("metrics:{}{}", cfg_.metrics.listen.empty() ? "" : " http://" + cfg_.metrics.listen + "/metrics",
               cfg_.metrics.textfile.empty() ? "" : " textfile " + cfg_.metrics.textfile);
  }
}

void Runner::stop_exporter() {
  if (!exporter_) return;
  // The last textfile write waits at most a second: a hung mount must not hold up the stop.
  if (auto why = exporter_->stop(); !why.empty()) log_->warn("{}", why);
}

int Runner::run() {
  const int code = run_phases();
  stop_exporter();
  return code;
}

int Runner::run_phases() {
  // A job whose keeper is killed from outside leaves orphans: they must come here.
  process::set_subreaper();
  // Only the main loop's acquisitions watch the signalfd: a stop must not wait on a hung node.
  lock::LeaseOptions main_opts = lease_opts_;
  main_opts.cancel_fd = signals_.fd();
  main_opts.heartbeat = [this] { watchdog_.heartbeat(); };
  if (auto period = watchdog_.period()) main_opts.heartbeat_every = *period;
  backend_ = deps_.make_backend(main_opts, clock_);
  std::uint64_t seed;
  if (::getrandom(&seed, sizeof seed, 0) != sizeof seed) seed = static_cast<std::uint64_t>(::getpid());
  backoff_ = backoff::make(cfg_.backoff, seed);
  StandbySettings standby = StandbySettings::from(cfg_, opts_.wait);
  standby.nodes = static_cast<std::size_t>(backend_->node_count());
  standby.quorum = static_cast<std::size_t>(backend_->quorum());
  // Counted from the run's start: connecting, a once_per read, the restart guard's wait and a
  // pause all come out of it (redisgo_task(1) "Modes").
  if (cfg_.task.mode == config::Mode::kOneshot && cfg_.task.wait_timeout && cfg_.task.wait_timeout->count() > 0) {
    standby.give_up_at = started_at_ + *cfg_.task.wait_timeout;
  }
  standby_.emplace(std::move(standby), *backoff_);
  for (const auto& node : lease_opts_.nodes) {
    // Fair: each waiter listens on its own wake channel (one release wakes one waiter);
    // otherwise on the release channel that every standby shares.
    subscribers_.push_back(std::make_unique<redis::Subscriber>(
        node, cfg_.redis.fair ? keys_.wake(lease_opts_.holder) : keys_.channel));
  }
  subscriber_failures_.assign(subscribers_.size(), 0);
  if (!start_exporter()) return kExitConfig;
  log_start();
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
  say_status("standby");
  for (;;) {
    if (auto code = contend()) {
      notifier_.stopping();
      // A last failed attempt's undo (or a release) may still be on its way out.
      backend_->settle(kSettleBeforeExit);
      return *code;
    }
  }
}

}  // namespace redisgo::daemon
