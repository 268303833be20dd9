#include "cli/dispatch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <iostream>

#include "commands/adopt.h"
#include "commands/check.h"
#include "commands/list.h"
#include "commands/pause.h"
#include "commands/status.h"
#include "config/config.h"
#include "daemon/daemon.h"
#include "log/logging.h"
#include "process/child.h"
#include "process/signals.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/exit_status.h"
#include "wiring/holder.h"

#ifndef REDISGO_VERSION
#define REDISGO_VERSION "unknown"
#endif

namespace redisgo::cli {

/// The commit this binary was built from (generated/commit.cpp, cmake/commit.cmake).
extern const char kCommit[];

namespace {

void print_diagnostics(const config::LoadResult& loaded) {
  for (const auto& w : loaded.warnings) std::cerr << "redisgo_task: warning: " << w.str() << "\n";
  for (const auto& e : loaded.errors) std::cerr << "redisgo_task: error: " << e.str() << "\n";
}

/// `argv` as the daemon will start it: the child's environment with the REDISGO_TASK_*
/// variables at their longest (a 20-digit token, the last slot), so that a size checked
/// now holds for every run.
process::SpawnOptions spawn_as_run(const config::Config& cfg, const std::vector<std::string>& argv) {
  auto spawn = daemon::spawn_options(cfg);
  spawn.argv = argv;
  daemon::add_task_env(spawn, cfg, wiring::default_holder_id(cfg.redis.value), UINT64_MAX, cfg.task.limit - 1);
  return spawn;
}

/// Prints why `command_key`'s command cannot run at the line of the key it is about.
void print_not_runnable(const config::Config& cfg, const process::NotRunnable& bad, const std::string& command_key) {
  using Part = process::NotRunnable::Part;
  std::string key = command_key, expected = "a program that exec can run";
  if (bad.part == Part::kWorkdir) {
    key = "task.workdir";
    expected = "an existing directory";
  } else if (bad.part == Part::kArguments || bad.part == Part::kEnvironment) {
    // The environment is [task] env's and the daemon's own: the line of env when it has one.
    if (bad.part == Part::kEnvironment && !cfg.task.env.empty()) key = "task.env";
    expected = "arguments and environment that exec can take";
  }
  const std::string what = "expected " + expected + ", found " + bad.why;
  std::cerr << "redisgo_task: error: " << config::diagnostic_at(cfg, key, what).str() << "\n";
}

/// validate and task: the command of the file must resolve to an executable, with its
/// interpreter, within exec's size limits, and the workdir must exist (as exec would see
/// them, for the user running this). Prints the problem at its line; false when there is one.
/// The health check runs as the child does (same environment and workdir); it comes only
/// from the file, so it is checked whatever command `--` gives.
bool health_command_runnable(const config::Config& cfg) {
  if (cfg.task.health_command.empty()) return true;
  auto bad = process::why_not_runnable(spawn_as_run(cfg, cfg.task.health_command));
  if (!bad || bad->part == process::NotRunnable::Part::kWorkdir) return true;  // a bad workdir is the command's error
  print_not_runnable(cfg, *bad, "task.health_command");
  return false;
}

/// [metrics] textfile: a file in an existing directory (the exporter writes a temporary
/// file beside it and renames it over), so that `validate` refuses what `task` would.
bool textfile_writable(const config::Config& cfg) {
  const std::string& path = cfg.metrics.textfile;
  if (path.empty()) return true;
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  std::string why;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    why = "expected a file path, found the directory '" + path + "'";
  } else if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    why = "expected a file in an existing directory, found no directory '" + dir + "'";
  } else if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    why = "expected a directory this user can write, found '" + dir + "' not writable";
  }
  if (why.empty()) return true;
  std::cerr << "redisgo_task: error: " << config::diagnostic_at(cfg, "metrics.textfile", why).str() << "\n";
  return false;
}

bool command_runnable(const config::Config& cfg) {
  if (!health_command_runnable(cfg) || !textfile_writable(cfg)) return false;
  // A command after `--` is checked by start_task; the workdir is the file's either way.
  auto bad = process::why_not_runnable(spawn_as_run(cfg, cfg.task.command));
  if (cfg.task.command.empty() && (!bad || bad->part != process::NotRunnable::Part::kWorkdir)) return true;
  if (!bad) return true;
  print_not_runnable(cfg, *bad, "task.command");
  return false;
}

/// task: the command given after `--`, checked as the file's is and before contending, so
/// that a command that cannot run takes no lease, token or once_per slot. It fails as a
/// shell's would (127: not found, or its interpreter missing; 126: cannot be executed);
/// a bad workdir is the file's mistake (78, at its line). nullopt: it can run.
std::optional<int> command_line_unrunnable(const config::Config& cfg) {
  auto bad = process::why_not_runnable(spawn_as_run(cfg, cfg.task.command));
  if (!bad) return std::nullopt;
  if (bad->part == process::NotRunnable::Part::kWorkdir) {
    print_not_runnable(cfg, *bad, "task.command");
    return kExitConfig;
  }
  std::cerr << "redisgo_task: cannot run the command given after --: " << log::printable(bad->why)
            << "; nothing was started\n";
  return exit_status(bad->missing ? Outcome::kNotFound : Outcome::kCannotRun);
}

/// `code`, unless stdout could not take the report (a full disk, a closed pipe): then a
/// monitor would read nothing while the exit status says all is well. EX_IOERR (74).
int output_written(int code) {
  std::cout.flush();
  if (std::cout) return code;
  std::cerr << "redisgo_task: cannot write the report to standard output\n";
  return exit_status(Outcome::kOutputFailed);
}

/// Runs a subcommand and turns what escapes it into its exit status, in one place: a
/// config problem found late (a TLS file that does not load) is 78; any other failure of
/// ours is `on_error` (check, status and handover could not reach Redis: 69; the daemon:
/// a bug, 70), said on stderr under `what`.
template <class Run>
int guarded(const std::string& what, const std::string& config_path, Outcome on_error, Run run) {
  try {
    return run();
  } catch (const ConfigError& e) {
    std::cerr << "redisgo_task: " << config_path << ": " << e.what()
              << (on_error == Outcome::kBug ? "; nothing was started" : "") << "\n";
    return exit_status(Outcome::kBadConfig);
  } catch (const Error& e) {
    if (on_error == Outcome::kBug) throw;
    std::cerr << "redisgo_task: " << what << ": " << e.what() << "\n";
    return exit_status(on_error);
  }
}

/// Loads the file and applies command-line overrides. Prints problems; nullopt on error.
/// `starts`: the command would start a job (task), so a refusal says that none was; for
/// status, check and handover, which start nothing, it would only mislead.
std::optional<config::Config> load(const std::string& path, const std::optional<std::string>& key_override,
                                   const std::optional<std::string>& prefix_override, config::Scope scope, bool starts) {
  config::LoadResult loaded = config::load_file(path, config::process_env(), scope);
  if (loaded.config) {
    // The warnings of a config that loads go through the logger, set up from that config
    // first: under journald they carry their priority, and in the JSON format they are
    // JSON lines like the rest of the run. (validate, for a person at a terminal, prints
    // them plainly.)
    log::setup(loaded.config->log.level, loaded.config->log.format);
    const auto logger = log::get("config");
    for (const auto& w : loaded.warnings) logger->warn("{}", w.str());
  } else {
    print_diagnostics(loaded);
  }
  if (!loaded.config) {
    std::cerr << "redisgo_task: " << path << ": " << loaded.errors.size() << " error(s)"
              << (starts ? "; nothing was started" : "") << "\n";
    return std::nullopt;
  }
  if (key_override) {
    if (key_override->empty() || key_override->size() > config::kMaxKeyBytes) {
      std::cerr << "redisgo_task: --key: expected a non-empty key of at most " << config::kMaxKeyBytes
                << " bytes, found " << key_override->size() << " bytes\n";
      return std::nullopt;
    }
    if (loaded.config->redis.topology == config::Topology::kCluster && !config::cluster_safe_key(*key_override)) {
      std::cerr << "redisgo_task: --key: with cluster_nodes a key containing '}' needs a non-empty hash tag (e.g. "
                   "\"{jobs}"
                << *key_override << "\") so that its fence counter and release channel share its slot\n";
      return std::nullopt;
    }
    loaded.config->redis.key = *key_override;
    loaded.config->redis.key_flag = *key_override;
  }
  if (prefix_override) {
    // Over REDISGO_TASK_HOLDER_PREFIX and [redis] value, checked as they are.
    if (prefix_override->empty()) {
      std::cerr << "redisgo_task: --holder-prefix: expected a non-empty holder id prefix, found an empty string\n";
      return std::nullopt;
    }
    if (const auto found = config::control_character_found(*prefix_override)) {
      std::cerr << "redisgo_task: --holder-prefix: expected a holder id prefix without control characters, found "
                << *found << "\n";
      return std::nullopt;
    }
    loaded.config->redis.value = *prefix_override;
  }
  return loaded.config;
}

int run_validate(const std::string& config_path) {
  config::LoadResult loaded = config::load_file(config_path);
  print_diagnostics(loaded);
  if (!loaded.config) {
    std::cerr << "redisgo_task: " << config_path << ": " << loaded.errors.size() << " error(s)\n";
    return kExitConfig;
  }
  if (!command_runnable(*loaded.config)) {
    std::cerr << "redisgo_task: " << config_path << ": 1 error(s)\n";
    return kExitConfig;
  }
  std::cout << "# " << config_path << ": valid\n" << config::render_effective(*loaded.config);
  return output_written(0);
}

/// A duration option (`name`, `given`: it was on the command line, maybe empty) into
/// `timeout`; false, said on stderr, when it is not a duration.
bool duration_option(const char* name, const std::string& text, bool given,
                     std::optional<std::chrono::milliseconds>& timeout, bool zero_allowed = false) {
  if (text.empty() && given) {
    std::cerr << "redisgo_task: " << name << ": expected a duration such as \"30s\", found an empty string\n";
    return false;
  }
  if (text.empty()) return true;
  std::string why;
  // As in the config file, a bare integer is seconds.
  const bool digits = text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
  timeout = parse_duration(digits ? text + "s" : text, &why);
  if (!timeout || timeout->count() < (zero_allowed ? 0 : 1) || *timeout > config::kMaxDuration) {
    std::cerr << "redisgo_task: " << name << ": expected a duration such as \"30s\" ("
              << (zero_allowed ? "0 or more" : "more than 0") << ", at most 1 year), found \""
              << log::printable(text) << "\"" << (why.empty() ? "" : " (" + why + ")") << "\n";
    return false;
  }
  return true;
}

/// task: the daemon, on the loaded config and the command line's command.
int start_task(config::Config cfg, const Args& a, std::optional<std::chrono::milliseconds> wait_timeout) {
  // task: a command from the file that cannot run fails here, loudly, with its line; one
  // from the command line fails here too, as a shell's would (127/126).
  if (a.command.empty() ? !command_runnable(cfg) : !health_command_runnable(cfg) || !textfile_writable(cfg)) {
    return kExitConfig;
  }
  if (!a.command.empty()) {
    cfg.task.command = a.command;
    cfg.task.command_is_shell = false;
    if (auto code = command_line_unrunnable(cfg)) return *code;
  }
  if (cfg.task.command.empty()) {
    std::cerr << "redisgo_task: " << a.config_path
              << ": no command: set [task] command or give one after -- (redisgo_task task --config F -- CMD ARGS)\n";
    return kExitConfig;
  }
  daemon::TaskOptions options;
  options.config = std::move(cfg);
  const char* oneshot_flag = a.no_wait ? "--no-wait" : wait_timeout ? "--wait-timeout" : nullptr;
  if (oneshot_flag && options.config.task.mode == config::Mode::kSupervise) {
    std::cerr << "redisgo_task: " << oneshot_flag << " applies to mode = \"oneshot\" only; " << a.config_path
              << " sets mode = \"supervise\", which contends until it is stopped\n";
    return kExitConfig;
  }
  // The command line over the file; --no-wait is a wait of 0 (redisgo_task(1) "Modes").
  if (a.no_wait) wait_timeout = std::chrono::milliseconds(0);
  if (!wait_timeout) wait_timeout = options.config.task.wait_timeout;
  options.config.task.wait_timeout = wait_timeout;
  options.wait = !(wait_timeout && wait_timeout->count() == 0);
  // `value` is only a prefix: the id is unique per process (docs/DESIGN.md, invariant 9).
  options.holder = wiring::default_holder_id(options.config.redis.value);
  log::set_context(options.config.redis.key, options.holder);
  try {
    return guarded("task", a.config_path, Outcome::kBug, [&] { return daemon::run_task(options); });
  } catch (const std::exception& e) {
    log::get("daemon")->error("fatal: {}", e.what());
    return exit_status(Outcome::kBug);
  }
}

}  // namespace

int dispatch(const Chosen& subs, const Args& a) {
  if (subs.version) {
    std::cout << version_line() << "\n";
    return 0;
  }

  if (!subs.task) {
    // Only `task` reads signals from its signalfd; for the others Ctrl-C and SIGTERM must
    // end them at once, as by default (they hold no lease and run no child).
    const sigset_t handled = process::handled_signals();
    ::sigprocmask(SIG_UNBLOCK, &handled, nullptr);
  }

  if (subs.validate && a.defaults) {
    std::cout << config::render_defaults();
    return output_written(0);
  }
  if (subs.validate) return run_validate(a.config_path);

  std::optional<std::chrono::milliseconds> timeout;
  if (subs.handover && !duration_option("--timeout", a.handover_timeout, subs.handover_timeout_given, timeout)) {
    return kExitConfig;
  }
  if (subs.pause && !duration_option("--for", a.pause_for, true, timeout)) return kExitConfig;
  std::optional<std::chrono::milliseconds> wait_timeout;
  if (subs.task && !duration_option("--wait-timeout", a.wait_timeout, subs.wait_timeout_given, wait_timeout, true)) {
    return kExitConfig;
  }
  auto cfg = load(a.config_path, a.key, a.holder_prefix,
                  subs.status || subs.handover || subs.list || subs.pause || subs.resume ? config::Scope::kRedis
                                                                                              : config::Scope::kAll,
                  subs.task);
  if (!cfg) return kExitConfig;
  config::scrub_secret_environment(*cfg);
  log::setup(cfg->log.level, cfg->log.format);

  if (subs.handover) {
    if (a.handover_slot < 0 || a.handover_slot >= cfg->task.limit) {
      std::cerr << "redisgo_task: --slot: expected a slot from 0 to " << cfg->task.limit - 1
                << " (the key's [task] limit is " << cfg->task.limit << "), found " << a.handover_slot << "\n";
      return kExitConfig;
    }
    return guarded("handover", a.config_path, Outcome::kUnavailable,
                   [&] { return commands::run_handover(*cfg, timeout, a.handover_slot, a.handover_force, std::cout, std::cerr); });
  }

  if (subs.pause || subs.resume) {
    return guarded(subs.pause ? "pause" : "resume", a.config_path, Outcome::kUnavailable, [&] {
      return subs.pause ? commands::run_pause(*cfg, *timeout, a.pause_reason, a.pause_stop, std::cout, std::cerr)
                         : commands::run_resume(*cfg, std::cout, std::cerr);
    });
  }
  if (subs.adopt) {
    return guarded("adopt", a.config_path, Outcome::kUnavailable, [&] { return commands::run_adopt(*cfg, std::cout, std::cerr); });
  }
  if (subs.list) {
    return guarded("list", a.config_path, Outcome::kUnavailable,
                   [&] { return output_written(commands::run_list(*cfg, a.pattern, a.json, std::cout)); });
  }

  // check and status read Redis and report; a TLS file that does not load is the config's
  // fault (78), anything else that stops them is "could not reach" (69).
  if (subs.check || subs.status) {
    return guarded(subs.check ? "check" : "status", a.config_path, Outcome::kUnavailable, [&] {
      return output_written(subs.check ? commands::run_check(*cfg, a.json, std::cout)
                                        : commands::run_status(*cfg, a.json, std::cout));
    });
  }

  return start_task(std::move(*cfg), a, wait_timeout);
}


std::string version_line() { return std::string("redisgo_task " REDISGO_VERSION " (commit ") + kCommit + ")"; }


}  // namespace redisgo::cli
