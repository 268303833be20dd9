#include "support/notify_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace redisgo::testing {

namespace {

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace

NotifySocket::NotifySocket(Kind kind) {
  fd_ = UniqueFd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd_) throw sys_error("socket(AF_UNIX, SOCK_DGRAM)");

  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socklen_t len = 0;
  if (kind == Kind::kPath) {
    dir_ = std::make_unique<TempDir>();
    address_ = dir_->path() + "/notify.sock";
    if (address_.size() >= sizeof(addr.sun_path)) {
      throw std::runtime_error("notify socket path too long: " + address_);
    }
    std::memcpy(addr.sun_path, address_.c_str(), address_.size() + 1);
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size() + 1);
  } else {
    // Abstract names are global to the network namespace: pid + counter keep parallel
    // test processes and several sockets in one test apart.
    static std::atomic<int> counter{0};
    std::string name = "redisgo-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    address_ = "@" + name;
    // Leading NUL, then the name without terminator; the length says where it ends.
    std::memcpy(addr.sun_path + 1, name.data(), name.size());
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  }
  if (::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    throw sys_error("bind " + address_);
  }
  int one = 1;
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0) {
    throw sys_error("setsockopt(SO_PASSCRED)");
  }
}

std::optional<NotifySocket::Datagram> NotifySocket::recv_one(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    char buf[4096];
    iovec iov{buf, sizeof(buf)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n >= 0) {
      Datagram d;
      d.text.assign(buf, static_cast<std::size_t>(n));
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
          ucred cred{};
          std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
          d.pid = cred.pid;
        }
      }
      d.at = std::chrono::steady_clock::now();
      history_.push_back(d);
      return d;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) throw sys_error("recvmsg " + address_);
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
}

std::vector<std::string> NotifySocket::recv_all(std::chrono::milliseconds window) {
  auto deadline = std::chrono::steady_clock::now() + window;
  std::vector<std::string> out;
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto d = recv_one(std::max(left, std::chrono::milliseconds(0)));
    if (!d) return out;
    out.push_back(std::move(d->text));
  }
}

bool NotifySocket::wait_for(const std::string& text, std::chrono::milliseconds timeout) {
  return wait_for([&](const std::string& s) { return s == text; }, timeout).has_value();
}

std::optional<NotifySocket::Datagram> NotifySocket::wait_for(
    const std::function<bool(const std::string&)>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto d = recv_one(std::max(left, std::chrono::milliseconds(0)));
    if (!d) return std::nullopt;
    if (pred(d->text)) return d;
  }
}

ScopedEnvVars::~ScopedEnvVars() {
  // Restore in reverse so a variable set twice ends up with its original value.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) {
      ::setenv(it->first.c_str(), it->second->c_str(), 1);
    } else {
      ::unsetenv(it->first.c_str());
    }
  }
}

ScopedEnvVars& ScopedEnvVars::set(const std::string& name, const std::optional<std::string>& value) {
  const char* old = std::getenv(name.c_str());
  saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  if (value) {
    ::setenv(name.c_str(), value->c_str(), 1);
  } else {
    ::unsetenv(name.c_str());
  }
  return *this;
}

}  // namespace redisgo::testing
