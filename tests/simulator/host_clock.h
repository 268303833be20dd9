#pragma once
/// A simulated host's clocks: simulated time plus this host's offsets, at the simulated rate
/// (docs/DESIGN.md "Simulation"). Every clock of the run runs at the same rate, as SPEC's
/// mutual exclusion assumes; what differs between hosts is where they stand:
///  - the boot-time clock (`Clock`, what every deadline is read from) starts anywhere: hosts
///    booted at different times, and no rule compares two hosts' boot-time clocks;
///  - the wall clock (µs since the epoch: TIME on a node, a holder's fence proposal) is off
///    by at most the drift a lease allows (expire × drift_factor + drift_fixed), as NTP keeps
///    a cluster's clocks.

#include <cstdint>

#include "simulator/world.h"
#include "util/clock.h"

namespace redisgo::simulator {

/// The simulated epoch: where simulated time 0 falls on the wall clock (2026-01-01T00:00:00Z).
inline constexpr std::int64_t kEpochUs = 1'767'225'600LL * 1'000'000;

class HostClock final : public Clock {
 public:
  HostClock(const World& world, std::int64_t boot_offset_us, std::int64_t wall_offset_us)
      : world_(world), boot_offset_us_(boot_offset_us), wall_offset_us_(wall_offset_us) {}
  time_point now() const override { return at(world_.now()); }
  /// The boot-time reading at simulated instant `t`.
  time_point at(Time t) const { return time_point(std::chrono::microseconds(t + boot_offset_us_)); }
  /// The first simulated instant at which this clock reads `p` or later (µs: rounded up, so that
  /// a timer set for `p` finds its time come when it fires).
  Time when(time_point p) const {
    return std::chrono::ceil<std::chrono::microseconds>(p.time_since_epoch()).count() - boot_offset_us_;
  }
  /// The wall clock, µs since the epoch.
  std::int64_t wall_us() const { return kEpochUs + world_.now() + wall_offset_us_; }

 private:
  const World& world_;
  std::int64_t boot_offset_us_;
  std::int64_t wall_offset_us_;
};

}  // namespace redisgo::simulator
