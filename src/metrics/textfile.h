#pragma once
/// The textfile's writer (internal to the metrics module; metrics.h is its interface).
///
/// The open/write/rename of the textfile happen on a thread of their own, never on the
/// exporter's: a write that blocks (a hung NFS mount, a stalled disk) must hold up neither
/// a scrape of /metrics nor a stop. The exporter only hands over the latest text; a text
/// not written yet is replaced by a newer one, so nothing queues up behind a hung write.
///
/// A stop waits a bounded time for the last write. A write still blocked then is abandoned:
/// the thread is detached and finishes (or hangs) on its own. It owns, with the writer, the
/// only state it touches (the text, the counters, the write function), so it outlives the
/// Exporter safely; the descriptor of the write it is blocked in is the only one it can
/// hold, and it closes it when the write returns (the process's exit takes it otherwise).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace redisgo::metrics::detail {

class TextfileWriter {
 public:
  /// Writes `content` to `path` atomically; "" or why it failed. May block.
  using Write = std::function<std::string(const std::string& path, const std::string& content)>;

  /// Starts the thread (throws std::system_error if it cannot).
  TextfileWriter(std::string path, Write write);
  /// finish() with no wait, when it was not called.
  ~TextfileWriter();
  TextfileWriter(const TextfileWriter&) = delete;
  TextfileWriter& operator=(const TextfileWriter&) = delete;

  /// Hands over the text to write next (replacing one not written yet). Never waits for
  /// the file.
  void submit(std::string text);
  /// Hands over the removal of the file (replacing a text not written yet): it is removed
  /// only when it is still the file of our last write (the same inode), never one that
  /// another process renamed over it since; that is a failure then, said in last_error().
  void submit_remove();
  /// Waits at most `bound` until everything submitted has been written or has failed;
  /// true if it has.
  bool wait(std::chrono::milliseconds bound);
  /// Ends the thread once what was submitted is written: joined if that happens within
  /// `bound` (true), else detached, its write abandoned (false). Idempotent.
  bool finish(std::chrono::milliseconds bound);
  /// A write is in progress now (blocked, maybe).
  bool writing() const;

  /// Writes that failed so far.
  std::uint64_t failures() const;
  /// Why the last write failed; "" once one succeeded after it.
  std::string last_error() const;

 private:
  struct State;
  static void run(const std::shared_ptr<State>& state) noexcept;
  /// The next job (a removal, or the text to write), replacing one not started yet.
  void hand_over(bool remove, std::string text);

  std::shared_ptr<State> state_;
  std::thread thread_;
  bool finished_ = false;
};

}  // namespace redisgo::metrics::detail
