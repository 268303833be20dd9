// The child of every daemon in the soak (tests/soak/soak.cpp): it records its life in a
// shared file so that the checker can see two children alive at once.
//
//   redisgo_soak_child RECORDS RUN_MS
//
// Appends "start|beat|stop <CLOCK_REALTIME ns> <token> <pid> <holder> <slot>" lines (one write
// each, O_APPEND, atomic): start at once, a beat every 10 ms, stop when SIGTERM arrives
// or after RUN_MS (0: run until stopped). A SIGKILLed child simply stops writing. Only
// libc: as little as possible between the lease and the first record.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {

long long now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

const char* g_slot = "0";

void record(int fd, const char* kind, const char* token, const char* holder) {
  char line[512];
  int n = std::snprintf(line, sizeof line, "%s %lld %s %d %s %s\n", kind, now_ns(CLOCK_REALTIME), token,
                        static_cast<int>(getpid()), holder, g_slot);
  if (n > 0 && n < static_cast<int>(sizeof line)) {
    ssize_t w = write(fd, line, static_cast<size_t>(n));
    (void)w;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: redisgo_soak_child RECORDS RUN_MS\n");
    return 2;
  }
  const char* token = getenv("REDISGO_TASK_TOKEN");
  const char* holder = getenv("REDISGO_TASK_HOLDER");
  if (!token) token = "0";
  if (!holder) holder = "-";
  if (const char* slot = getenv("REDISGO_TASK_SLOT")) g_slot = slot;
  const long long run_ms = std::atoll(argv[2]);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGINT);
  sigprocmask(SIG_BLOCK, &term, nullptr);
  int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return 3;
  record(fd, "start", token, holder);
  const long long t0 = now_ns(CLOCK_MONOTONIC);
  for (;;) {
    timespec beat{0, 10 * 1000 * 1000};
    if (sigtimedwait(&term, nullptr, &beat) > 0) {
      record(fd, "stop", token, holder);
      return 0;
    }
    if (run_ms > 0 && now_ns(CLOCK_MONOTONIC) - t0 >= run_ms * 1000000LL) {
      record(fd, "stop", token, holder);
      return 0;
    }
    record(fd, "beat", token, holder);
  }
}
