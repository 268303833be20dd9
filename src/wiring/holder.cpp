#include "wiring/holder.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "util/error.h"

namespace redisgo::wiring {
namespace {

std::string hex(const unsigned char* data, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

}  // namespace

std::string holder_head(const std::string& prefix) {
  if (!prefix.empty()) return prefix;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  return host;
}

std::string default_holder_id(const std::string& prefix) {
  const std::string head = holder_head(prefix);
  unsigned char random[16] = {};
  std::size_t got = 0;
  while (got < sizeof random) {
    ssize_t n = ::getrandom(random + got, sizeof random - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("getrandom", errno);
    }
    got += static_cast<std::size_t>(n);
  }
  return head + ":" + std::to_string(::getpid()) + ":" + hex(random, sizeof random);
}

}  // namespace redisgo::wiring
