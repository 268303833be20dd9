#include <set>

#include "metrics/metrics_impl.h"

namespace redisgo::metrics {

const char* const kRedisErrorKinds[kRedisErrorKindCount] = {"auth",    "closed",      "protocol", "reply",
                                                            "timeout", "tls", "unreachable"};
const char* const kControlKinds[kControlKindCount] = {"handover", "pause", "resume"};

const char* to_string(State s) { return kStateNames[static_cast<std::size_t>(s)]; }

std::optional<State> state_of_cause(std::string_view cause) {
  if (cause.empty()) return std::nullopt;
  if (cause == "unreachable") return State::kUnreachable;
  if (cause == "credentials") return State::kCredentialsRefused;
  if (cause == "tls") return State::kTlsFailed;
  return State::kErrorReply;  // "error", and any cause added later: attempts reach no quorum
}

Metrics::Metrics(std::string key, std::vector<std::string> nodes, const Clock& clock, ProcessProbe process)
    : impl_(std::make_shared<Impl>(std::move(key), clock, process)) {
  std::set<std::string> seen;
  for (auto& n : nodes) {
    if (!seen.insert(n).second) continue;
    impl_->redis_errors_of(n);
    impl_->nodes.emplace_back(std::move(n), false);
  }
}

std::uint64_t Metrics::version() const { return impl_->version.load(std::memory_order_relaxed); }

void Metrics::changed() { impl_->changed(); }

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

void Metrics::set_renewal_refused(std::optional<std::string> right) {
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

void Metrics::add_freeze_past_lease() {
  impl_->freezes_past_lease.fetch_add(1, std::memory_order_relaxed);
  changed();
}

void Metrics::set_child_exit(int code) {
  if (code == kNoExit) return;
  if (impl_->child_exit.exchange(code, std::memory_order_relaxed) != code) changed();
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

void Metrics::add_control_request(std::string_view kind) {
  {
    std::lock_guard lock(impl_->mu);
    Impl::bump(impl_->control, kind);
  }
  changed();
}

void Metrics::set_node_up(std::string_view node, bool up) {
  bool moved = false;
  {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->nodes.begin();
    while (it != impl_->nodes.end() && it->first != node) ++it;
    if (it == impl_->nodes.end()) {
      impl_->nodes.emplace_back(std::string(node), up);
      impl_->redis_errors_of(node);
      moved = true;
    } else if (it->second != up) {
      it->second = up;
      moved = true;
    }
  }
  if (moved) changed();
}

void Metrics::add_redis_error(std::string_view node, std::string_view kind) { impl_->add_redis_error(node, kind); }

std::function<void(std::string_view)> Metrics::redis_error_counter(std::string node) {
  return [impl = impl_, node = std::move(node)](std::string_view kind) { impl->add_redis_error(node, kind); };
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

}  // namespace redisgo::metrics
