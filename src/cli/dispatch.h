#pragma once
/// Module-internal (cli): what the command line named, and the run of it (cli.cpp reads the
/// command line with CLI11; this loads the config, checks that the command can run, and
/// runs the subcommand). Nothing outside cli includes it.

#include <optional>
#include <string>
#include <vector>

namespace redisgo::cli {

/// Where CLI11 puts what the command line said, for every subcommand.
struct Args {
  std::string config_path;
  std::optional<std::string> key;
  std::optional<std::string> holder_prefix;
  bool wait = false, no_wait = false, json = false, defaults = false;
  std::string wait_timeout;
  std::vector<std::string> command;
  std::string handover_timeout;
  int handover_slot = 0;
  bool handover_force = false;
  std::string pattern;
  std::string pause_for;
  std::string pause_reason;
  bool pause_stop = false;
};

/// Which subcommand the command line named, read from the parsed Subcommands, so that
/// CLI11's objects can be gone before the command runs.
struct Chosen {
  bool task = false, status = false, validate = false, check = false, handover = false, list = false, pause = false,
       resume = false, adopt = false, version = false;
  bool handover_timeout_given = false;
  bool wait_timeout_given = false;
};

/// What `version` and `--version` print: "redisgo_task VERSION (commit C)".
std::string version_line();

/// Runs the subcommand the command line named; its exit status (redisgo_task(1), EXIT STATUS).
int dispatch(const Chosen& subs, const Args& a);

}  // namespace redisgo::cli
