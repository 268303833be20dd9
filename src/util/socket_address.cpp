// SocketAddress (socket_address.h).
#include "util/socket_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

namespace redisgo {

std::string SocketAddress::str() const {
  char host[INET6_ADDRSTRLEN] = {};
  switch (storage.ss_family) {
    case AF_INET: {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
      ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
      return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
    }
    case AF_INET6: {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
      ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
      return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
    }
    case AF_UNIX: return reinterpret_cast<const sockaddr_un*>(&storage)->sun_path;
    default: return "?";
  }
}

std::vector<SocketAddress> lookup_stream(const std::string& host, const std::string& port, int flags, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  addrinfo* list = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) {
    why = ::gai_strerror(rc);
    return {};
  }
  std::vector<SocketAddress> out;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    if (a->ai_addrlen > sizeof(sockaddr_storage)) continue;  // larger than any family's
    SocketAddress s;
    std::memcpy(&s.storage, a->ai_addr, a->ai_addrlen);
    s.len = a->ai_addrlen;
    out.push_back(s);
  }
  ::freeaddrinfo(list);
  if (out.empty()) why = "no address";
  return out;
}

}  // namespace redisgo
