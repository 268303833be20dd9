// Password files: read with O_NONBLOCK (a FIFO must not hang the start), refused when
// not a regular file or larger than any password, a final newline dropped.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "config/detail.h"
#include "util/error.h"
#include "util/unique_fd.h"

namespace redisgo::config::detail {
namespace {

/// A password file larger than this is certainly not a password (e.g. a wrong path to a
/// log or a binary); refusing it avoids reading something huge into memory.
constexpr std::size_t kMaxPasswordFile = 64 * 1024;

}  // namespace

std::optional<std::string> read_secret_file(const std::string& path, std::string& why,
                                            bool& world_readable) {
  // O_NONBLOCK: a FIFO or a terminal named here must be an error, not a hang at start.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) {
    why = errno_message("cannot open '" + path + "'", errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "'" + path + "' is not a regular file";
    return std::nullopt;
  }
  world_readable = (st.st_mode & S_IROTH) != 0;
  std::string data;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      why = errno_message("cannot read '" + path + "'", errno);
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
    if (data.size() > kMaxPasswordFile) {
      why = "'" + path + "' is larger than " + std::to_string(kMaxPasswordFile) + " bytes; not a password file";
      return std::nullopt;
    }
  }
  // Editors and `echo` add a newline that is not part of the password.
  if (!data.empty() && data.back() == '\n') {
    data.pop_back();
    if (!data.empty() && data.back() == '\r') data.pop_back();
  }
  if (data.empty()) {
    why = "'" + path + "' is empty";
    return std::nullopt;
  }
  return data;
}

}  // namespace redisgo::config::detail
