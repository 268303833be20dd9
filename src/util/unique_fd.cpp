#include "util/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "util/error.h"

namespace redisgo {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::pair<UniqueFd, UniqueFd> pipe_cloexec() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2", errno);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void set_cloexec(int fd) {
  int flags = ::fcntl(fd, F_GETFD);
  if (flags < 0 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) throw_errno("fcntl(FD_CLOEXEC)", errno);
}

}  // namespace redisgo
