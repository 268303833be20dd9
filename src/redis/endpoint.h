#pragma once
/// Where a Redis node is: "host:port" (IPv4, hostname or [IPv6]:port) or "unix:///path".

#include <optional>
#include <string>
#include <string_view>

namespace redisgo::redis {

struct Endpoint {
  enum class Kind { kTcp, kUnix };
  Kind kind = Kind::kTcp;
  std::string host;   ///< kTcp
  int port = 0;       ///< kTcp
  std::string path;   ///< kUnix
  /// Parses; on failure returns nullopt and sets *why ("port out of range", ...).
  static std::optional<Endpoint> parse(std::string_view text, std::string* why = nullptr);
  /// Printable form, as it was given ("127.0.0.1:6379", "[::1]:6379", "unix:///run/redis.sock").
  std::string str() const;
  bool operator==(const Endpoint&) const = default;
};

}  // namespace redisgo::redis
