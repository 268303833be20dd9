// The standard process metrics (process_*), read from /proc at each render: a scrape or a
// textfile write costs three small reads and a directory walk of a few dozen entries.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/metrics.h"

namespace redisgo::metrics {
namespace {

/// The start of a /proc file (they are generated on read: one read() gives it whole up to
/// the buffer's size); "" when it cannot be read.
std::string read_proc(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text(4096, '\0');
  ssize_t n;
  do {
    n = ::read(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text;
}

/// The unsigned number at the start of `text`; nullopt if there is none.
std::optional<unsigned long long> leading_number(std::string_view text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return std::nullopt;
  unsigned long long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') break;
    v = v * 10 + static_cast<unsigned long long>(c - '0');
  }
  return v;
}

/// The boot time (unix seconds) from /proc/stat's btime line; read once, as it never moves.
std::optional<unsigned long long> boot_time() {
  static std::once_flag once;
  static std::optional<unsigned long long> btime;
  std::call_once(once, [] {
    // /proc/stat grows with the CPU count: btime comes after the per-CPU lines.
    const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    std::string text;
    char buf[8192];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || text.size() > (1u << 20)) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    const auto at = text.find("\nbtime ");
    if (at != std::string::npos) btime = leading_number(std::string_view(text).substr(at + 7));
  });
  return btime;
}

/// Open descriptors: the entries of /proc/self/fd but the one this walk opened.
std::optional<double> open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  const std::string own = std::to_string(::dirfd(dir));
  double n = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != ".." && name != own) ++n;
  }
  ::closedir(dir);
  return n;
}

}  // namespace

ProcessStats read_process_stats() {
  ProcessStats s;
  s.open_fds = open_fds();
  const std::string stat = read_proc("/proc/self/stat");
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so the fields are
  // counted from the last ')'. Field 3 (state) is the first after it.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return s;
  std::vector<std::string_view> fields;
  std::string_view rest = std::string_view(stat).substr(close + 1);
  while (!rest.empty() && fields.size() < 22) {
    const auto begin = rest.find_first_not_of(' ');
    if (begin == std::string_view::npos) break;
    rest.remove_prefix(begin);
    const auto end = rest.find(' ');
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  // proc(5): utime (14), stime (15) and starttime (22) in clock ticks; rss (24) in pages.
  auto field = [&](std::size_t n) { return fields.size() > n - 3 ? leading_number(fields[n - 3]) : std::nullopt; };
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  const auto utime = field(14), stime = field(15), start = field(22), rss = field(24);
  if (ticks > 0 && utime && stime) s.cpu_seconds = static_cast<double>(*utime + *stime) / static_cast<double>(ticks);
  if (page > 0 && rss) s.resident_bytes = static_cast<double>(*rss) * static_cast<double>(page);
  if (ticks > 0 && start) {
    if (const auto btime = boot_time()) {
      s.start_time_seconds = static_cast<double>(*btime) + static_cast<double>(*start) / static_cast<double>(ticks);
    }
  }
  return s;
}

}  // namespace redisgo::metrics
