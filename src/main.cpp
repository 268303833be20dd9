#include <malloc.h>

#include <exception>
#include <iostream>

#include "cli/cli.h"
#include "util/exit_status.h"

int main(int argc, char** argv) {
  // One malloc arena for every thread, before any thread exists: glibc gives each thread
  // that allocates an arena of its own (a 128 MiB reservation, its first pages touched, set
  // up in the renewal thread's last moments on the release's path). The daemon's threads
  // allocate little and seldom; they share the main arena at no measurable cost.
  ::mallopt(M_ARENA_MAX, 1);
  try {
    return redisgo::cli::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "redisgo_task: fatal: " << e.what() << std::endl;  // under journald with its priority
  } catch (...) {
    std::cerr << "redisgo_task: fatal: unknown exception" << std::endl;
  }
  return redisgo::exit_status(redisgo::Outcome::kBug);
}
