// The spawn plan, made in the daemon before fork: the job's environment, its PATH lookup
// (execvpe's rules, so that "not found" and "not executable" are known before the lease is
// spent on them) and the argv and envp arrays the keeper and the job use without allocating.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "process/keeper.h"

extern char** environ;

namespace redisgo::process {
namespace {

// Used when the merged environment has no PATH; what a login shell would usually have.
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides,
                                            const std::vector<std::string>& unset) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    std::string name(entry.substr(0, eq));
    if (overrides.count(name) != 0) continue;
    if (std::find(unset.begin(), unset.end(), name) != unset.end()) continue;
    env.emplace_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

std::optional<std::string> env_value(const std::vector<std::string>& env, const std::string& name) {
  const std::string prefix = name + "=";
  for (const auto& entry : env) {
    if (entry.compare(0, prefix.size(), prefix) == 0) return entry.substr(prefix.size());
  }
  return std::nullopt;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// The path the job will exec for `name` (relative paths are relative to its workdir): a
/// name with '/' as given, else execvpe's search of the PATH in `env`. nullopt: not found.
std::optional<std::string> program_path(const std::string& name, const std::vector<std::string>& env,
                                        const std::string& workdir) {
  if (name.find('/') != std::string::npos) return name;
  return search_path(name, env_value(env, "PATH").value_or(kDefaultPath), workdir);
}

}  // namespace

namespace detail {

Plan make_plan(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    throw SpawnError("cannot run an empty command", EINVAL, SpawnError::Cause::kNotFound);
  }
  Plan plan;
  plan.argv_storage = options.argv;
  plan.env_storage = merged_environment(options.env, options.unset_env);
  plan.workdir = options.workdir;
  plan.deadline_ns = options.deadline_ns;
  plan.output_fd = options.output_fd;

  const std::string& name = options.argv[0];
  auto found = program_path(name, plan.env_storage, plan.workdir);
  if (!found) {
    throw SpawnError(errno_message("cannot run '" + name + "'", ENOENT), ENOENT, SpawnError::Cause::kNotFound);
  }
  plan.path = *found;

  for (auto& arg : plan.argv_storage) plan.argv.push_back(arg.data());
  plan.argv.push_back(nullptr);
  for (auto& entry : plan.env_storage) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);
  return plan;
}

}  // namespace detail

std::optional<std::string> search_path(const std::string& name, const std::string& path_var,
                                       const std::string& workdir) {
  // execvpe's search: the first executable regular file on PATH wins; failing that, the
  // first non-executable regular file (exec then fails with EACCES, 126, as a shell
  // reports it); failing that, not found (127). Relative PATH entries are taken relative
  // to the workdir, where the child will exec.
  std::optional<std::string> not_executable;
  std::size_t start = 0;
  while (start <= path_var.size()) {
    std::size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    const std::string dir = end > start ? path_var.substr(start, end - start) : std::string(".");
    start = end + 1;
    std::string candidate = dir + "/" + name;
    std::string checked = candidate;  // as the parent sees it
    if (dir[0] != '/' && !workdir.empty()) checked = workdir + "/" + candidate;
    if (!is_regular_file(checked)) continue;
    if (::access(checked.c_str(), X_OK) == 0) return candidate;
    if (!not_executable) not_executable = candidate;
  }
  return not_executable;
}

std::optional<NotRunnable> why_not_runnable(const SpawnOptions& options) {
  if (!options.workdir.empty()) {
    struct stat st {};
    const std::string shown = "'" + options.workdir + "'";
    if (::stat(options.workdir.c_str(), &st) != 0) return NotRunnable{true, errno_message(shown, errno)};
    if (!S_ISDIR(st.st_mode)) return NotRunnable{true, shown + " is not a directory"};
    if (::access(options.workdir.c_str(), X_OK) != 0) return NotRunnable{true, errno_message(shown, errno)};
  }
  if (options.argv.empty() || options.argv[0].empty()) return NotRunnable{false, "the command is empty"};
  const std::string& name = options.argv[0];
  const auto env = merged_environment(options.env, options.unset_env);
  auto found = program_path(name, env, options.workdir);
  if (!found) {
    return NotRunnable{false, "'" + name + "' is not found on PATH (" + env_value(env, "PATH").value_or(kDefaultPath) + ")"};
  }
  // As this process sees it: a relative path is relative to the job's workdir.
  const std::string path = (*found)[0] != '/' && !options.workdir.empty() ? options.workdir + "/" + *found : *found;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NotRunnable{false, errno_message("'" + path + "'", errno)};
  if (!S_ISREG(st.st_mode)) return NotRunnable{false, "'" + path + "' is not a regular file"};
  if (::access(path.c_str(), X_OK) != 0) return NotRunnable{false, "'" + path + "' is not executable by this user"};
  return std::nullopt;
}

}  // namespace redisgo::process
