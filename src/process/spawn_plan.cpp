// The spawn plan, made in the daemon before fork: the job's environment, its PATH lookup
// (execvpe's rules, so that "not found" and "not executable" are known before the lease is
// spent on them) and the argv and envp arrays the keeper and the job use without allocating.
// Also what else exec needs, checked the same way: a script's interpreter, a program's
// dynamic loader, arguments and environment within the kernel's limits.
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <string_view>

#include "process/keeper.h"
#include "util/unique_fd.h"

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

/// `text` for a message: control characters as \xNN (a #! line ending in \r is the
/// classic "bad interpreter"; it must show). process depends on util only, so not log.
std::string shown(const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += ch;
    }
  }
  return out;
}

/// Up to `n` bytes from `offset` of the file open as `fd`.
std::string read_at(int fd, std::size_t n, off_t offset) {
  std::string buf(n, '\0');
  const ssize_t got = ::pread(fd, buf.data(), n, offset);
  buf.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return buf;
}

/// A script's interpreter as the kernel reads it (fs/binfmt_script.c): the first 256
/// bytes start with "#!", then spaces or tabs, then the name up to a space, tab, NUL or
/// newline (a \r is part of the name). nullopt for no #! line or one exec refuses anyway.
std::optional<std::string> script_interpreter(const std::string& head) {
  if (head.size() < 2 || head.compare(0, 2, "#!") != 0) return std::nullopt;
  const std::size_t newline = head.find('\n');
  const std::string_view line =
      std::string_view(head).substr(2, newline == std::string::npos ? std::string::npos : newline - 2);
  const std::size_t start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos) return std::nullopt;
  const std::size_t end = line.find_first_of(std::string_view(" \t\0", 3), start);
  // A name that runs to the end of the 256 bytes without a newline may be cut: ENOEXEC.
  if (end == std::string_view::npos && newline == std::string::npos && head.size() >= 256) return std::nullopt;
  return std::string(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

/// A dynamically linked ELF program's loader (its PT_INTERP), for this host's byte order.
template <class Ehdr, class Phdr>
std::optional<std::string> elf_loader(int fd, const std::string& head) {
  if (head.size() < sizeof(Ehdr)) return std::nullopt;
  Ehdr eh;
  std::memcpy(&eh, head.data(), sizeof eh);
  if (eh.e_phentsize != sizeof(Phdr) || eh.e_phnum == 0 || eh.e_phnum > 1024) return std::nullopt;
  const std::string table = read_at(fd, sizeof(Phdr) * eh.e_phnum, static_cast<off_t>(eh.e_phoff));
  for (std::size_t i = 0; i + sizeof(Phdr) <= table.size(); i += sizeof(Phdr)) {
    Phdr ph;
    std::memcpy(&ph, table.data() + i, sizeof ph);
    if (ph.p_type != PT_INTERP) continue;
    if (ph.p_filesz < 2 || ph.p_filesz > PATH_MAX) return std::nullopt;
    std::string name = read_at(fd, ph.p_filesz, static_cast<off_t>(ph.p_offset));
    if (name.size() != ph.p_filesz || name.back() != '\0') return std::nullopt;
    name.pop_back();
    return name;
  }
  return std::nullopt;
}

/// What exec loads before the program at `path` runs: its #! interpreter, or its ELF
/// loader. nullopt: none, or the file is not readable by us.
struct Interpreter {
  std::string path;
  bool script = false;
};
std::optional<Interpreter> interpreter_of(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) return std::nullopt;
  const std::string head = read_at(fd.get(), 256, 0);
  if (auto name = script_interpreter(head)) return Interpreter{*name, true};
  if (head.size() < EI_NIDENT || head.compare(0, SELFMAG, ELFMAG) != 0) return std::nullopt;
  const bool little = std::endian::native == std::endian::little;
  if (head[EI_DATA] != (little ? ELFDATA2LSB : ELFDATA2MSB)) return std::nullopt;
  std::optional<std::string> loader;
  if (head[EI_CLASS] == ELFCLASS64) loader = elf_loader<Elf64_Ehdr, Elf64_Phdr>(fd.get(), head);
  if (head[EI_CLASS] == ELFCLASS32) loader = elf_loader<Elf32_Ehdr, Elf32_Phdr>(fd.get(), head);
  if (!loader) return std::nullopt;
  return Interpreter{*loader, false};
}

/// The sizes exec copies for `strings` (each with its NUL) and their pointers.
std::size_t exec_bytes(const std::vector<std::string>& strings) {
  std::size_t n = 0;
  for (const auto& s : strings) n += s.size() + 1 + sizeof(char*);
  return n;
}

/// E2BIG, found before exec: which argument or variable, or which of the two lists, is
/// beyond the kernel's limits for the program at `path`.
std::optional<NotRunnable> too_long(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                    const std::map<std::string, std::string>& overrides, const std::string& path) {
  using Part = NotRunnable::Part;
  const ExecLimits limits = exec_limits();
  const std::string per_string = std::to_string(limits.per_string) + " bytes";
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].size() + 1 > limits.per_string) {
      return NotRunnable{Part::kArguments, false,
                         "argument " + std::to_string(i) + " of the command is " + std::to_string(argv[i].size()) +
                             " bytes, above the kernel's limit of " + per_string +
                             " for one argument (MAX_ARG_STRLEN), with its NUL; exec would fail with E2BIG"};
    }
  }
  for (const auto& entry : env) {
    if (entry.size() + 1 <= limits.per_string) continue;
    const std::string name = entry.substr(0, entry.find('='));
    return NotRunnable{Part::kEnvironment, false,
                       std::string(overrides.count(name) ? "[task] env's " : "the inherited environment variable ") +
                           shown(name) + " is " + std::to_string(entry.size()) +
                           " bytes as NAME=value, above the kernel's limit of " + per_string +
                           " for one variable (MAX_ARG_STRLEN), with its NUL; exec would fail with E2BIG"};
  }
  const std::size_t margin = kExecMargin + 2 * (path.size() + 1);
  const std::size_t args = exec_bytes(argv), envs = exec_bytes(env);
  const std::size_t limit = limits.total > margin ? limits.total - margin : 0;
  if (args + envs <= limit) return std::nullopt;
  const bool env_larger = envs >= args;
  return NotRunnable{env_larger ? Part::kEnvironment : Part::kArguments, false,
                     "the command's arguments (" + std::to_string(args) + " bytes) and environment (" +
                         std::to_string(envs) + " bytes, " + std::to_string(env.size()) +
                         " variables, with their pointers) come to " + std::to_string(args + envs) +
                         " bytes, above the kernel's limit of " + std::to_string(limit) +
                         " (ARG_MAX, a quarter of the stack limit, less a margin of " + std::to_string(margin) +
                         "): the " + (env_larger ? "environment" : "arguments") + (env_larger ? " is" : " are") +
                         " too long; exec would fail with E2BIG"};
}

}  // namespace

ExecLimits exec_limits() {
  const long page = ::sysconf(_SC_PAGESIZE);
  const long arg_max = ::sysconf(_SC_ARG_MAX);
  constexpr std::size_t kKernelCap = 6u << 20;  // _STK_LIM / 4 * 3
  ExecLimits l;
  l.per_string = 32 * static_cast<std::size_t>(page > 0 ? page : 4096);
  l.total = std::min(static_cast<std::size_t>(arg_max > 0 ? arg_max : 131072), kKernelCap);
  return l;
}

namespace detail {

std::optional<NotRunnable> interpreter_problem(const std::string& path, const std::string& workdir) {
  // The kernel follows an interpreter that is itself a script a few levels deep.
  std::string current = path;
  std::string named_by;
  for (int depth = 0; depth < 4; ++depth) {
    const auto interp = interpreter_of(current);
    if (!interp) return std::nullopt;
    // A relative name is opened from the job's working directory, as exec does.
    const std::string seen = interp->path[0] != '/' && !workdir.empty() ? workdir + "/" + interp->path : interp->path;
    std::string what = std::string(interp->script ? "the script's interpreter " : "the program's dynamic loader ") +
                       shown(interp->path) + named_by;
    struct stat st {};
    if (::stat(seen.c_str(), &st) != 0) {
      const int err = errno;
      if (err != ENOENT && err != ENOTDIR) {
        return NotRunnable{NotRunnable::Part::kProgram, false, errno_message(what, err)};
      }
      what += " does not exist";
      if (interp->path.back() == '\r') what += " (the #! line ends in \\r: Windows line endings?)";
      if (!interp->script) what += " (built for another system or libc?)";
      return NotRunnable{NotRunnable::Part::kProgram, true, what};
    }
    if (!S_ISREG(st.st_mode)) return NotRunnable{NotRunnable::Part::kProgram, false, what + " is not a regular file"};
    if (::access(seen.c_str(), X_OK) != 0) {
      return NotRunnable{NotRunnable::Part::kProgram, false, what + " is not executable by this user"};
    }
    named_by = " (named by " + shown(interp->path) + ")";
    current = seen;
  }
  return std::nullopt;
}

Plan make_plan(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    throw SpawnError("cannot run an empty command", EINVAL, SpawnError::Cause::kNotFound);
  }
  Plan plan;
  plan.argv_storage = options.argv;
  plan.env_storage = merged_environment(options.env, options.unset_env);
  plan.workdir = options.workdir;
  plan.deadline_ns = options.deadline_ns;
  plan.deadline.kill_signal = options.kill_signal;
  plan.deadline.kill_grace_ns = std::chrono::nanoseconds(options.kill_grace).count();
  plan.deadline.silence_ns = std::chrono::nanoseconds(options.tick).count();
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
  using Part = NotRunnable::Part;
  if (!options.workdir.empty()) {
    struct stat st {};
    const std::string dir = "'" + options.workdir + "'";
    if (::stat(options.workdir.c_str(), &st) != 0) return NotRunnable{Part::kWorkdir, false, errno_message(dir, errno)};
    if (!S_ISDIR(st.st_mode)) return NotRunnable{Part::kWorkdir, false, dir + " is not a directory"};
    if (::access(options.workdir.c_str(), X_OK) != 0) {
      return NotRunnable{Part::kWorkdir, false, errno_message(dir, errno)};
    }
  }
  if (options.argv.empty() || options.argv[0].empty()) return NotRunnable{Part::kProgram, true, "the command is empty"};
  const std::string& name = options.argv[0];
  const auto env = merged_environment(options.env, options.unset_env);
  auto found = program_path(name, env, options.workdir);
  if (!found) {
    return NotRunnable{Part::kProgram, true,
                       "'" + name + "' is not found on PATH (" + env_value(env, "PATH").value_or(kDefaultPath) + ")"};
  }
  // As this process sees it: a relative path is relative to the job's workdir.
  const std::string path = (*found)[0] != '/' && !options.workdir.empty() ? options.workdir + "/" + *found : *found;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return NotRunnable{Part::kProgram, err == ENOENT || err == ENOTDIR, errno_message("'" + path + "'", err)};
  }
  if (!S_ISREG(st.st_mode)) return NotRunnable{Part::kProgram, false, "'" + path + "' is not a regular file"};
  if (::access(path.c_str(), X_OK) != 0) {
    return NotRunnable{Part::kProgram, false, "'" + path + "' is not executable by this user"};
  }
  if (auto bad = detail::interpreter_problem(path, options.workdir)) {
    bad->why = "'" + path + "': " + bad->why;
    return bad;
  }
  return too_long(options.argv, env, options.env, path);
}

}  // namespace redisgo::process
