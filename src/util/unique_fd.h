#pragma once
/// Owning file descriptor (move-only), and pipe/eventfd helpers that are close-on-exec
/// from birth so no fd of the daemon leaks into a child.

#include <utility>

namespace redisgo {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  int release() { return std::exchange(fd_, -1); }
  /// Closes the current fd (errors ignored: close must not be retried on Linux).
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

/// pipe2(O_CLOEXEC); throws IoError. first = read end, second = write end.
std::pair<UniqueFd, UniqueFd> pipe_cloexec();

/// Sets FD_CLOEXEC on an fd created by a library that does not (hiredis 0.14).
void set_cloexec(int fd);

}  // namespace redisgo
