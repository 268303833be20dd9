#include "metrics/textfile.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>

namespace redisgo::metrics::detail {

struct TextfileWriter::State {
  std::string path;
  Write write;
  mutable std::mutex mu;
  std::condition_variable work;  // a text was submitted, or the stop
  std::condition_variable done;  // a write ended
  std::optional<std::string> next;
  std::uint64_t submitted = 0;   // texts handed over
  std::uint64_t completed = 0;   // the last of them written (or failed)
  bool in_write = false;
  bool stop = false;
  std::uint64_t failures = 0;
  std::string last_error;
};

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
    std::string text = std::move(*s->next);
    s->next.reset();
    const std::uint64_t seq = s->submitted;
    s->in_write = true;
    lk.unlock();
    std::string error;
    try {
      error = s->write(s->path, text);
    } catch (const std::exception& e) {
      error = "metrics textfile " + s->path + ": " + e.what();
    } catch (...) {
      error = "metrics textfile " + s->path + ": unknown error";
    }
    lk.lock();
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

void TextfileWriter::submit(std::string text) {
  std::lock_guard lk(state_->mu);
  state_->next = std::move(text);
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
