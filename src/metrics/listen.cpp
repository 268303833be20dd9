// Where the exporter listens: the listen address resolved and bound (listen.h).
#include "metrics/listen.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "util/error.h"
#include "util/socket_address.h"

namespace redisgo::metrics::detail {
namespace {

[[noreturn]] void bad_listen(const std::string& listen, const std::string& why) {
  throw Error("metrics listen " + listen + ": " + why);
}

/// "a.b.c.d:port", "[v6]:port", "localhost:port" (127.0.0.1) or "name:port" (resolved;
/// every address is tried in turn).
std::vector<SocketAddress> resolve(const std::string& listen) {
  std::string host;
  std::string port;
  bool bracketed = false;
  if (!listen.empty() && listen.front() == '[') {
    auto close = listen.find("]:");
    if (close == std::string::npos) bad_listen(listen, "expected \"[IPv6 address]:port\"");
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
    bracketed = true;
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) bad_listen(listen, "expected \"host:port\"");
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
    if (host.find(':') != std::string::npos) bad_listen(listen, "an IPv6 address must be in brackets, \"[::1]:9464\"");
  }
  if (host.empty()) bad_listen(listen, "expected \"host:port\", the host is missing");
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(port) > 65535) {
    bad_listen(listen, "the port must be a number from 0 to 65535");
  }
  auto port_n = htons(static_cast<std::uint16_t>(std::stoi(port)));

  SocketAddress a;
  if (bracketed) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
    if (::inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) != 1) bad_listen(listen, "not an IPv6 address");
    in6->sin6_family = AF_INET6;
    in6->sin6_port = port_n;
    a.len = sizeof(sockaddr_in6);
    return {a};
  }
  auto* in4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  // "localhost" is the IPv4 loopback, whatever /etc/hosts lists first: the address a
  // scrape config names should not depend on the resolver's order.
  if (::inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = port_n;
    a.len = sizeof(sockaddr_in);
    return {a};
  }
  std::string why;
  std::vector<SocketAddress> out = lookup_stream(host, port, AI_NUMERICSERV, why);
  if (out.empty()) bad_listen(listen, "cannot resolve " + host + ": " + why);
  return out;
}

}  // namespace

UniqueFd bind_listen(const std::string& listen, int& port) {
  int last_errno = 0;
  for (const auto& a : resolve(listen)) {
    UniqueFd fd(::socket(a.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) {
      last_errno = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // "[::]:9464" means IPv6 only; an IPv4 listener is configured as such.
    if (a.storage.ss_family == AF_INET6) ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a.storage), a.len) != 0 ||
        ::listen(fd.get(), SOMAXCONN) != 0) {
      last_errno = errno;
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      last_errno = errno;
      continue;
    }
    port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    return fd;
  }
  // errno_message appends " (errno N)" to strerror's text.
  throw Error(errno_message("metrics listen " + listen, last_errno));
}

}  // namespace redisgo::metrics::detail
