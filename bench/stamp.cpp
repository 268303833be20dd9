// redisgo_bench_stamp: write CLOCK_REALTIME (ns) to a file, for the handover benchmark.
//
//   redisgo_bench_stamp OUT                 first act: stamp, then exit
//   redisgo_bench_stamp OUT --wait FIFO     block until a line arrives on FIFO, then
//                                           stamp as the last act and exit
//
// The holder's child runs the second form: the benchmark decides when it ends (once the
// standby is known to be waiting) without a sleep. The standby's child runs the first.
// The wall clock, not a monotonic one, because the two stamps come from different
// processes and only CLOCK_REALTIME is guaranteed to be the same clock for both; the
// benchmark runs for seconds, so an NTP step in between is unlikely and would show up
// as an outlier, not a bias. Only libc, so that exec and dynamic loading stay cheap.

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

namespace {

int write_stamp(const char* path) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%lld\n", static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(path);
    return 1;
  }
  bool ok = n > 0 && write(fd, buf, static_cast<size_t>(n)) == n;
  close(fd);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2) return write_stamp(argv[1]);
  if (argc == 4 && strcmp(argv[2], "--wait") == 0) {
    int fd = open(argv[3], O_RDONLY | O_CLOEXEC);  // blocks until the benchmark opens it
    if (fd < 0) {
      perror(argv[3]);
      return 1;
    }
    char c;
    while (read(fd, &c, 1) == 1 && c != '\n') {
    }
    close(fd);
    return write_stamp(argv[1]);
  }
  fprintf(stderr, "usage: %s OUT [--wait FIFO]\n", argv[0]);
  return 2;
}
