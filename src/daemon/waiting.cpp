#include "daemon/waiting.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

#include "lock/lease.h"
#include "util/duration.h"

namespace redisgo::daemon {

WaitReporter::WaitReporter(std::shared_ptr<spdlog::logger> log, std::string key, int tty_fd)
    : log_(std::move(log)), key_(std::move(key)), tty_fd_(tty_fd) {}

std::string WaitReporter::line(const std::string& key, const std::string& holder, std::int64_t ttl_ms, int attempts,
                               std::chrono::milliseconds waited, std::int64_t guard_ms, std::int64_t position,
                               std::int64_t length, bool quorum) {
  std::string s = "waiting for key=" + key + ": ";
  if (holder.empty() && guard_ms >= 0) {
    s += "a Redis node restarted, no lease granted for " + format_duration(std::chrono::milliseconds(guard_ms)) +
         " (restart guard)";
  } else {
    const auto turn = lock::turn_of(holder);
    const auto pause = lock::pause_of(holder);
    // Too few nodes answered us: that nobody was named says nothing of the key.
    s += holder.empty() ? std::string(quorum ? "no holder with a quorum"
                                             : "holder unknown: too few nodes answer this host")
         : turn         ? "woken waiter " + *turn + " has its turn"
         : pause        ? lock::describe_pause(*pause)
                        : "held by " + holder;
  }
  if (!holder.empty() && ttl_ms >= 0) s += ", ttl " + format_duration(std::chrono::milliseconds(ttl_ms));
  if (position > 0) {
    s += "; in line " + std::to_string(position) + " of " + std::to_string(std::max(position, length));
  }
  s += "; attempt " + std::to_string(attempts) + ", waited " +
       format_duration(std::chrono::duration_cast<std::chrono::seconds>(waited));
  return s;
}

namespace {
void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a terminal that went away: nothing to tell
    off += static_cast<std::size_t>(n);
  }
}
}  // namespace

void WaitReporter::missed(const std::string& holder, std::int64_t ttl_ms, int attempts, Clock::time_point began,
                          Clock::time_point now, std::int64_t guard_ms, std::int64_t position, std::int64_t length,
                          bool quorum) {
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - began);
  std::string text = line(key_, holder.substr(0, 256), ttl_ms, attempts, waited, guard_ms, position, length, quorum);
  if (tty_fd_ >= 0) {
    // Key and holder id can hold anything: at a terminal, keep the line printable.
    for (char& c : text) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    // A line that wraps cannot be rewritten in place: keep it within the terminal's width.
    winsize ws{};
    if (::ioctl(tty_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && text.size() >= ws.ws_col) {
      text.resize(ws.ws_col - 1u);
    }
    write_all(tty_fd_, "\r\033[K" + text);  // carriage return, erase line: rewritten in place
    shown_ = true;
    return;
  }
  if (!logged_ || holder != last_holder_ || now - last_log_ >= kQuietEvery) {
    log_->info("{}", text);
    logged_ = true;
    last_holder_ = holder;
    last_log_ = now;
  }
}

void WaitReporter::done() {
  if (tty_fd_ >= 0 && shown_) write_all(tty_fd_, "\r\033[K");
  shown_ = false;
  logged_ = false;
  last_holder_.clear();
}

int terminal_stderr() { return ::isatty(STDERR_FILENO) == 1 ? STDERR_FILENO : -1; }

}  // namespace redisgo::daemon
