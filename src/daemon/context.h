#pragma once
/// What every part of one run of the task shares (internal to daemon/): its options and
/// dependencies, the lease's settings and keys, the logger, the clock, the metrics, the
/// restart count and the main loop's lease backend. Built once by the Runner; the event loop,
/// the notices, the drivers and the holds hold a reference to it.

#include <cstdint>
#include <memory>

#include "daemon/daemon.h"
#include "daemon/rules.h"
#include "lock/lease.h"
#include "metrics/metrics.h"
#include "util/clock.h"

namespace spdlog {
class logger;
}

namespace redisgo::daemon {

struct Context {
  Context(const TaskOptions& options, const Dependencies& deps);

  const TaskOptions& opts;
  const Dependencies& deps;
  const config::Config& cfg;
  lock::LeaseOptions lease_opts;
  lock::LeaseKeys keys;
  std::shared_ptr<spdlog::logger> log;
  const Clock& clock;
  metrics::Metrics metrics;
  RestartTracker restarts;
  /// The main loop's backend: made when the run starts (Runner::run_phases), before any phase.
  std::unique_ptr<lock::LeaseBackend> backend;
  const std::int64_t started_ms;           ///< when this run started (wall clock)
  const Clock::time_point started_at;      ///< ... and on `clock`: where --wait-timeout counts from

  /// redisgo_task(1), MODES: stopped while waiting for the lease, oneshot exits 75 and supervise 0.
  int stopped_while_waiting() const { return stopped_status(cfg.task.mode); }
};

}  // namespace redisgo::daemon
