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
  ++s.total;
  s.last_message = message;
  if (fresh) {
    logger_->warn("{}: {}", what_, message);
    s.last_line = now;
    return;
  }
  ++s.unreported;
  if (now - s.last_line >= interval_) {
    logger_->warn("{}: still failing ({} more time(s) in the last {}): {}", what_, s.unreported,
                  format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(now - s.last_line)), message);
    s.unreported = 0;
    s.last_line = now;
  }
}

void CauseLog::success(const std::string& cause) {
  auto it = causes_.find(cause);
  if (it == causes_.end()) return;
  logger_->info("{}: {} recovered after {} failure(s)", what_, cause, it->second.total);
  causes_.erase(it);
}

}  // namespace redisgo::log
