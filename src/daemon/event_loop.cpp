#include "daemon/event_loop.h"

#include <algorithm>
#include <cerrno>
#include <climits>

#include "log/logging.h"
#include "util/error.h"

namespace redisgo::daemon {

EventLoop::EventLoop(const config::Config& config, std::shared_ptr<spdlog::logger> log, const Clock& clock)
    : cfg_(config),
      log_(std::move(log)),
      clock_(clock),
      watchdog_(notifier_, clock_),
      metrics_log_(log::get("metrics"), "metrics") {}

void EventLoop::poll_until(std::vector<pollfd>& fds, Clock::time_point wake_at, std::optional<Millis> cap) {
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
  if (exporter_) watch_exporter();
}

void EventLoop::watch_exporter() {
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

bool EventLoop::sleep_until(Clock::time_point until) {
  std::vector<pollfd> fds;
  for (;;) {
    if (stop_requested_) return false;
    if (clock_.now() >= until) return true;
    fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
    poll_until(fds, until);
    read_signals();  // nothing to forward while there is no child
  }
}

std::vector<int> EventLoop::read_signals() {
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

void EventLoop::say_status(std::string text) {
  if (text == status_text_) return;
  notifier_.status(text);
  status_text_ = std::move(text);
}

bool EventLoop::start_exporter(metrics::Metrics& metrics) {
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
    options.at_stop = cfg_.task.mode == config::Mode::kOneshot ? metrics::ExporterOptions::AtStop::kRecord
                                                               : metrics::ExporterOptions::AtStop::kRemove;
    if (!options.textfile.empty()) {
      // The last success and the once_per slots skipped of the runs before this one (a cron
      // job's runs are processes of their own). Bounded: a hung mount does not hold up the start.
      const std::string previous = metrics::read_previous_textfile(options.textfile, std::chrono::seconds(1));
      metrics.restore_last_success(previous);
      metrics.restore_once_skipped(previous);
    }
    exporter_ = std::make_unique<metrics::Exporter>(metrics, std::move(options));
  } catch (const Error& e) {
    log_->error("cannot start [metrics]: {}; nothing was started", e.what());
    return false;
  }
  return true;
}

void EventLoop::stop_exporter() {
  if (!exporter_) return;
  // The last textfile write waits at most a second: a hung mount must not hold up the stop.
  if (auto why = exporter_->stop(); !why.empty()) log_->warn("{}", why);
}

}  // namespace redisgo::daemon
