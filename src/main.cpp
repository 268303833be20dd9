#include <cstdio>
#include <exception>

#include "cli/cli.h"
#include "util/exit_status.h"

int main(int argc, char** argv) {
  try {
    return redisgo::cli::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "redisgo_task: fatal: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "redisgo_task: fatal: unknown exception\n");
  }
  return redisgo::exit_status(redisgo::Outcome::kBug);
}
