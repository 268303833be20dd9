#include "cli/installed.h"

#include <filesystem>
#include <system_error>

#ifndef REDISGO_INSTALL_PREFIX
#define REDISGO_INSTALL_PREFIX "/usr/local"
#endif
#ifndef REDISGO_INSTALL_BINDIR
#define REDISGO_INSTALL_BINDIR "bin"
#endif
#ifndef REDISGO_INSTALL_EXAMPLES
#define REDISGO_INSTALL_EXAMPLES "share/doc/redisgo_task/examples"
#endif

namespace redisgo::cli {

namespace fs = std::filesystem;

std::string example_config_for(const std::string& exe) {
  const fs::path examples = fs::path(REDISGO_INSTALL_EXAMPLES) / "redisgo_task.toml";
  const fs::path configured = fs::path(REDISGO_INSTALL_PREFIX) / examples;  // `examples` absolute: itself
  const fs::path bindir = REDISGO_INSTALL_BINDIR;
  if (exe.empty() || examples.is_absolute() || bindir.is_absolute()) return configured.lexically_normal().string();
  // The prefix `exe` was installed under: its directory less the bin directory's parts.
  fs::path prefix = fs::path(exe).parent_path();
  for (auto part = bindir.end(); part != bindir.begin();) {
    --part;
    if (part->empty()) continue;  // "bin/" ends with an empty part
    if (prefix.filename() != *part) return configured.lexically_normal().string();
    prefix = prefix.parent_path();
  }
  std::error_code ec;
  const fs::path there = prefix / examples;
  if (fs::is_regular_file(there, ec)) return there.lexically_normal().string();
  return configured.lexically_normal().string();
}

std::string example_config() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return example_config_for(ec ? std::string() : exe.string());
}

}  // namespace redisgo::cli
