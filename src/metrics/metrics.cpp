#include "metrics/metrics.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <utility>

#include "util/float_text.h"

#ifndef REDISGO_VERSION
#define REDISGO_VERSION "unknown"
#endif

namespace redisgo::metrics {

namespace {

/// Renewal rounds go to a LAN Redis: most take well under a millisecond, a slow one a few
/// milliseconds, and anything near a second is already eating the lease. The upper
/// bounds are spelled out so that `le` reads as written (to_chars would give "5e-04").
struct Bucket {
  double upper;
  const char* le;
};
constexpr std::array<Bucket, 13> kBuckets{{{0.0005, "0.0005"},
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
constexpr std::array<Bucket, 10> kWaitBuckets{{{0.01, "0.01"},
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

constexpr long long kNoDeadline = std::numeric_limits<long long>::min();

// The label values the daemon is documented to use start at 0, so rate() and increase()
// see a series from the first scrape instead of missing the first event.
constexpr const char* kRenewalResults[] = {"confirmed", "failed", "lost"};
constexpr const char* kLossCauses[] = {"deadline", "lost", "taken"};
constexpr const char* kBlockedCauses[] = {"credentials", "error", "tls", "unreachable"};
constexpr const char* kStepDownCauses[] = {"cannot_start", "handover", "health", "pause", "renewal_refused", "restart_limit"};
constexpr const char* kSkipReasons[] = {"claim_failed", "not_durable", "restart_guard"};
constexpr const char* kSkippedName = "redisgo_task_once_per_slots_skipped_total";
/// redisgo_task_state's label values, in the order of State.
constexpr std::array<const char*, kStateCount> kStateNames{
    "standby",  "in_line",     "restart_guard",       "paused",     "leader",
    "stepped_down", "unreachable", "credentials_refused", "tls_failed", "error_reply", "renewal_refused"};
static_assert(static_cast<std::size_t>(State::kRenewalRefused) + 1 == kStateCount);

/// A label value in the exposition format: backslash, double quote and newline escaped.
void append_escaped(std::string& out, std::string_view value) {
  // Runs between special characters are appended whole: label values are mostly plain.
  for (;;) {
    auto special = value.find_first_of("\\\"\n");
    out.append(value.substr(0, special));
    if (special == std::string_view::npos) return;
    out += value[special] == '\n' ? "\\n" : value[special] == '"' ? "\\\"" : "\\\\";
    value.remove_prefix(special + 1);
  }
}

/// Shortest text that reads back as the same double; Prometheus' spelling of the
/// non-finite values.
void append_double(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    append_shortest(out, v, FloatStyle::kGeneral);
  }
}

/// Unix seconds to the millisecond, in plain decimals ("1795805107.934", not
/// "1.795805107934e+09"): both parse, this one reads.
void append_timestamp(std::string& out, double v) {
  if (!std::isfinite(v)) return append_double(out, v);
  std::string text;
  append_fixed(text, v, 3);
  // Trailing zeros (and a bare point) go: 0 stays "0", 1700000000.5 reads as written.
  std::size_t end = text.size();
  while (end > 0 && text[end - 1] == '0') --end;
  if (end > 0 && text[end - 1] == '.') --end;
  out.append(text, 0, end);
}

void append_header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

}  // namespace

const char* to_string(State s) { return kStateNames[static_cast<std::size_t>(s)]; }

std::optional<State> state_of_cause(std::string_view cause) {
  if (cause.empty()) return std::nullopt;
  if (cause == "unreachable") return State::kUnreachable;
  if (cause == "credentials") return State::kCredentialsRefused;
  if (cause == "tls") return State::kTlsFailed;
  return State::kErrorReply;  // "error", and any cause added later: attempts reach no quorum
}

struct Metrics::Impl {
  Impl(std::string key, const Clock& c) : clock(c) {
    key_label = "key=\"";
    append_escaped(key_label, key);
    key_label += '"';
  }

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
    append_header(out, "redisgo_task_child_last_exit_status", "gauge",
                  "Exit status of the last child (128+N for signal N; -1 before the first exit).");
    sample(out, "redisgo_task_child_last_exit_status", std::to_string(child_exit.load(std::memory_order_relaxed)));
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

  void counters(std::string& out, const char* name, const char* label,
                const std::map<std::string, std::uint64_t, std::less<>>& values) const {
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

  static void bump(std::map<std::string, std::uint64_t, std::less<>>& m, std::string_view label) {
    auto it = m.find(label);
    if (it == m.end()) it = m.emplace(std::string(label), 0).first;
    ++it->second;
  }

  const Clock& clock;
  std::string key_label;  ///< key="<escaped key>", rendered into every sample

  std::atomic<bool> leader{false};
  std::atomic<std::uint64_t> token{0};
  std::atomic<long long> deadline_ns{kNoDeadline};  ///< Clock::time_point, or kNoDeadline
  std::atomic<std::uint64_t> acquisitions{0};
  std::atomic<std::uint64_t> child_starts{0};
  std::atomic<std::uint64_t> frozen_past_lease{0};
  std::atomic<int> child_exit{-1};
  std::atomic<int> state{static_cast<int>(State::kStandby)};
  std::atomic<std::int64_t> line_position{0};
  std::atomic<double> last_success{0};
  std::atomic<double> last_start{0};
  std::atomic<std::uint64_t> textfile_write_errors{0};
  Settings settings;  ///< guarded by mu

  /// Guards the labelled families and the histogram (so _count, _sum and the buckets
  /// of one render always agree).
  mutable std::mutex mu;
  std::map<std::string, std::uint64_t, std::less<>> renewals;
  std::map<std::string, std::uint64_t, std::less<>> losses;
  std::map<std::string, std::uint64_t, std::less<>> step_downs;
  std::map<std::string, std::uint64_t, std::less<>> skipped;  ///< once_per slots not run, by reason
  std::vector<std::pair<std::string, bool>> nodes;  ///< configured order, then first seen
  Histogram<kBuckets.size()> renewal_durations{kBuckets};
  Histogram<kWaitBuckets.size()> waits{kWaitBuckets};
  std::int64_t line_length = 0;
  std::map<std::string, std::uint64_t, std::less<>> blocked;  ///< cause -> 0/1
  std::optional<std::string> refused_right;                   ///< redisgo_task_renewals_refused

  mutable std::atomic<std::size_t> last_size{0};  ///< of the last render, to reserve for the next
};

Metrics::Metrics(std::string key, std::vector<std::string> nodes, const Clock& clock)
    : impl_(std::make_shared<Impl>(std::move(key), clock)) {
  for (auto* r : kRenewalResults) impl_->renewals.emplace(r, 0);
  for (auto* c : kLossCauses) impl_->losses.emplace(c, 0);
  for (auto* c : kStepDownCauses) impl_->step_downs.emplace(c, 0);
  for (auto* r : kSkipReasons) impl_->skipped.emplace(r, 0);
  for (auto* c : kBlockedCauses) impl_->blocked.emplace(c, 0);
  std::set<std::string> seen;
  for (auto& n : nodes) {
    if (seen.insert(n).second) impl_->nodes.emplace_back(std::move(n), false);
  }
}

void Metrics::set_leader(bool leader) {
  if (impl_->leader.exchange(leader, std::memory_order_relaxed) != leader) changed();
}

void Metrics::set_token(std::uint64_t token) {
  if (impl_->token.exchange(token, std::memory_order_relaxed) != token) changed();
}

void Metrics::set_lease_deadline(std::optional<Clock::time_point> deadline) {
  long long ns = deadline ? deadline->time_since_epoch().count() : kNoDeadline;
  if (impl_->deadline_ns.exchange(ns, std::memory_order_relaxed) != ns) changed();
}

void Metrics::add_acquisition() {
  impl_->acquisitions.fetch_add(1, std::memory_order_relaxed);
  changed();
}

void Metrics::add_renewal(std::string_view result, double seconds) {
  {
    std::lock_guard lock(impl_->mu);
    Impl::bump(impl_->renewals, result);
    impl_->renewal_durations.observe(seconds);
  }
  changed();
}

void Metrics::add_wait(double seconds) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->waits.observe(seconds);
  }
  changed();
}

void Metrics::set_line_length(std::int64_t length) {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->line_length == length) return;
    impl_->line_length = length;
  }
  changed();
}

void Metrics::set_cannot_acquire(std::string_view cause) {
  bool moved = false;
  {
    std::lock_guard lock(impl_->mu);
    if (!cause.empty() && !impl_->blocked.contains(cause)) impl_->blocked.emplace(std::string(cause), 0);
    for (auto& [c, v] : impl_->blocked) {
      const std::uint64_t want = c == cause ? 1 : 0;
      moved = moved || v != want;
      v = want;
    }
  }
  if (moved) changed();
}

void Metrics::set_renewals_refused(std::optional<std::string> right) {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->refused_right == right) return;
    impl_->refused_right = std::move(right);
  }
  changed();
}

void Metrics::add_lease_loss(std::string_view cause) {
  {
    std::lock_guard lock(impl_->mu);
    Impl::bump(impl_->losses, cause);
  }
  changed();
}

void Metrics::add_child_start() {
  impl_->child_starts.fetch_add(1, std::memory_order_relaxed);
  changed();
}

void Metrics::add_frozen_past_lease() {
  impl_->frozen_past_lease.fetch_add(1, std::memory_order_relaxed);
  changed();
}

void Metrics::set_child_exit(int status) {
  if (impl_->child_exit.exchange(status, std::memory_order_relaxed) != status) changed();
}

void Metrics::add_step_down(std::string_view cause) {
  {
    std::lock_guard lock(impl_->mu);
    Impl::bump(impl_->step_downs, cause);
  }
  changed();
}

void Metrics::add_once_skipped(std::string_view reason) {
  {
    std::lock_guard lock(impl_->mu);
    Impl::bump(impl_->skipped, reason);
  }
  changed();
}

std::uint64_t Metrics::once_skipped(std::string_view reason) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->skipped.find(reason);
  return it == impl_->skipped.end() ? 0 : it->second;
}

void Metrics::set_node_up(std::string_view node, bool up) {
  bool moved = false;
  {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->nodes.begin();
    while (it != impl_->nodes.end() && it->first != node) ++it;
    if (it == impl_->nodes.end()) {
      impl_->nodes.emplace_back(std::string(node), up);
      moved = true;
    } else if (it->second != up) {
      it->second = up;
      moved = true;
    }
  }
  if (moved) changed();
}

void Metrics::set_state(State state) {
  if (impl_->state.exchange(static_cast<int>(state), std::memory_order_relaxed) != static_cast<int>(state)) changed();
}

State Metrics::state() const { return static_cast<State>(impl_->state.load(std::memory_order_relaxed)); }

void Metrics::set_line_position(std::int64_t position) {
  if (impl_->line_position.exchange(position, std::memory_order_relaxed) != position) changed();
}

void Metrics::set_last_success(double unix_seconds) {
  if (std::isfinite(unix_seconds) && impl_->last_success.exchange(unix_seconds, std::memory_order_relaxed) != unix_seconds) {
    changed();
  }
}

void Metrics::set_last_start(double unix_seconds) {
  if (std::isfinite(unix_seconds) && impl_->last_start.exchange(unix_seconds, std::memory_order_relaxed) != unix_seconds) {
    changed();
  }
}

void Metrics::set_textfile_write_errors(std::uint64_t total) {
  if (impl_->textfile_write_errors.exchange(total, std::memory_order_relaxed) != total) changed();
}

void Metrics::configure(const Settings& settings) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->settings = settings;
  }
  changed();
}

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
    // reference to libm's fesetround that made the binary load libm.so.6 (issue 21).
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

std::string Metrics::render() const {
  const Impl& m = *impl_;
  std::string out;
  // The text is about as long as last time: one allocation instead of a series of
  // copies (it matters with many nodes).
  out.reserve(std::max<std::size_t>(4096, m.last_size.load(std::memory_order_relaxed) + 1024));

  m.build_info(out);

  append_header(out, "redisgo_task_leader", "gauge", "1 while this daemon holds the lease on the key, else 0.");
  m.sample(out, "redisgo_task_leader", m.leader.load(std::memory_order_relaxed) ? "1" : "0");

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

  std::lock_guard lock(m.mu);
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

  append_header(out, "redisgo_task_cannot_acquire", "gauge",
                "1 while this daemon's attempts reach no quorum, by cause (refused credentials, failed TLS "
                "verification, an error reply, nodes unreachable): this host cannot run the job.");
  m.counters(out, "redisgo_task_cannot_acquire", "cause", m.blocked);

  if (m.refused_right) {
    append_header(out, "redisgo_task_renewals_refused", "gauge",
                  "1 while this daemon does not take the lease because Redis refused its renewals; the right the "
                  "ACL user lacks is a label.");
    m.labelled(out, "redisgo_task_renewals_refused", "right", *m.refused_right, "1");
  }

  append_header(out, "redisgo_task_lease_losses_total", "counter", "Leases lost while held, by cause.");
  m.counters(out, "redisgo_task_lease_losses_total", "cause", m.losses);

  append_header(out, "redisgo_task_child_starts_total", "counter", "Child processes started.");
  m.sample(out, "redisgo_task_child_starts_total", std::to_string(m.child_starts.load(std::memory_order_relaxed)));

  append_header(out, "redisgo_task_frozen_past_lease_total", "counter",
                "Times this host was frozen past its lease deadline with its child alive: the child may have "
                "overlapped the next holder.");
  m.sample(out, "redisgo_task_frozen_past_lease_total",
           std::to_string(m.frozen_past_lease.load(std::memory_order_relaxed)));

  m.run_series(out);

  append_header(out, "redisgo_task_step_downs_total", "counter", "Times this daemon stepped down as leader, by cause.");
  m.counters(out, "redisgo_task_step_downs_total", "cause", m.step_downs);

  append_header(out, "redisgo_task_textfile_write_errors_total", "counter",
                "Writes of the metrics textfile that failed (it then keeps what the last good write said).");
  m.sample(out, "redisgo_task_textfile_write_errors_total",
           std::to_string(m.textfile_write_errors.load(std::memory_order_relaxed)));

  append_header(out, "redisgo_task_node_up", "gauge", "1 if the Redis node answered the last request, else 0.");
  for (const auto& [name, up] : m.nodes) m.labelled(out, "redisgo_task_node_up", "node", name, up ? "1" : "0");
  m.last_size.store(out.size(), std::memory_order_relaxed);
  return out;
}

}  // namespace redisgo::metrics
