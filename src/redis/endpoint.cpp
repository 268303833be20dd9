#include "redis/endpoint.h"

#include <charconv>

namespace redisgo::redis {
namespace {

bool parse_port(std::string_view text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  *port = value;
  return true;
}

}  // namespace

std::optional<Endpoint> Endpoint::parse(std::string_view text, std::string* why) {
  auto fail = [why](const char* reason) -> std::optional<Endpoint> {
    if (why) *why = reason;
    return std::nullopt;
  };
  constexpr std::string_view kUnix = "unix://";
  Endpoint ep;
  if (text.substr(0, kUnix.size()) == kUnix) {
    std::string_view path = text.substr(kUnix.size());
    if (path.empty() || path.front() != '/') return fail("unix socket path must be absolute (unix:///path)");
    ep.kind = Kind::kUnix;
    ep.path = std::string(path);
    return ep;
  }
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return fail("expected host:port or unix:///path");
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of("[]") != std::string_view::npos) {
    return fail("malformed [IPv6] address");
  }
  if (host.empty()) return fail("missing host");
  int p = 0;
  if (!parse_port(port, &p)) return fail("port is not a number");
  if (p < 1 || p > 65535) return fail("port out of range (1-65535)");
  ep.kind = Kind::kTcp;
  ep.host = std::string(host);
  ep.port = p;
  return ep;
}

std::string Endpoint::str() const {
  if (kind == Kind::kUnix) return "unix://" + path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

}  // namespace redisgo::redis
