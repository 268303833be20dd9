// Metrics' texts: the exposition (render), the textfile's and a finished run's record, and
// what a run takes back from the textfile of the run before it.
#include <cerrno>
#include <cstdlib>

#include "metrics/metrics_impl.h"

namespace redisgo::metrics {

bool Metrics::restore_last_success(std::string_view previous) {
  std::string prefix = "redisgo_task_last_success_timestamp_seconds{";
  prefix += impl_->key_label;
  prefix += "} ";
  // At the start of a line: the file is one sample per line.
  for (std::size_t at = 0; at < previous.size();) {
    const std::size_t eol = std::min(previous.find('\n', at), previous.size());
    const std::string_view line = previous.substr(at, eol - at);
    at = eol + 1;
    if (line.substr(0, prefix.size()) != prefix) continue;
    const std::string_view text = line.substr(prefix.size());
    // A plain decimal number ("1700000000.75", "1.7e9"); read by strtod in the C locale
    // this process runs in, not std::from_chars: libstdc++'s double overload linked in a
    // reference to libm's fesetround that made the binary load libm.so.6.
    const auto decimal = [](char c) { return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'; };
    if (text.empty() || text[0] < '0' || text[0] > '9' || !std::all_of(text.begin(), text.end(), decimal)) return false;
    const std::string digits(text);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(digits.c_str(), &end);
    if (errno != 0 || end != digits.c_str() + digits.size() || !std::isfinite(v) || v <= 0) return false;
    double current = impl_->last_success.load(std::memory_order_relaxed);
    if (v <= current) return false;
    set_last_success(v);
    return true;
  }
  return false;
}

bool Metrics::restore_once_skipped(std::string_view previous) {
  bool took = false;
  std::lock_guard lock(impl_->mu);
  for (auto& [reason, count] : impl_->skipped) {
    std::string prefix = std::string(kSkippedName) + "{" + impl_->key_label + ",reason=\"" + reason + "\"} ";
    for (std::size_t at = 0; at < previous.size();) {
      const std::size_t eol = std::min(previous.find('\n', at), previous.size());
      const std::string_view line = previous.substr(at, eol - at);
      at = eol + 1;
      if (line.substr(0, prefix.size()) != prefix) continue;
      const std::string_view digits = line.substr(prefix.size());
      if (digits.empty() || digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) break;
      std::uint64_t v = 0;
      for (char c : digits) v = v * 10 + static_cast<std::uint64_t>(c - '0');
      if (v > count) {
        count = v;
        took = true;
      }
      break;
    }
  }
  if (took) changed();
  return took;
}

std::string Metrics::render_record() const {
  std::string out;
  impl_->build_info(out);
  std::lock_guard lock(impl_->mu);
  impl_->settings_series(out);
  impl_->run_series(out);
  return out;
}

std::string Metrics::render_textfile(double now_unix) const {
  std::string out = render();
  append_header(out, "redisgo_task_textfile_written_timestamp_seconds", "gauge",
                "Unix time this textfile was written (every 15 s at least while the daemon runs: an old one means "
                "a daemon that died without removing it).");
  std::string v;
  append_timestamp(v, now_unix);
  impl_->sample(out, "redisgo_task_textfile_written_timestamp_seconds", v);
  return out;
}

void Metrics::Impl::guarded_series(std::string& out) const {
  const Impl& m = *this;
  m.settings_series(out);

  append_header(out, "redisgo_task_renewals_total", "counter",
                "Renewal rounds by result (confirmed by a quorum, failed, or lease lost).");
  m.counters(out, "redisgo_task_renewals_total", "result", m.renewals);

  append_header(out, "redisgo_task_renewal_duration_seconds", "histogram", "Duration of a renewal round.");
  m.histogram(out, "redisgo_task_renewal_duration_seconds", m.renewal_durations);

  append_header(out, "redisgo_task_wait_seconds", "histogram",
                "Time from the start of a wait for the lease to its acquisition.");
  m.histogram(out, "redisgo_task_wait_seconds", m.waits);

  append_header(out, "redisgo_task_line_length", "gauge",
                "The waiting line's length as this daemon last saw it (fair = true): read when it joins, then at least its own place; max by (key) is the line's length.");
  m.sample(out, "redisgo_task_line_length", std::to_string(m.line_length));

  append_header(out, "redisgo_task_line_position", "gauge",
                "This daemon's place in the waiting line as of its last attempt (1 = next; 0 = not in line).");
  m.sample(out, "redisgo_task_line_position", std::to_string(m.line_position.load(std::memory_order_relaxed)));

  if (m.refused_right) {
    append_header(out, "redisgo_task_renewal_refused_info", "gauge",
                  "1 while this daemon does not take the lease because Redis refused its renewals; the right the "
                  "ACL user lacks is a label.");
    m.labelled(out, "redisgo_task_renewal_refused_info", "right", *m.refused_right, "1");
  }

  append_header(out, "redisgo_task_lease_losses_total", "counter", "Leases lost while held, by cause.");
  m.counters(out, "redisgo_task_lease_losses_total", "cause", m.losses);

  append_header(out, "redisgo_task_child_starts_total", "counter", "Child processes started.");
  m.sample(out, "redisgo_task_child_starts_total", std::to_string(m.child_starts.load(std::memory_order_relaxed)));

  append_header(out, "redisgo_task_freezes_past_lease_total", "counter",
                "Times this host was frozen past its lease deadline with its child alive: the child may have "
                "overlapped the next holder.");
  m.sample(out, "redisgo_task_freezes_past_lease_total",
           std::to_string(m.freezes_past_lease.load(std::memory_order_relaxed)));

  m.run_series(out);

  append_header(out, "redisgo_task_step_downs_total", "counter", "Times this daemon stepped down as leader, by cause.");
  m.counters(out, "redisgo_task_step_downs_total", "cause", m.step_downs);

  append_header(out, "redisgo_task_control_requests_total", "counter",
                "Operators' requests that reached this daemon, by kind (a handover asked of it as leader; a pause "
                "that began to hold it back; a resume that ended one before its time).");
  m.counters(out, "redisgo_task_control_requests_total", "kind", m.control);

  append_header(out, "redisgo_task_textfile_write_errors_total", "counter",
                "Writes of the metrics textfile that failed (it then keeps what the last good write said).");
  m.sample(out, "redisgo_task_textfile_write_errors_total",
           std::to_string(m.textfile_write_errors.load(std::memory_order_relaxed)));

  append_header(out, "redisgo_task_node_up", "gauge", "1 if the Redis node answered the last request, else 0.");
  for (const auto& [name, up] : m.nodes) m.labelled(out, "redisgo_task_node_up", "node", name, up ? "1" : "0");
  m.redis_error_series(out);
  m.process_series(out);
}

std::string Metrics::render() const {
  const Impl& m = *impl_;
  std::string out;
  // The text is about as long as last time: one allocation instead of a series of
  // copies (it matters with many nodes).
  out.reserve(std::max<std::size_t>(4096, m.last_size.load(std::memory_order_relaxed) + 1024));

  m.build_info(out);

  // A leader is state="leader": one series says what the daemon does, so no two can disagree.
  append_header(out, "redisgo_task_state", "gauge",
                "1 for what this daemon is doing now, 0 for the other states (standby, in_line, restart_guard, "
                "paused, leader, stepped_down, unreachable, credentials_refused, tls_failed, error_reply, "
                "renewal_refused).");
  {
    const auto now = static_cast<std::size_t>(m.state.load(std::memory_order_relaxed));
    for (std::size_t i = 0; i < kStateCount; ++i) m.labelled(out, "redisgo_task_state", "state", kStateNames[i], i == now ? "1" : "0");
  }

  append_header(out, "redisgo_task_token", "gauge",
                "Fencing token of the current or last lease (0 before the first).");
  m.sample(out, "redisgo_task_token", std::to_string(m.token.load(std::memory_order_relaxed)));

  append_header(out, "redisgo_task_lease_remaining_seconds", "gauge",
                "Seconds until the local lease deadline; 0 when no lease is held.");
  {
    long long ns = m.deadline_ns.load(std::memory_order_relaxed);
    double remaining = 0;
    if (ns != kNoDeadline) {
      // Whole milliseconds, rounded up as until() does: a live lease never shows 0.
      remaining = static_cast<double>(until(Clock::time_point(Clock::duration(ns)), m.clock.now()).count()) / 1000;
    }
    std::string v;
    append_double(v, remaining);
    m.sample(out, "redisgo_task_lease_remaining_seconds", v);
  }

  append_header(out, "redisgo_task_acquisitions_total", "counter", "Leases acquired.");
  m.sample(out, "redisgo_task_acquisitions_total", std::to_string(m.acquisitions.load(std::memory_order_relaxed)));

  {
    std::lock_guard lock(m.mu);
    m.guarded_series(out);
  }
  m.last_size.store(out.size(), std::memory_order_relaxed);
  return out;
}

}  // namespace redisgo::metrics
