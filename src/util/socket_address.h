#pragma once
/// A socket address as getaddrinfo() gives it, shared by the Redis transport and the
/// metrics listener.

#include <netdb.h>
#include <sys/socket.h>

#include <string>
#include <vector>

namespace redisgo {

/// One address to connect to or listen on.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t len = 0;
  std::string str() const;  ///< "127.0.0.1:6379", "[::1]:6379", "/run/redis.sock"
};

/// getaddrinfo() for a stream socket (`flags`: its ai_flags), the addresses in its order.
/// None: `why` says so (gai_strerror's text, or "no address").
std::vector<SocketAddress> lookup_stream(const std::string& host, const std::string& port, int flags, std::string& why);

}  // namespace redisgo
