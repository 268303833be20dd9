#include "support/fake_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <stdexcept>

namespace redisgo::testing {

FakeServer::FakeServer(Handler handler, std::chrono::milliseconds delay)
    : handler_(std::move(handler)), delay_(delay) {
  listen_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_) throw std::runtime_error("socket failed");
  int one = 1;
  ::setsockopt(listen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("bind failed");
  socklen_t len = sizeof addr;
  ::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (::listen(listen_.get(), 64) != 0) throw std::runtime_error("listen failed");
  stop_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  thread_ = std::thread([this] { run(); });
}

FakeServer::~FakeServer() {
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

std::string FakeServer::received() const {
  std::lock_guard lk(mu_);
  return received_;
}

void FakeServer::drop_all() {
  drop_ = true;
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_.get(), &one, sizeof one);
}

void FakeServer::run() {
  std::vector<UniqueFd> clients;
  for (;;) {
    std::vector<pollfd> fds{{listen_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    for (auto& c : clients) fds.push_back({c.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 1000) < 0) continue;
    if (fds[1].revents) {
      std::uint64_t v;
      [[maybe_unused]] auto n = ::read(stop_.get(), &v, sizeof v);
      if (!drop_.exchange(false)) return;
      clients.clear();
      continue;
    }
    if (fds[0].revents) {
      int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        clients.emplace_back(fd);
        ++accepted_;
      }
    }
    for (std::size_t i = 0; i + 2 < fds.size() && i < clients.size(); ++i) {
      if (!fds[i + 2].revents) continue;
      char buf[65536];
      ssize_t n = ::read(clients[i].get(), buf, sizeof buf);
      if (n <= 0) {
        clients[i].reset();
        continue;
      }
      std::string chunk(buf, static_cast<std::size_t>(n));
      {
        std::lock_guard lk(mu_);
        received_ += chunk;
      }
      if (!handler_) continue;
      std::string out = handler_(chunk);
      if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
      if (out == "\x04close") {
        clients[i].reset();
        continue;
      }
      std::size_t off = 0;
      while (off < out.size()) {
        ssize_t w = ::send(clients[i].get(), out.data() + off, out.size() - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += static_cast<std::size_t>(w);
      }
    }
    // Forget closed clients.
    std::vector<UniqueFd> open;
    for (auto& c : clients) {
      if (c) open.push_back(std::move(c));
    }
    clients = std::move(open);
  }
}

std::string resp_command(const std::vector<std::string>& argv) {
  std::string out = "*" + std::to_string(argv.size()) + "\r\n";
  for (const auto& a : argv) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

FakeServer::Handler command_handler(std::function<std::string(const std::vector<std::string>&)> answer) {
  auto buffer = std::make_shared<std::string>();
  return [buffer, answer](const std::string& chunk) {
    *buffer += chunk;
    std::string out;
    for (;;) {
      // "*N\r\n" then N times "$len\r\n<bytes>\r\n"; stop at the first incomplete one.
      const std::string& b = *buffer;
      if (b.empty() || b[0] != '*') break;
      auto eol = b.find("\r\n");
      if (eol == std::string::npos) break;
      const long n = std::stol(b.substr(1, eol - 1));
      std::size_t pos = eol + 2;
      std::vector<std::string> argv;
      bool complete = true;
      for (long i = 0; i < n; ++i) {
        auto e = b.find("\r\n", pos);
        if (e == std::string::npos || b[pos] != '$') {
          complete = false;
          break;
        }
        const std::size_t len = std::stoul(b.substr(pos + 1, e - pos - 1));
        if (e + 2 + len + 2 > b.size()) {
          complete = false;
          break;
        }
        argv.push_back(b.substr(e + 2, len));
        pos = e + 2 + len + 2;
      }
      if (!complete) break;
      buffer->erase(0, pos);
      out += answer(argv);
    }
    return out;
  };
}

}  // namespace redisgo::testing
