#include "daemon/health.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "log/logging.h"
#include "util/duration.h"

namespace redisgo::daemon {
namespace {

/// The last non-empty line of `text`, cut to 200 bytes, for a warning.
std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  std::size_t begin = text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  std::string line = text.substr(begin, end - begin + 1);
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

}  // namespace

HealthCheck::HealthCheck(const config::TaskConfig& task, std::shared_ptr<spdlog::logger> log, const Clock& clock)
    : task_(task), log_(std::move(log)), clock_(clock) {}

void HealthCheck::log_failure(const std::string& what) {
  const auto now = clock_.now();
  if (failures_ <= kLoggedFailures || failures_ >= task_.health_fall) {
    log_->warn("health check failed ({}/{}): {}", failures_, task_.health_fall, what);
    last_summary_ = now;
    unreported_ = 0;
    return;
  }
  ++unreported_;
  if (now - last_summary_ >= std::chrono::seconds(30)) {
    log_->warn("health check still failing ({}/{}; {} more failure(s) in the last {}): {}", failures_,
               task_.health_fall, unreported_, format_duration(std::chrono::duration_cast<Millis>(now - last_summary_)),
               what);
    last_summary_ = now;
    unreported_ = 0;
  }
}

void HealthCheck::set_deadline(std::int64_t kill_at_ns, std::int64_t decided_ns) noexcept {
  kill_at_ns_ = kill_at_ns;
  if (running_ && running_->running()) running_->set_deadline(kill_at_ns, decided_ns);
}

HealthCheck::~HealthCheck() { disarm(); }

void HealthCheck::arm(const process::SpawnOptions& spawn, std::int64_t kill_at_ns) {
  if (!enabled()) return;
  disarm();
  kill_at_ns_ = kill_at_ns;
  spawn_ = spawn;
  spawn_->argv = task_.health_command;
  next_ = clock_.now() + task_.health_interval;
}

void HealthCheck::disarm() noexcept {
  spawn_.reset();
  next_ = Clock::time_point::max();
  if (running_ && running_->running()) running_->terminate_group(SIGKILL, Millis(0));
  running_.reset();
  output_.reset();
  buffer_.clear();
}

Clock::time_point HealthCheck::next_wakeup() const {
  if (running_) return started_ + task_.health_timeout;
  return spawn_ ? next_ : Clock::time_point::max();
}

void HealthCheck::append_fds(std::vector<pollfd>& fds) {
  first_fd_ = fds.size();
  fd_count_ = 0;
  if (!running_) return;
  if (output_) {
    fds.push_back({output_.get(), POLLIN, 0});
    ++fd_count_;
  }
  if (running_->exit_fd() >= 0) {
    fds.push_back({running_->exit_fd(), POLLIN, 0});
    ++fd_count_;
  }
}

void HealthCheck::read_output() noexcept {
  if (!output_) return;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(output_.get(), buf, sizeof buf);
    if (n > 0) {
      // Keep the tail: the end of a failing check's output says why.
      buffer_.append(buf, static_cast<std::size_t>(n));
      if (buffer_.size() > kMaxOutput) buffer_.erase(0, buffer_.size() - kMaxOutput);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) output_.reset();  // every writer is gone
    return;                       // EAGAIN: nothing more for now
  }
}

void HealthCheck::start(std::int64_t kill_at_ns) {
  auto [read_end, write_end] = pipe_cloexec();
  ::fcntl(read_end.get(), F_SETFL, ::fcntl(read_end.get(), F_GETFL) | O_NONBLOCK);
  process::SpawnOptions spawn = *spawn_;
  spawn.output_fd = write_end.get();
  spawn.deadline_ns = kill_at_ns;
  started_ = clock_.now();
  buffer_.clear();
  try {
    running_.emplace(process::Child::spawn(spawn));
    output_ = std::move(read_end);
  } catch (const Error& e) {
    // Cannot even start: a failure like any other (a missing program is caught at
    // validate; a full process table is not).
    running_.reset();
    buffer_ = e.what();
    next_ = clock_.now() + task_.health_interval;
    ++failures_;
    log_failure(e.what());
  }
}

std::optional<std::string> HealthCheck::finish(int code, bool timed_out) {
  read_output();
  const std::string output = buffer_;
  running_.reset();
  output_.reset();
  buffer_.clear();
  next_ = started_ + task_.health_interval;
  if (next_ < clock_.now()) next_ = clock_.now();
  if (!output.empty()) log_->debug("health check output: {}", output);
  if (code == 0 && !timed_out) {
    if (failures_ > 0) log_->info("health check passed again after {} failure(s)", failures_);
    failures_ = 0;
    return std::nullopt;
  }
  ++failures_;
  const std::string what = timed_out ? "timed out after " + format_duration(task_.health_timeout) + " and was killed"
                                     : "exited with status " + std::to_string(code);
  const std::string line = last_line(output);
  log_failure(what + (line.empty() ? "" : ": " + line));
  if (failures_ < task_.health_fall) return std::nullopt;
  return "the health check failed " + std::to_string(failures_) + " times in a row (health_fall " +
         std::to_string(task_.health_fall) + "; last: " + what + ")";
}

std::optional<std::string> HealthCheck::service(const std::vector<pollfd>& fds) {
  if (!spawn_) return std::nullopt;
  if (running_) {
    bool ready = false;
    for (std::size_t i = first_fd_; i < first_fd_ + fd_count_ && i < fds.size(); ++i) ready |= fds[i].revents != 0;
    if (ready) read_output();
    if (auto code = running_->try_wait()) return finish(*code, false);
    if (clock_.now() >= started_ + task_.health_timeout) {
      running_->terminate_group(SIGKILL, Millis(0));
      return finish(-1, true);
    }
    return std::nullopt;
  }
  if (clock_.now() >= next_) {
    start(kill_at_ns_);
    if (failures_ >= task_.health_fall && !running_) {
      return "the health check failed " + std::to_string(failures_) + " times in a row (health_fall " +
             std::to_string(task_.health_fall) + "; last: " + buffer_ + ")";
    }
  }
  return std::nullopt;
}

}  // namespace redisgo::daemon
