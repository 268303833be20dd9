#pragma once
/// The messages the lease's channels carry, read in one place: what the scripts publish to
/// the waiters (src/lock/lua/lib/wake_waiters.lua, the release scripts) and what `handover` and
/// `pause --stop` publish to the leader. Anything else on those channels is not ours to read.

#include <chrono>
#include <string>

namespace redisgo::lock {

/// A message heard by a waiter.
struct Wake {
  enum class Kind {
    kNone,      ///< not ours to read (our own release, a stray publish)
    kReleased,  ///< fair = false: another holder released the lease
    kTurn,      ///< fair: the line woke us, the lease is our turn ("turn")
    kNext,      ///< fair: the waiter before us was woken and has `window` to come ("next <ms>")
  };
  Kind kind = Kind::kNone;
  std::chrono::milliseconds window{0};  ///< kNext
  bool operator==(const Wake&) const = default;
};
/// `payload` as heard by `holder`: with `fair`, on its own wake channel; else on the release
/// channel every standby shares, where a release names its holder.
Wake read_wake(const std::string& payload, bool fair, const std::string& holder);

/// A control message heard by the leader `holder`.
enum class Control {
  kNone,
  kHandover,   ///< `handover`: the bare holder id, or "any"
  kPauseStop,  ///< `pause --stop`: kPauseStopPrefix and the holder id
};
Control read_control(const std::string& payload, const std::string& holder);

}  // namespace redisgo::lock
