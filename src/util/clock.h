#pragma once
/// Time behind an interface so lease arithmetic can be tested with a fake clock.
///
/// The real clock reads CLOCK_BOOTTIME: monotonic like steady_clock, but it keeps
/// counting while the machine is suspended. A lease on a remote Redis keeps expiring
/// while this host sleeps, so the local lease deadline must not stand still then.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace redisgo {

/// A monotonic clock. time_points are only meaningful relative to each other.
class Clock {
 public:
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock, duration>;

  virtual ~Clock() = default;
  virtual time_point now() const = 0;
};

/// CLOCK_BOOTTIME.
class SystemClock final : public Clock {
 public:
  time_point now() const override;
  /// A process-wide instance.
  static const SystemClock& instance();
};

/// The wall clock (CLOCK_REALTIME) since the Unix epoch: for what is shown or stored as a
/// date (log records, Redis-side timestamps, metrics), never for a deadline.
inline std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
inline std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
inline double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// A clock that only moves when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(duration start = std::chrono::seconds(1000)) : now_ns_(start.count()) {}
  time_point now() const override { return time_point(duration(now_ns_.load())); }
  void advance(duration d) { now_ns_ += d.count(); }

 private:
  std::atomic<long long> now_ns_;
};

using Millis = std::chrono::milliseconds;

/// Milliseconds from `now` until `deadline`, never negative.
inline Millis until(Clock::time_point deadline, Clock::time_point now) {
  if (deadline <= now) return Millis(0);
  return std::chrono::ceil<Millis>(deadline - now);
}

}  // namespace redisgo
