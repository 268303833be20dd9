// Checks of values that are not TOML's business: node and listen addresses, names of
// environment variables.
#include <algorithm>
#include <cctype>
#include <string>

#include "config/detail.h"

namespace redisgo::config::detail {

std::optional<std::string> check_node_address(const std::string& addr) {
  if (addr.rfind("unix://", 0) == 0) {
    std::string path = addr.substr(7);
    if (path.empty() || path[0] != '/') return "a unix socket needs an absolute path: \"unix:///path/redis.sock\"";
    if (path.size() == 1) return "the unix socket path is empty";
    return std::nullopt;
  }
  if (addr.find("://") != std::string::npos) {
    return "unsupported scheme (expected \"host:port\" or \"unix:///path\")";
  }
  std::string host;
  std::string port;
  if (!addr.empty() && addr[0] == '[') {
    auto close = addr.find(']');
    if (close == std::string::npos) return "missing ']' after the IPv6 address";
    host = addr.substr(1, close - 1);
    if (close + 1 >= addr.size() || addr[close + 1] != ':') return "missing ':port' after the IPv6 address";
    port = addr.substr(close + 2);
  } else {
    auto colon = addr.rfind(':');
    if (colon == std::string::npos) return "missing ':port'";
    host = addr.substr(0, colon);
    port = addr.substr(colon + 1);
    if (host.find(':') != std::string::npos) return "an IPv6 address needs brackets: \"[::1]:6379\"";
  }
  if (host.empty()) return "the host is empty";
  for (char c : host) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '/' || c == '[' || c == ']') {
      return "the host contains an invalid character";
    }
  }
  if (port.empty()) return "the port is empty";
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return "the port must be a number from 1 to 65535";
  }
  int p = std::stoi(port);
  if (p < 1 || p > 65535) return "the port must be a number from 1 to 65535";
  return std::nullopt;
}

std::optional<std::string> check_listen_address(const std::string& addr) {
  if (addr.find("://") != std::string::npos) return "a TCP address without a scheme is expected";
  return check_node_address(addr);
}

bool looks_like_env_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace redisgo::config::detail
