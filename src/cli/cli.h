#pragma once
/// Command line (SPEC.md "Command line"): task / status / validate / version.

namespace redisgo::cli {

/// Parses argv, runs the subcommand and returns the process exit status (SPEC.md
/// "Exit status"). Blocks the daemon's signals first thing, before any thread starts.
int run(int argc, char** argv);

}  // namespace redisgo::cli
