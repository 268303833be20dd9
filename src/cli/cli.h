#pragma once
/// Command line (redisgo_task(1), COMMANDS): task / status / validate / version.

namespace redisgo::cli {

/// Parses argv, runs the subcommand and returns the process exit status
/// (redisgo_task(1), EXIT STATUS). Blocks the daemon's signals first thing, before any thread starts.
int run(int argc, char** argv);

}  // namespace redisgo::cli
