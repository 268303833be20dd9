#pragma once
/// Metrics' state and how each family is written (internal to metrics/: metrics.cpp updates
/// it, render.cpp renders it; metrics.h is the interface).

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/exposition.h"
#include "metrics/metrics.h"

#ifndef REDISGO_VERSION
#define REDISGO_VERSION "unknown"
#endif

namespace redisgo::metrics {
namespace detail {


/// Renewal rounds go to a LAN Redis: most take well under a millisecond, a slow one a few
/// milliseconds, and anything near a second is already eating the lease.
inline constexpr std::array<Bucket, 13> kBuckets{{{0.0005, "0.0005"},
                                           {0.001, "0.001"},
                                           {0.0025, "0.0025"},
                                           {0.005, "0.005"},
                                           {0.01, "0.01"},
                                           {0.025, "0.025"},
                                           {0.05, "0.05"},
                                           {0.1, "0.1"},
                                           {0.25, "0.25"},
                                           {0.5, "0.5"},
                                           {1, "1"},
                                           {2.5, "2.5"},
                                           {5, "5"}}};

/// A wait for the lease: from a wake to a take-over (milliseconds) to a long line (an hour).
inline constexpr std::array<Bucket, 10> kWaitBuckets{{{0.01, "0.01"},
                                              {0.1, "0.1"},
                                              {1, "1"},
                                              {5, "5"},
                                              {15, "15"},
                                              {60, "60"},
                                              {300, "300"},
                                              {900, "900"},
                                              {3600, "3600"},
                                              {14400, "14400"}}};

/// A histogram over fixed buckets (guarded by Impl::mu).
template <std::size_t N>
struct Histogram {
  const std::array<Bucket, N>& buckets;
  std::array<std::uint64_t, N> counts{};  ///< per bucket, not cumulative
  std::uint64_t count = 0;
  double sum = 0;

  void observe(double seconds) {
    // A clock that stepped or a NaN must not poison _sum for the life of the process.
    if (!(seconds >= 0) || !std::isfinite(seconds)) seconds = 0;
    std::size_t b = 0;
    while (b < N && seconds > buckets[b].upper) ++b;
    if (b < N) ++counts[b];
    ++count;
    sum += seconds;
  }
};

inline constexpr long long kNoDeadline = std::numeric_limits<long long>::min();
/// No child has exited yet: redisgo_task_child_last_exit_code is absent (an exit code of
/// -1, as 0.1 showed, read as a real one to `!= 0` alerts).
inline constexpr int kNoExit = std::numeric_limits<int>::min();

// The label values the daemon is documented to use start at 0, so rate() and increase()
// see a series from the first scrape instead of missing the first event.
inline constexpr const char* kRenewalResults[] = {"confirmed", "failed", "lost"};
inline constexpr const char* kLossCauses[] = {"deadline", "lost", "taken"};
inline constexpr const char* kStepDownCauses[] = {"cannot_start", "handover", "health", "pause", "renewal_refused", "restart_limit"};
inline constexpr const char* kSkipReasons[] = {"claim_failed", "not_durable", "restart_guard"};
inline constexpr const char* kSkippedName = "redisgo_task_once_per_slots_skipped_total";
/// redisgo_task_state's label values, in the order of State.
inline constexpr std::array<const char*, kStateCount> kStateNames{
    "standby",  "in_line",     "restart_guard",       "paused",     "leader",
    "stepped_down", "unreachable", "credentials_refused", "tls_failed", "error_reply", "renewal_refused"};
static_assert(static_cast<std::size_t>(State::kRenewalRefused) + 1 == kStateCount);

using Counts = std::map<std::string, std::uint64_t, std::less<>>;

inline Counts zeroed(const char* const* first, const char* const* last) {
  Counts c;
  for (; first != last; ++first) c.emplace(*first, 0);
  return c;
}


}  // namespace detail

using namespace detail;

struct Metrics::Impl {
  Impl(std::string key, const Clock& c, ProcessProbe p) : clock(c), process(p) {
    key_label = "key=\"";
    append_escaped(key_label, key);
    key_label += '"';
  }

  void changed() { version.fetch_add(1, std::memory_order_relaxed); }

  /// `name{key="..."` (the caller adds more labels and the closing brace).
  void open_sample(std::string& out, const char* name) const {
    out += name;
    out += '{';
    out += key_label;
  }
  void sample(std::string& out, const char* name, std::string_view value) const {
    open_sample(out, name);
    out += "} ";
    out += value;
    out += '\n';
  }
  void labelled(std::string& out, const char* name, const char* label, std::string_view label_value,
                std::string_view value) const {
    open_sample(out, name);
    out += ',';
    out += label;
    out += "=\"";
    append_escaped(out, label_value);
    out += "\"} ";
    out += value;
    out += '\n';
  }
  /// A gauge of unix seconds (0 = never).
  void timestamp(std::string& out, const char* name, const std::atomic<double>& v) const {
    std::string text;
    append_timestamp(text, v.load(std::memory_order_relaxed));
    sample(out, name, text);
  }
  void build_info(std::string& out) const {
    append_header(out, "redisgo_task_build_info", "gauge", "Always 1; the version of the running binary is a label.");
    open_sample(out, "redisgo_task_build_info");
    out += ",version=\"";
    append_escaped(out, REDISGO_VERSION);
    out += "\"} 1\n";
  }
  /// The series of a finished run: in render() and in render_record() alike.
  void run_series(std::string& out) const {
    if (const int code = child_exit.load(std::memory_order_relaxed); code != kNoExit) {
      append_header(out, "redisgo_task_child_last_exit_code", "gauge",
                    "Exit code of the last child (128+N for signal N); absent before the first exit.");
      sample(out, "redisgo_task_child_last_exit_code", std::to_string(code));
    }
    append_header(out, "redisgo_task_child_last_start_timestamp_seconds", "gauge",
                  "Unix time the last child started (0 before the first).");
    timestamp(out, "redisgo_task_child_last_start_timestamp_seconds", last_start);
    append_header(out, "redisgo_task_last_success_timestamp_seconds", "gauge",
                  "Unix time a child last exited 0 (0 before the first; a oneshot run carries the one its "
                  "textfile had).");
    timestamp(out, "redisgo_task_last_success_timestamp_seconds", last_success);
    append_header(out, kSkippedName, "counter",
                  "once_per slots that no host ran though nobody had run them, by reason (a oneshot run carries the "
                  "count its textfile had).");
    counters(out, kSkippedName, "reason", skipped);
  }
  /// The config's series (the caller holds mu).
  void settings_series(std::string& out) const {
    append_header(out, "redisgo_task_config_info", "gauge", "Always 1; the task's mode and limit are labels.");
    open_sample(out, "redisgo_task_config_info");
    out += ",mode=\"";
    append_escaped(out, settings.mode);
    out += "\",limit=\"" + std::to_string(settings.limit) + "\"} 1\n";
    std::string v;
    append_header(out, "redisgo_task_expire_seconds", "gauge", "The lease's TTL (expire) in seconds.");
    append_double(v, settings.expire_seconds);
    sample(out, "redisgo_task_expire_seconds", v);
    v.clear();
    append_header(out, "redisgo_task_once_per_seconds", "gauge",
                  "The configured once_per period in seconds; 0 when not set.");
    append_double(v, settings.once_per_seconds);
    sample(out, "redisgo_task_once_per_seconds", v);
  }
  /// The config's, the labelled and the histogram families of render(), in its order, and
  /// the process' (the caller holds mu: _count, _sum and the buckets agree).
  void guarded_series(std::string& out) const;
  /// Per node, the Redis errors by kind (the caller holds mu).
  void redis_error_series(std::string& out) const {
    append_header(out, "redisgo_task_redis_errors_total", "counter",
                  "Failed calls and connections to each Redis node, by kind (unreachable, timeout, closed, protocol, "
                  "auth, tls, reply).");
    for (const auto& [node, kinds] : redis_errors) {
      for (const auto& [kind, n] : kinds) {
        open_sample(out, "redisgo_task_redis_errors_total");
        out += ",node=\"";
        append_escaped(out, node);
        out += "\",kind=\"";
        append_escaped(out, kind);
        out += "\"} " + std::to_string(n) + '\n';
      }
    }
  }
  /// The standard process metrics, under the names and help texts of Prometheus' own
  /// clients: node_exporter's own process_* families are the same, so that its textfile
  /// collector takes ours beside them (a help text that differs would have them dropped).
  void process_series(std::string& out) const {
    if (!process) return;
    const ProcessStats p = process();
    std::string v;
    // Plain decimals, never "5.24288e+06": every value here is a count, or seconds to the
    // clock tick.
    auto gauge = [&](const std::optional<double>& value, const char* name, const char* type, const char* help) {
      if (!value) return;
      append_header(out, name, type, help);
      v.clear();
      append_timestamp(v, *value);
      sample(out, name, v);
    };
    gauge(p.cpu_seconds, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
    gauge(p.open_fds, "process_open_fds", "gauge", "Number of open file descriptors.");
    gauge(p.resident_bytes, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    gauge(p.start_time_seconds, "process_start_time_seconds", "gauge",
          "Start time of the process since unix epoch in seconds.");
  }

  void counters(std::string& out, const char* name, const char* label, const Counts& values) const {
    for (const auto& [label_value, n] : values) labelled(out, name, label, label_value, std::to_string(n));
  }

  template <std::size_t N>
  void histogram(std::string& out, const std::string& name, const Histogram<N>& h) const {
    std::uint64_t cumulative = 0;
    const std::string bucket = name + "_bucket";
    for (std::size_t b = 0; b < N; ++b) {
      cumulative += h.counts[b];
      labelled(out, bucket.c_str(), "le", h.buckets[b].le, std::to_string(cumulative));
    }
    labelled(out, bucket.c_str(), "le", "+Inf", std::to_string(h.count));
    std::string sum;
    append_double(sum, h.sum);
    sample(out, (name + "_sum").c_str(), sum);
    sample(out, (name + "_count").c_str(), std::to_string(h.count));
  }

  static void bump(Counts& m, std::string_view label) {
    auto it = m.find(label);
    if (it == m.end()) it = m.emplace(std::string(label), 0).first;
    ++it->second;
  }

  /// The node's Redis errors by kind, every kind at 0 (the caller holds mu).
  Counts& redis_errors_of(std::string_view node) {
    for (auto& [name, kinds] : redis_errors) {
      if (name == node) return kinds;
    }
    redis_errors.emplace_back(std::string(node), zeroed(std::begin(kRedisErrorKinds), std::end(kRedisErrorKinds)));
    return redis_errors.back().second;
  }

  void add_redis_error(std::string_view node, std::string_view kind) {
    {
      std::lock_guard lock(mu);
      bump(redis_errors_of(node), kind);
    }
    changed();
  }

  const Clock& clock;
  ProcessProbe process;
  std::string key_label;  ///< key="<escaped key>", rendered into every sample
  std::atomic<std::uint64_t> version{0};

  std::atomic<std::uint64_t> token{0};
  std::atomic<long long> deadline_ns{kNoDeadline};  ///< Clock::time_point, or kNoDeadline
  std::atomic<std::uint64_t> acquisitions{0};
  std::atomic<std::uint64_t> child_starts{0};
  std::atomic<std::uint64_t> freezes_past_lease{0};
  std::atomic<int> child_exit{kNoExit};
  std::atomic<int> state{static_cast<int>(State::kStandby)};
  std::atomic<std::int64_t> line_position{0};
  std::atomic<double> last_success{0};
  std::atomic<double> last_start{0};
  std::atomic<std::uint64_t> textfile_write_errors{0};
  Settings settings;  ///< guarded by mu

  /// Guards the labelled families and the histogram (so _count, _sum and the buckets
  /// of one render always agree).
  mutable std::mutex mu;
  Counts renewals = zeroed(std::begin(kRenewalResults), std::end(kRenewalResults));
  Counts losses = zeroed(std::begin(kLossCauses), std::end(kLossCauses));
  Counts step_downs = zeroed(std::begin(kStepDownCauses), std::end(kStepDownCauses));
  Counts skipped = zeroed(std::begin(kSkipReasons), std::end(kSkipReasons));  ///< once_per slots not run, by reason
  Counts control = zeroed(std::begin(kControlKinds), std::end(kControlKinds));
  std::vector<std::pair<std::string, bool>> nodes;  ///< configured order, then first seen
  std::vector<std::pair<std::string, Counts>> redis_errors;  ///< by node (that order too), then kind
  Histogram<kBuckets.size()> renewal_durations{kBuckets};
  Histogram<kWaitBuckets.size()> waits{kWaitBuckets};
  std::int64_t line_length = 0;
  std::optional<std::string> refused_right;  ///< redisgo_task_renewal_refused_info

  mutable std::atomic<std::size_t> last_size{0};  ///< of the last render, to reserve for the next
};

}  // namespace redisgo::metrics
