#include "log/cause_log.h"

#include "util/duration.h"

namespace redisgo::log {

CauseLog::CauseLog(std::shared_ptr<spdlog::logger> logger, std::string what, std::chrono::milliseconds interval,
                   const Clock& clock)
    : logger_(std::move(logger)), what_(std::move(what)), interval_(interval), clock_(clock) {}

void CauseLog::failure(const std::string& cause, const std::string& message) {
  const auto now = clock_.now();
  auto [it, fresh] = causes_.try_emplace(cause);
  State& s = it->second;
  if (!fresh && !s.failing && now - s.last_line >= interval_) {
    s = State{};  // recovered long enough ago: a new episode
    fresh = true;
  }
  ++s.total;
  s.last_message = message;
  s.failing = true;
  if (fresh) {
    logger_->warn("{}: {}", what_, message);
    s.last_line = now;
    return;
  }
  ++s.unreported;
  if (now - s.last_line >= interval_) {
    const std::string flaps =
        s.recoveries > 0 ? ", recovering " + std::to_string(s.recoveries) + " time(s) in between" : "";
    logger_->warn("{}: still failing ({} more time(s) in the last {}{}): {}", what_, s.unreported,
                  format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(now - s.last_line)), flaps,
                  message);
    s.unreported = 0;
    s.recoveries = 0;
    s.recovery_said = false;
    s.last_line = now;
  }
}

void CauseLog::success(const std::string& cause) {
  auto it = causes_.find(cause);
  if (it == causes_.end() || !it->second.failing) return;
  State& s = it->second;
  const auto now = clock_.now();
  s.failing = false;
  if (s.recovery_said && now - s.last_line < interval_) {
    ++s.recoveries;  // flapping: said with the next summary
    return;
  }
  const std::string flaps =
      s.recoveries > 0 ? " (recovering " + std::to_string(s.recoveries) + " time(s) in between)" : "";
  logger_->info("{}: {} recovered after {} failure(s){}", what_, cause, s.total, flaps);
  s.recoveries = 0;
  s.unreported = 0;
  s.recovery_said = true;
  s.last_line = now;
}

std::size_t CauseLog::active() const noexcept {
  std::size_t n = 0;
  for (const auto& [cause, s] : causes_) n += s.failing ? 1 : 0;
  return n;
}

}  // namespace redisgo::log
