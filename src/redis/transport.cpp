#include "redis/transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>

#include "util/error.h"

namespace redisgo::redis {
namespace {

bool numeric_address(const Endpoint& ep, SocketAddress* out) {
  std::memset(&out->storage, 0, sizeof out->storage);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out->storage);
  if (::inet_pton(AF_INET, ep.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(ep.port));
    out->len = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out->storage);
  if (::inet_pton(AF_INET6, ep.host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(ep.port));
    out->len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

}  // namespace

std::shared_ptr<Resolution> Resolution::deferred() {
  auto r = std::make_shared<Resolution>();
  r->event_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!r->event_) throw_errno("eventfd", errno);
  return r;
}

void Resolution::settle(const Endpoint& endpoint) {
  {
    std::lock_guard lk(mu_);
    if (done_) return;
    endpoint_ = endpoint;
  }
  finish({}, "");
}

void Resolution::fail(const std::string& why, ResolveFailure kind) {
  {
    std::lock_guard lk(mu_);
    if (done_) return;
    failure_ = kind;
  }
  finish({}, why.empty() ? "no server" : why);
}

Endpoint Resolution::endpoint() const {
  std::lock_guard lk(mu_);
  return endpoint_;
}

std::shared_ptr<Resolution> Resolution::start(const Endpoint& endpoint) {
  auto r = std::make_shared<Resolution>();
  r->endpoint_ = endpoint;
  SocketAddress address;
  if (endpoint.kind == Endpoint::Kind::kUnix) {
    auto* un = reinterpret_cast<sockaddr_un*>(&address.storage);
    un->sun_family = AF_UNIX;
    if (endpoint.path.size() >= sizeof un->sun_path) {
      r->finish({}, "unix socket path longer than " + std::to_string(sizeof un->sun_path - 1) + " bytes");
      return r;
    }
    std::memcpy(un->sun_path, endpoint.path.c_str(), endpoint.path.size() + 1);
    address.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + endpoint.path.size() + 1);
    r->finish({address}, "");
    return r;
  }
  if (numeric_address(endpoint, &address)) {
    r->finish({address}, "");
    return r;
  }
  r->event_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!r->event_) throw_errno("eventfd", errno);
  const std::string host = endpoint.host;
  const std::string port = std::to_string(endpoint.port);
  try {
    std::thread([r, host, port] {
      std::string why;
      std::vector<SocketAddress> found = lookup_stream(host, port, AI_ADDRCONFIG, why);
      std::string error = found.empty() ? "cannot resolve '" + host + "': " + why : "";
      r->finish(std::move(found), std::move(error));
    }).detach();
  } catch (const std::system_error& e) {
    throw IoError("cannot resolve '" + host + "': cannot start a resolver thread: " + e.what());
  }
  return r;
}

void Resolution::finish(std::vector<SocketAddress> addresses, std::string error) {
  {
    std::lock_guard lk(mu_);
    addresses_ = std::move(addresses);
    error_ = std::move(error);
    done_ = true;
  }
  if (event_) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(event_.get(), &one, sizeof one);
  }
}

bool Resolution::done() const {
  std::lock_guard lk(mu_);
  return done_;
}

std::vector<SocketAddress> Resolution::addresses() const {
  std::lock_guard lk(mu_);
  return addresses_;
}

ResolveFailure Resolution::failure() const {
  std::lock_guard lk(mu_);
  return failure_;
}

std::string Resolution::error() const {
  std::lock_guard lk(mu_);
  return error_;
}

UniqueFd start_connect(const SocketAddress& address, bool keepalive, bool* in_progress, const std::string& who) {
  const int family = address.storage.ss_family;
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) throw IoError(errno_message("socket", errno));
  if (family == AF_INET || family == AF_INET6) {
    int one = 1;
    // Requests are small and latency-bound: no Nagle delay.
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (keepalive) {
      // A peer that vanished without a FIN (power loss, a cut cable) is noticed within
      // about a minute even on a connection that only waits (the subscriber).
      int idle = 15, interval = 5, count = 3;
      ::setsockopt(fd.get(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
    }
  }
  *in_progress = false;
  for (;;) {
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.len) == 0) return fd;
    if (errno == EINTR) continue;
    // A unix socket whose backlog is full says EAGAIN; retrying later is what a client
    // does, so treat it like a connect in progress that then fails or succeeds.
    if (errno == EINPROGRESS || errno == EAGAIN) {
      *in_progress = true;
      return fd;
    }
    throw IoError(errno_message(who, errno));
  }
}

void connect_finished(int fd, const std::string& who) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) throw IoError(errno_message(who, err));
}

std::size_t Transport::read(char* buf, std::size_t n, short* want) {
  for (;;) {
    ssize_t got = ::recv(fd_.get(), buf, n, 0);
    if (got > 0) return static_cast<std::size_t>(got);
    if (got == 0) throw ClosedError("connection closed by the server");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      *want = POLLIN;
      return 0;
    }
    throw IoError(errno_message("read", errno));
  }
}

std::size_t Transport::write(const char* buf, std::size_t n, short* want) {
  for (;;) {
    // MSG_NOSIGNAL: a peer that went away is EPIPE here, never a SIGPIPE.
    ssize_t put = ::send(fd_.get(), buf, n, MSG_NOSIGNAL);
    if (put >= 0) return static_cast<std::size_t>(put);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      *want = POLLOUT;
      return 0;
    }
    throw IoError(errno_message("write", errno));
  }
}

}  // namespace redisgo::redis
