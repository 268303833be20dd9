#include "support/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <vector>

namespace redisgo::testing {
namespace {

using Clock = std::chrono::steady_clock;

/// Bytes on their way from one socket to the other, each chunk due at its own time.
struct Pipe {
  struct Chunk {
    Clock::time_point due;
    std::string bytes;
  };
  std::deque<Chunk> queue;
  std::size_t offset = 0;  // of queue.front() already written
};

struct Link {
  UniqueFd client;
  UniqueFd upstream;
  bool upstream_connected = false;
  Pipe to_upstream, to_client;
};

/// Closes with RST instead of FIN.
void reset_close(UniqueFd& fd) {
  if (!fd) return;
  linger l{1, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
  fd.reset();
}

UniqueFd connect_upstream(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return fd;
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) fd.reset();
  return fd;
}

/// Writes what is due; false if the socket failed.
bool flush(Pipe& p, int fd, Clock::time_point now) {
  while (!p.queue.empty() && p.queue.front().due <= now) {
    auto& c = p.queue.front();
    ssize_t n = ::send(fd, c.bytes.data() + p.offset, c.bytes.size() - p.offset, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    p.offset += static_cast<std::size_t>(n);
    if (p.offset < c.bytes.size()) return true;
    p.queue.pop_front();
    p.offset = 0;
  }
  return true;
}

bool has_due(const Pipe& p, Clock::time_point now) { return !p.queue.empty() && p.queue.front().due <= now; }

}  // namespace

FaultProxy::FaultProxy(int upstream_port) : upstream_port_(upstream_port) {
  listen_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_) throw std::runtime_error("fault proxy: socket failed");
  int one = 1;
  ::setsockopt(listen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error("fault proxy: bind failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (::listen(listen_.get(), 128) != 0) throw std::runtime_error("fault proxy: listen failed");
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  thread_ = std::thread([this] { run(); });
}

FaultProxy::~FaultProxy() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

FaultProxy::Mode FaultProxy::mode() const {
  std::lock_guard lk(mu_);
  return mode_;
}

void FaultProxy::set(Mode mode, std::chrono::milliseconds delay) {
  {
    std::lock_guard lk(mu_);
    mode_ = mode;
    delay_ = delay;
  }
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof one);
}

void FaultProxy::run() {
  std::vector<std::unique_ptr<Link>> links;
  std::vector<pollfd> fds;
  for (;;) {
    Mode mode = Mode::kPass;
    std::chrono::milliseconds delay{0};
    {
      std::lock_guard lk(mu_);
      if (stopping_) return;
      mode = mode_;
      delay = delay_;
    }
    const auto now = Clock::now();
    if (mode == Mode::kReset) {
      for (auto& l : links) {
        reset_close(l->client);
        reset_close(l->upstream);
      }
      links.clear();
    }
    // Flush what is due; drop links whose sockets failed or closed.
    for (auto& l : links) {
      if (mode == Mode::kBlackhole) continue;
      if (l->upstream_connected && !flush(l->to_upstream, l->upstream.get(), now)) l->client.reset();
      if (l->client && !flush(l->to_client, l->client.get(), now)) l->client.reset();
    }
    links.erase(std::remove_if(links.begin(), links.end(), [](auto& l) { return !l->client || !l->upstream; }),
                links.end());

    fds.clear();
    fds.push_back({wake_.get(), POLLIN, 0});
    fds.push_back({listen_.get(), POLLIN, 0});
    auto next_due = Clock::time_point::max();
    for (auto& l : links) {
      // A blackhole does not read the upstream side at all: its replies (and its close)
      // stay unseen until the link passes again.
      short up = mode == Mode::kBlackhole ? 0 : POLLIN;
      if (!l->upstream_connected) up = POLLOUT;
      if (l->upstream_connected && mode != Mode::kBlackhole && has_due(l->to_upstream, now)) up |= POLLOUT;
      short cl = POLLIN;
      if (mode != Mode::kBlackhole && has_due(l->to_client, now)) cl |= POLLOUT;
      fds.push_back({l->client.get(), cl, 0});
      fds.push_back({l->upstream.get(), up, 0});
      for (auto* p : {&l->to_upstream, &l->to_client}) {
        if (!p->queue.empty()) next_due = std::min(next_due, p->queue.front().due);
      }
    }
    int timeout = 1000;
    if (next_due != Clock::time_point::max() && mode != Mode::kBlackhole) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(next_due - now).count();
      timeout = static_cast<int>(std::clamp<long long>(ms, 0, 1000));
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0) continue;
    if (fds[0].revents) {
      std::uint64_t v;
      [[maybe_unused]] auto n = ::read(wake_.get(), &v, sizeof v);
    }
    {
      // What arrived is handled under the mode in force now, not the one before poll().
      std::lock_guard lk(mu_);
      if (stopping_) return;
      mode = mode_;
      delay = delay_;
    }
    if (fds[1].revents) {
      for (;;) {
        UniqueFd c(::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!c) break;
        ++accepted_;
        if (mode == Mode::kReset) {
          reset_close(c);
          continue;
        }
        int one = 1;
        ::setsockopt(c.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        auto l = std::make_unique<Link>();
        l->client = std::move(c);
        l->upstream = connect_upstream(upstream_port_);
        if (!l->upstream) {
          reset_close(l->client);  // upstream down: the client sees what it would
          continue;
        }
        links.push_back(std::move(l));
      }
    }
    if (mode == Mode::kReset) continue;  // the top of the loop resets every link
    const auto after = Clock::now();
    const auto due = after + (mode == Mode::kLatency ? delay : std::chrono::milliseconds(0));
    for (std::size_t i = 0; i < links.size() && 2 + 2 * i + 1 < fds.size(); ++i) {
      Link& l = *links[i];
      const pollfd& cfd = fds[2 + 2 * i];
      const pollfd& ufd = fds[2 + 2 * i + 1];
      if (!l.upstream_connected && (ufd.revents & (POLLOUT | POLLERR | POLLHUP))) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(l.upstream.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          reset_close(l.client);
          continue;
        }
        l.upstream_connected = true;
      }
      auto pump = [&](int from, Pipe& into) {
        char buf[65536];
        for (int reads = 0; reads < 16; ++reads) {
          ssize_t n = ::recv(from, buf, sizeof buf, 0);
          if (n > 0) {
            // A blackhole drops what it receives (nothing reaches the other side).
            if (mode != Mode::kBlackhole) into.queue.push_back({due, std::string(buf, static_cast<std::size_t>(n))});
            continue;
          }
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
          if (n < 0 && errno == EINTR) continue;
          return false;  // EOF or error: the link ends
        }
        return true;
      };
      bool ok = true;
      if (cfd.revents & (POLLIN | POLLERR | POLLHUP)) ok = pump(l.client.get(), l.to_upstream) && ok;
      if (l.upstream_connected && mode != Mode::kBlackhole && (ufd.revents & (POLLIN | POLLERR | POLLHUP))) {
        ok = pump(l.upstream.get(), l.to_client) && ok;
      }
      if (!ok) {
        // One side closed: pass the close on (after what was queued, best effort).
        flush(l.to_client, l.client.get(), Clock::time_point::max());
        flush(l.to_upstream, l.upstream.get(), Clock::time_point::max());
        l.client.reset();
        l.upstream.reset();
      }
    }
  }
}

}  // namespace redisgo::testing
