#include "metrics/textfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>

#include "metrics/metrics.h"
#include "util/error.h"

namespace redisgo::metrics::detail {

struct TextfileWriter::State {
  std::string path;
  Write write;
  mutable std::mutex mu;
  std::condition_variable work;  // a text was submitted, or the stop
  std::condition_variable done;  // a write ended
  struct Job {
    bool remove = false;
    std::string text;
  };
  std::optional<Job> next;
  /// The file of our last successful write (its inode, size and mtime), for a removal.
  bool wrote = false;
  struct stat written {};
  std::uint64_t submitted = 0;   // texts handed over
  std::uint64_t completed = 0;   // the last of them written (or failed)
  bool in_write = false;
  bool stop = false;
  std::uint64_t failures = 0;
  std::string last_error;
};

namespace {
/// Still the file we wrote last: the same inode (not a file renamed over ours), and neither
/// its size nor its mtime changed (not written in place by another process, whose file we
/// would otherwise remove at exit).
bool same_file_as_written(const struct stat& now, const struct stat& ours) {
  return now.st_dev == ours.st_dev && now.st_ino == ours.st_ino && now.st_size == ours.st_size &&
         now.st_mtim.tv_sec == ours.st_mtim.tv_sec && now.st_mtim.tv_nsec == ours.st_mtim.tv_nsec;
}
}  // namespace

TextfileWriter::TextfileWriter(std::string path, Write write) : state_(std::make_shared<State>()) {
  state_->path = std::move(path);
  state_->write = std::move(write);
  // The thread shares the state: detached after an abandoned write, it keeps what it uses.
  thread_ = std::thread([s = state_] { run(s); });
}

TextfileWriter::~TextfileWriter() { finish(std::chrono::milliseconds(0)); }

void TextfileWriter::run(const std::shared_ptr<State>& s) noexcept {
  std::unique_lock lk(s->mu);
  for (;;) {
    s->work.wait(lk, [&] { return s->stop || s->next.has_value(); });
    if (!s->next) return;  // stopped, and everything handed over is written
    State::Job job = std::move(*s->next);
    s->next.reset();
    const std::uint64_t seq = s->submitted;
    s->in_write = true;
    const bool wrote = s->wrote;
    const struct stat ours = s->written;
    lk.unlock();
    std::string error;
    struct stat st {};
    bool have_st = false;
    try {
      if (job.remove) {
        if (::lstat(s->path.c_str(), &st) != 0) {
          const int err = errno;
          if (err != ENOENT) error = errno_message("metrics textfile " + s->path + ": cannot remove it", err);
        } else if (!wrote || !same_file_as_written(st, ours)) {
          error = "metrics textfile " + s->path +
                  ": left in place, another process has written it since our last write (is it the textfile of "
                  "another daemon too?)";
        } else if (::unlink(s->path.c_str()) != 0) {
          const int err = errno;
          if (err != ENOENT) error = errno_message("metrics textfile " + s->path + ": cannot remove it", err);
        }
      } else {
        error = s->write(s->path, job.text);
        // The inode we wrote, so that a removal at exit takes only our own file. (Another
        // daemon renaming over it in the instant between our rename and this lstat would
        // be taken for ours: two daemons sharing one textfile is a config error anyway.)
        have_st = error.empty() && ::lstat(s->path.c_str(), &st) == 0;
      }
    } catch (const std::exception& e) {
      error = "metrics textfile " + s->path + ": " + e.what();
    } catch (...) {
      error = "metrics textfile " + s->path + ": unknown error";
    }
    lk.lock();
    if (have_st) {
      s->wrote = true;
      s->written = st;
    }
    s->in_write = false;
    s->completed = seq;
    if (error.empty()) {
      s->last_error.clear();
    } else {
      ++s->failures;
      s->last_error = std::move(error);
    }
    s->done.notify_all();
  }
}

void TextfileWriter::submit(std::string text) { hand_over(false, std::move(text)); }

void TextfileWriter::submit_remove() { hand_over(true, {}); }

void TextfileWriter::hand_over(bool remove, std::string text) {
  std::lock_guard lk(state_->mu);
  state_->next = State::Job{remove, std::move(text)};
  ++state_->submitted;
  state_->work.notify_one();
}

bool TextfileWriter::wait(std::chrono::milliseconds bound) {
  std::unique_lock lk(state_->mu);
  return state_->done.wait_for(lk, bound, [&] { return state_->completed == state_->submitted; });
}

bool TextfileWriter::finish(std::chrono::milliseconds bound) {
  if (finished_) return true;
  finished_ = true;
  bool idle;
  {
    std::unique_lock lk(state_->mu);
    state_->stop = true;
    state_->work.notify_one();
    idle = state_->done.wait_for(lk, bound, [&] { return state_->completed == state_->submitted && !state_->in_write; });
  }
  if (!thread_.joinable()) return idle;
  if (idle) {
    thread_.join();  // it is leaving its loop: nothing left to write
  } else {
    thread_.detach();
  }
  return idle;
}

bool TextfileWriter::writing() const {
  std::lock_guard lk(state_->mu);
  return state_->in_write;
}

std::uint64_t TextfileWriter::failures() const {
  std::lock_guard lk(state_->mu);
  return state_->failures;
}

std::string TextfileWriter::last_error() const {
  std::lock_guard lk(state_->mu);
  return state_->last_error;
}

}  // namespace redisgo::metrics::detail

namespace redisgo::metrics {

std::string read_previous_textfile(const std::string& path, std::chrono::milliseconds bound) {
  // The read runs on a thread of its own: one that hangs (an NFS mount) is left behind,
  // holding only the state it shares with this function, and the start goes on without it.
  struct Shared {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    std::string text;
  };
  auto shared = std::make_shared<Shared>();
  std::thread reader([shared, path] {
    std::string text;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      constexpr std::size_t kMax = 1 << 20;
      char buf[8192];
      for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || text.size() + static_cast<std::size_t>(n) > kMax) break;
        text.append(buf, static_cast<std::size_t>(n));
      }
    }
    if (fd >= 0) ::close(fd);
    std::lock_guard lk(shared->mu);
    shared->text = std::move(text);
    shared->done = true;
    shared->done_cv.notify_all();
  });
  std::unique_lock lk(shared->mu);
  if (!shared->done_cv.wait_for(lk, bound, [&] { return shared->done; })) {
    lk.unlock();
    reader.detach();
    return {};
  }
  std::string text = std::move(shared->text);
  lk.unlock();
  reader.join();
  return text;
}

}  // namespace redisgo::metrics
