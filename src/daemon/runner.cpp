#include "daemon/runner.h"

#include <sys/random.h>
#include <unistd.h>

#include "log/logging.h"
#include "util/clock.h"
#include "util/duration.h"
#include "util/exit_status.h"
#include "wiring/servers.h"

namespace redisgo::daemon {
namespace {

/// The names the lease backend gives its nodes (NodeError::node, Acquisition::answered).
std::vector<std::string> node_names(const lock::LeaseOptions& o) {
  std::vector<std::string> names;
  for (const auto& n : o.nodes) names.push_back(n.locator ? n.locator->name() : n.endpoint.str());
  return names;
}

}  // namespace

Context::Context(const TaskOptions& options, const Dependencies& dependencies)
    : opts(options),
      deps(dependencies),
      cfg(options.config),
      lease_opts(wiring::lease_options(cfg, options.holder)),
      keys(lock::LeaseKeys::derive(cfg.redis.key)),
      log(log::get("daemon")),
      clock(*dependencies.clock),
      metrics(cfg.redis.key, node_names(lease_opts)),
      restarts(cfg.task.restart_limit, cfg.task.restart_window, cfg.task.restart_delay),
      started_ms(wall_ms()),
      started_at(clock.now()) {
  // Every connection of this daemon to a node (attempts, renewals, subscriptions) counts its
  // failures under the node's name, as redisgo_task_node_up names it.
  const auto names = node_names(lease_opts);
  for (std::size_t i = 0; i < lease_opts.nodes.size(); ++i) {
    lease_opts.nodes[i].on_fault = [count = metrics.redis_error_counter(names[i])](redis::Fault fault) {
      if (const char* kind = wiring::redis_error_kind(fault)) count(kind);
    };
  }
  metrics::Metrics::Settings settings;
  settings.mode = config::to_string(cfg.task.mode);
  settings.limit = cfg.task.limit;
  settings.expire_seconds = std::chrono::duration<double>(cfg.redis.expire).count();
  if (cfg.task.once_per) settings.once_per_seconds = std::chrono::duration<double>(*cfg.task.once_per).count();
  metrics.configure(settings);
}

Runner::Runner(const TaskOptions& options, const Dependencies& deps)
    : ctx_(options, deps),
      loop_(ctx_.cfg, ctx_.log, ctx_.clock),
      notices_(ctx_, loop_),
      hold_(ctx_, loop_),
      once_(ctx_, loop_),
      leader_(ctx_, loop_, notices_, hold_, once_) {}

void Runner::log_start() const {
  const auto& cfg = ctx_.cfg;
  ctx_.log->info("contending for key={} as holder={} mode={} {} expire={} cron={}{}", cfg.redis.key, ctx_.opts.holder,
                 config::to_string(cfg.task.mode), wiring::describe_servers(cfg.redis), format_duration(cfg.redis.expire),
                 format_duration(cfg.redis.cron),
                 cfg.task.limit > 1 ? " limit=" + std::to_string(cfg.task.limit) : std::string());
  if (loop_.exporting()) {
    ctx_.log->info("metrics:{}{}", cfg.metrics.listen.empty() ? "" : " http://" + cfg.metrics.listen + "/metrics",
                   cfg.metrics.textfile.empty() ? "" : " textfile " + cfg.metrics.textfile);
  }
}

int Runner::run() {
  const int code = run_phases();
  loop_.stop_exporter();
  return code;
}

void Runner::start() {
  // Only the main loop's acquisitions watch the signalfd: a stop must not wait on a hung node.
  lock::LeaseOptions main_opts = ctx_.lease_opts;
  main_opts.cancel_fd = loop_.signal_fd();
  main_opts.heartbeat = [this] { loop_.heartbeat(); };
  if (auto period = loop_.heartbeat_period()) main_opts.heartbeat_every = *period;
  ctx_.backend = ctx_.deps.make_backend(main_opts, ctx_.clock);
  std::uint64_t seed;
  if (::getrandom(&seed, sizeof seed, 0) != sizeof seed) seed = static_cast<std::uint64_t>(::getpid());
  backoff_ = backoff::make(ctx_.cfg.backoff, seed);
  StandbySettings standby = StandbySettings::from(ctx_.cfg, ctx_.opts.wait);
  standby.nodes = static_cast<std::size_t>(ctx_.backend->node_count());
  standby.quorum = static_cast<std::size_t>(ctx_.backend->quorum());
  // Counted from the run's start: connecting, a once_per read, the restart guard's wait and a
  // pause all come out of it (redisgo_task(1) "Modes").
  const auto& wait_timeout = ctx_.cfg.task.wait_timeout;
  if (ctx_.cfg.task.mode == config::Mode::kOneshot && wait_timeout && wait_timeout->count() > 0) {
    standby.give_up_at = ctx_.started_at + *wait_timeout;
  }
  standby_.emplace(ctx_, loop_, notices_, std::move(standby), *backoff_);
}

int Runner::run_phases() {
  // A job whose keeper is killed from outside leaves orphans: they must come here.
  process::set_subreaper();
  start();
  if (!loop_.start_exporter(ctx_.metrics)) return kExitConfig;
  log_start();
  if (auto code = once_.slot_already_run()) return *code;
  const auto& redis = ctx_.cfg.redis;
  if (redis.tls.enabled && redis.tls.skip_verify) {
    ctx_.log->warn("tls_skip_verify = true: the Redis server's certificate is NOT verified (tests only)");
  }
  if (redis.topology == config::Topology::kSentinel || redis.topology == config::Topology::kCluster) {
    // redisgo_task(1), PRODUCTION REDIS: said once, at start, where an operator looks.
    ctx_.log->info("note: Redis replicates asynchronously, so a failover can lose the lease key and let a second "
                   "holder in while the first still runs; REDISGO_TASK_TOKEN keeps increasing across it (the fence's "
                   "TIME floor): have the protected resource reject lower tokens{}",
                   redis.topology == config::Topology::kSentinel && redis.sentinel_wait_replicas == 0
                       ? "; sentinel_wait_replicas = 1 narrows the window"
                       : "");
  }
  loop_.ready();
  loop_.say_status("standby");
  for (;;) {
    auto contended = standby_->contend();
    std::optional<int> code;
    if (const auto* acquired = std::get_if<lock::Acquisition>(&contended)) {
      code = leader_.lead(*acquired);
    } else {
      code = std::get<int>(contended);
    }
    if (code) {
      loop_.stopping();
      // A last failed attempt's undo (or a release) may still be on its way out.
      ctx_.backend->settle(kSettleBeforeExit);
      return *code;
    }
  }
}

}  // namespace redisgo::daemon
