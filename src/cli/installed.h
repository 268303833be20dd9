#pragma once
/// Where an installation keeps the files that --help names (redisgo_task(1), FILES).

#include <string>

namespace redisgo::cli {

/// The commented example configuration of the installation that `exe` (the running
/// binary's path) belongs to: PREFIX/<docdir>/examples/redisgo_task.toml. The prefix is
/// the one this build was configured for, unless `exe` sits in the bin directory of
/// another prefix that has the example (an install made with `cmake --install --prefix`):
/// then that one. So --help names a file that exists wherever the binary was installed,
/// and the configured path when it runs from the build tree.
std::string example_config_for(const std::string& exe);

/// example_config_for(the running binary, from /proc/self/exe).
std::string example_config();

}  // namespace redisgo::cli
