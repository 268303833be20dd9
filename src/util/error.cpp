#include "util/error.h"

#include <cstring>

namespace redisgo {

std::string errno_message(const std::string& what, int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  const char* text = strerror_r(err, buf, sizeof buf);
  return what + ": " + text + " (errno " + std::to_string(err) + ")";
}

void throw_errno(const std::string& what, int err) { throw IoError(errno_message(what, err)); }

}  // namespace redisgo
