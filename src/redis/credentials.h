#pragma once
/// The password connections send with AUTH when it can change under a running daemon
/// (redisgo_task(1), password_file): an operator rotates it in the file and in Redis, in
/// either order, and no daemon needs a restart.
///
/// One Credentials is shared by every connection of a process that uses the same password
/// (the main loop's, the renewal thread's, the subscribers'), each thread with its own
/// connections: it is the only state they share, behind a mutex. A connection whose AUTH is
/// refused calls refused(); the first one re-reads the source (at most once per
/// `min_reread_gap`, so a server that refuses every attempt costs one read per second, not
/// one per connection and attempt), and every connection refused under the old password
/// learns from its generation that a newer one exists and retries once with it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace redisgo::redis {

class Credentials {
 public:
  /// Reads the password again. Given the one in use; returns the new one only when it
  /// differs, nullopt when it is the same or cannot be read. It says what it found in its
  /// own words (the daemon logs "password file changed" there); never the secret.
  using Reread = std::function<std::optional<std::string>(const std::string& current)>;

  /// `reread` empty: the password never changes (an environment variable, the config file).
  explicit Credentials(std::string password, Reread reread = {},
                       std::chrono::milliseconds min_reread_gap = std::chrono::seconds(1));
  Credentials(const Credentials&) = delete;
  Credentials& operator=(const Credentials&) = delete;

  struct Current {
    std::string password;
    std::uint64_t generation = 0;  ///< bumped by every change of password
  };
  /// The password to send now, and its generation (to pass to refused()).
  Current current() const;

  /// AUTH with the password of `generation` was refused. True when a newer password is
  /// there to retry with: learnt since (by another connection), or re-read now and
  /// different. Re-reads at most once per min_reread_gap; a second caller waits for the
  /// first one's read rather than reading again. Thread-safe; never throws.
  bool refused(std::uint64_t generation) noexcept;

 private:
  mutable std::mutex mu_;       // password_, generation_
  std::string password_;
  std::uint64_t generation_ = 1;
  std::mutex reread_mu_;        // one re-read at a time; current() never waits for one
  Reread reread_;
  std::chrono::milliseconds min_gap_;
  std::optional<std::chrono::steady_clock::time_point> last_reread_;  // under reread_mu_
};

}  // namespace redisgo::redis
