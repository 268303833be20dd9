#pragma once
/// Repeated failures, logged by cause (docs/DESIGN.md, invariant 7). A cause is a
/// stable key such as "127.0.0.1:7001 connect" — never message text, which carries
/// countdowns and errno details that change from one attempt to the next.
///
///  - the first failure of a cause is logged at once, at warn;
///  - while it recurs, at most one summary line per `interval` (how many times, the latest
///    message);
///  - when it succeeds again (the node answered), one info line says it recovered and
///    how many failures it had cost. A round where the node's answer is still pending
///    is neither: a slow node must not flap between "failing" and "recovered";
///  - a cause that fails again within `interval` of its last line is flapping, not a new
///    episode: its failures and recoveries are counted into the next summary, so that a
///    cause failing every other attempt still costs at most two lines per `interval` (a
///    fault that comes and goes at every attempt would otherwise log a warning and a
///    recovery at the attempt's pace).

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "log/fmt_engine.h"
#include "util/clock.h"

namespace redisgo::log {

class CauseLog {
 public:
  static constexpr std::chrono::milliseconds kDefaultInterval{30'000};

  CauseLog(std::shared_ptr<spdlog::logger> logger, std::string what,
           std::chrono::milliseconds interval = kDefaultInterval, const Clock& clock = SystemClock::instance());

  /// One failure of `cause`.
  void failure(const std::string& cause, const std::string& message);
  /// `cause` worked: if it was failing, report it recovered and forget it.
  void success(const std::string& cause);
  /// Causes currently failing.
  std::size_t active() const noexcept;

 private:
  struct State {
    std::uint64_t total = 0;        // failures since it started
    std::uint64_t unreported = 0;   // since the last line
    std::uint64_t recoveries = 0;   // recoveries not said since the last line (flapping)
    Clock::time_point last_line{};
    std::string last_message;
    bool failing = true;
    bool recovery_said = false;     // a "recovered" line since the last warning
  };
  std::shared_ptr<spdlog::logger> logger_;
  std::string what_;
  std::chrono::milliseconds interval_;
  const Clock& clock_;
  std::map<std::string, State> causes_;
};

}  // namespace redisgo::log
