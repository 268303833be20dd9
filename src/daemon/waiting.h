#pragma once
/// What a waiter tells the person or log watching it (redisgo_task(1) "Waiting at a terminal").
/// At a terminal (stderr is a TTY): one line, rewritten in place after every attempt, with
/// who holds the key, its remaining TTL, the attempts and the time waited; cleared when
/// the wait ends. Elsewhere: an info line when the holder changes, otherwise at most one
/// every 30 s, so a journal shows a long wait without being flooded.

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "log/fmt_engine.h"
#include "util/clock.h"

namespace redisgo::daemon {

class WaitReporter {
 public:
  static constexpr std::chrono::seconds kQuietEvery{30};

  /// `tty_fd`: where the in-place line goes (-1: not a terminal, log lines instead).
  WaitReporter(std::shared_ptr<spdlog::logger> log, std::string key, int tty_fd);

  /// After an attempt that did not get the lease: the holder a quorum named ("" none
  /// known), its TTL in ms (-1 unknown), attempts so far, when the wait began, and how long
  /// the restart guard still holds the lease back (-1: it does not).
  /// In the waiting line: `position` (1 = head; 0 = not in line) of `length`. `quorum`:
  /// a quorum of nodes answered the attempt (else no holder named is no news of the key).
  void missed(const std::string& holder, std::int64_t ttl_ms, int attempts, Clock::time_point began,
              Clock::time_point now, std::int64_t guard_ms = -1, std::int64_t position = 0, std::int64_t length = 0,
              bool quorum = true);
  /// A terminal line is shown: redraw it every second while waiting.
  bool refreshes() const { return tty_fd_ >= 0; }
  /// The wait ended (acquired, gave up or stopped): the terminal line is cleared.
  void done();

  /// The text of the line (also what the log says), for tests.
  static std::string line(const std::string& key, const std::string& holder, std::int64_t ttl_ms, int attempts,
                          std::chrono::milliseconds waited, std::int64_t guard_ms = -1, std::int64_t position = 0,
                          std::int64_t length = 0, bool quorum = true);

 private:
  std::shared_ptr<spdlog::logger> log_;
  std::string key_;
  int tty_fd_;
  bool shown_ = false;          ///< a terminal line is on screen
  bool logged_ = false;
  std::string last_holder_;
  Clock::time_point last_log_{};
};

/// stderr if it is a terminal, else -1.
int terminal_stderr();

}  // namespace redisgo::daemon
