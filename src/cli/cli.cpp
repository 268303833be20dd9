#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/installed.h"
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

/// What `version` and `--version` print.
std::string version_line() { return std::string("redisgo_task " REDISGO_VERSION " (commit ") + kCommit + ")"; }

constexpr const char* kMainFooter = R"(Examples:
  redisgo_task validate --config /etc/redisgo_task/backup.toml
  redisgo_task task --config /etc/redisgo_task/backup.toml
  redisgo_task task --config job.toml --no-wait -- /usr/local/bin/nightly-report
  redisgo_task status --config job.toml --json
  redisgo_task handover --config /etc/redisgo_task/worker.toml
  redisgo_task list --config /etc/redisgo_task/worker.toml --pattern 'jobs:*'
  redisgo_task adopt --config /etc/redisgo_task/report.toml

Exit status: the child's own (oneshot); 75 the lease is held by another (busy) or was lost,
or the once_per slot was run already or skipped (logged at error: a restart guard skip);
69 no quorum of Redis nodes reachable; 77 Redis refused the credentials or TLS verification
failed; 124 child timed out; 78 bad configuration or command line; 70 internal error;
0 supervise stopped on request.
Each command's own --help: redisgo_task COMMAND --help.)";

constexpr const char* kTaskFooter = R"(Examples:
  # run the configured command on exactly one host, waiting for the lease:
  redisgo_task task --config /etc/redisgo_task/backup.toml
  # from cron on every host: run on whichever host gets the lease, skip (exit 75) elsewhere:
  redisgo_task task --config job.toml --no-wait -- /usr/local/bin/job --full

The child gets REDISGO_TASK_KEY, REDISGO_TASK_TOKEN (fencing token), REDISGO_TASK_HOLDER,
REDISGO_TASK_EXPIRE_MS and REDISGO_TASK_SLOT (0..limit-1) in its environment.)";

constexpr const char* kHandoverFooter = R"(Example:
  redisgo_task handover --config /etc/redisgo_task/worker.toml --timeout 30s
Asks the current holder (a supervise leader) to stop its child, release and stand back for
step_down_hold. With [task] limit > 1, --slot N asks the holder of slot N (default 0).
With no standby waiting (nobody in the key's waiting line or listening for its release)
it asks nothing and exits 75 at once: --force asks anyway.
Exit 0 once another holder has the lease, 75 if nobody else took it within the timeout
(default expire + 5s), nothing was held or no standby waits, 69 no quorum of nodes
reachable, 77 Redis refused the credentials or the control message (ACL).)";

constexpr const char* kStatusFooter = R"(Example:
  redisgo_task status --config /etc/redisgo_task/backup.toml --json
state is "held", "free" or "unknown" (--json: holder, ttl_ms and token are null when unknown).
With limit > 1 every slot is shown; with once_per, the claims of the last slots.
Exit 0 when a quorum of nodes could be read, 69 when not (77 when that is because Redis
refused the credentials). Only [redis] needs to be valid.)";

constexpr const char* kValidateFooter = R"(Examples:
  redisgo_task validate --config /etc/redisgo_task/backup.toml
  redisgo_task validate --defaults
Prints the effective configuration (defaults filled in, secrets masked) and exits 0, or
prints every problem with its file, line and column and exits 78. --defaults prints the
default of every key instead, as TOML: "key = value", "key = value  # default: RULE" for a
default derived from other keys, "# key: TEXT" for a key without a default value.)";

constexpr const char* kCheckFooter = R"(Example:
  redisgo_task check --config /etc/redisgo_task/backup.toml
One line per finding: ok, warn, fail, or skip (a check this ACL user may not make, with the
right it needs), with what to do. Checks each node's role, version, maxmemory-policy,
persistence, run_id (the same server listed twice), clock offset, what the lease scripts
write (tried on scratch keys {K}:check*, deleted at once), the waiting line, the slots of
other limits, and the cron/kill_grace/expire margins.
Exit 0 all ok or skip, 1 any warn or fail, 69 no quorum of nodes reachable (77: because Redis
refused the credentials or TLS verification failed), 78 bad configuration.)";

constexpr const char* kListFooter = R"(Example:
  redisgo_task list --config /etc/redisgo_task/worker.toml --pattern 'jobs:*' --json
Every key that this config's Redis deployment coordinates (every node, every Cluster
master), found by SCAN (never KEYS): holder, host, since, token, TTL, the other slots of a
semaphore, the waiting line, the last once_per claim, a pause. Read-only. The config's
own key does not matter; --pattern is a glob on the key names (default: all).
Exit 0 when a quorum of nodes (every Cluster master) was scanned, 69 when not, 77 when
Redis refused the credentials.)";

constexpr const char* kPauseFooter = R"(Example:
  redisgo_task pause --config /etc/redisgo_task/report.toml --for 2h --reason "schema migration"
While a key is paused, no host starts its job: waiters wait (oneshot runs exit 75 as for a
busy lease), and `status` and `list` show who paused it, why, since and until when. The
pause ends by itself after --for (required: a pause is never forgotten), or with
`redisgo_task resume`. A running holder finishes its job (a supervise leader keeps its
lease, restarts included); --stop asks it to stop now, as `handover` does.
Exit 0 once a quorum of nodes holds the pause, 75 when --stop was not heard, 69 no quorum
reachable, 77 refused (ACL).)";

constexpr const char* kResumeFooter = R"(Example:
  redisgo_task resume --config /etc/redisgo_task/report.toml
Ends a pause at once and wakes the waiters, as a release would. Exit 0 (also when the key
was not paused), 69 no quorum reachable, 77 refused (ACL).)";

constexpr const char* kAdoptFooter = R"(Example:
  redisgo_task adopt --config /etc/redisgo_task/report.toml
once_per: declares the current slot (the one nearest to now) unclaimed, on every node. Servers
that never ran this key look exactly like servers that restarted empty, which the restart
guard does not believe: on a first deployment (or after a restart that skipped a slot, once
you know it did not run), this lets the slot run. A node restarted after the declaration
does not count through it. Recorded with who ran it and when (check and status show it).
Exit 0 once a quorum of nodes holds it, 75 when a node has a claim of the slot (it ran: who
ran it is said), 69 no quorum reachable, 77 refused (ACL), 78 a config without once_per.)";

constexpr const char* kVersionFooter = R"(Example:
  redisgo_task version
Prints "redisgo_task VERSION" (as --version does) and exits 0.)";

/// A --help footer: `text`, then where the rest is on the installed system (the manual
/// page, the example configuration this installation has), not a path of the source
/// repository. Computed when help is shown, not at every start.
std::function<std::string()> footer(const char* text) {
  return [text] {
    return std::string(text) +
           "\n\nReference: the manual page redisgo_task(1) (man redisgo_task): every command, option,"
           "\nconfiguration key, exit status and signal. The commented example configuration:\n  " +
           example_config();
  };
}

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

/// The subcommands, to tell which one was given (null: not built for this run).
struct Subcommands {
  CLI::App* task = nullptr;
  CLI::App* status = nullptr;
  CLI::App* validate = nullptr;
  CLI::App* check = nullptr;
  CLI::App* handover = nullptr;
  CLI::App* list = nullptr;
  CLI::App* pause = nullptr;
  CLI::App* resume = nullptr;
  CLI::App* adopt = nullptr;
  CLI::App* version = nullptr;
};

/// Which subcommand the command line named, read from the parsed Subcommands, so that
/// CLI11's objects can be gone before the command runs.
struct Chosen {
  bool task = false, status = false, validate = false, check = false, handover = false, list = false, pause = false,
       resume = false, adopt = false, version = false;
  bool handover_timeout_given = false;
  bool wait_timeout_given = false;
};

Chosen chosen(const Subcommands& subs) {
  const auto given = [](const CLI::App* sub) { return sub != nullptr && static_cast<bool>(*sub); };
  Chosen c;
  c.task = given(subs.task);
  c.status = given(subs.status);
  c.validate = given(subs.validate);
  c.check = given(subs.check);
  c.handover = given(subs.handover);
  c.list = given(subs.list);
  c.pause = given(subs.pause);
  c.resume = given(subs.resume);
  c.adopt = given(subs.adopt);
  c.version = given(subs.version);
  c.handover_timeout_given = c.handover && subs.handover->count("--timeout") > 0;
  c.wait_timeout_given = c.task && subs.task->count("--wait-timeout") > 0;
  return c;
}

/// The subcommands' names, in the order --help lists them.
constexpr std::string_view kCommandNames[] = {"task", "status", "validate", "check", "handover",
                                              "list", "pause",  "resume",   "adopt",   "version"};

/// The subcommand to build alone: the first argument when it names one exactly. Building
/// CLI11's options, checks and footers for all nine was a fifth of the instructions of a
/// `task -- true` run, and their heap stayed for the daemon's life. Empty:
/// build them all (--help, --version, a mistyped or missing command).
std::string_view only_command(int argc, char** argv) {
  if (argc <= 1) return {};
  const std::string_view first(argv[1]);
  for (auto name : kCommandNames) {
    if (first == name) return name;
  }
  return {};
}

CLI::App* add_task(CLI::App& app, Args& a) {
  auto* task = app.add_subcommand("task", "Contend for the lease and run the command while holding it");
  task->add_option("-c,--config", a.config_path, "TOML configuration file")->required()->check(CLI::ExistingFile);
  task->add_option("-k,--key", a.key, "Lock key (overrides [redis] key)");
  task->add_option("--holder-prefix", a.holder_prefix,
                   "Holder id prefix (overrides REDISGO_TASK_HOLDER_PREFIX and [redis] value; default the host name)");
  auto* wait_flag = task->add_flag("--wait", a.wait, "Wait for the lease as configured (default)");
  auto* no_wait = task->add_flag("--no-wait", a.no_wait, "oneshot: try once; exit 75 if the lease is held")->excludes(wait_flag);
  task->add_option("--wait-timeout", a.wait_timeout,
                   "oneshot: wait at most this long for the lease, from the start (overrides [task] wait_timeout; "
                   "0 = --no-wait)")
      ->excludes(no_wait);
  task->add_option("command", a.command, "Command to run, after --; overrides [task] command");
  task->footer(footer(kTaskFooter));
  return task;
}

CLI::App* add_status(CLI::App& app, Args& a) {
  auto* status = app.add_subcommand("status", "Show who holds the lease, its TTL and fencing token, per node");
  status->add_option("-c,--config", a.config_path, "TOML configuration file")->required()->check(CLI::ExistingFile);
  status->add_option("-k,--key", a.key, "Lock key (overrides [redis] key)");
  status->add_option("--holder-prefix", a.holder_prefix, "This host's holder id prefix, as task's (for \"this host\")");
  status->add_flag("--json", a.json, "Print one JSON object");
  status->footer(footer(kStatusFooter));
  return status;
}

CLI::App* add_validate(CLI::App& app, Args& a) {
  auto* validate = app.add_subcommand("validate", "Check a configuration file and print the effective settings");
  auto* config = validate->add_option("-c,--config", a.config_path, "TOML configuration file")->check(CLI::ExistingFile);
  validate->add_flag("--defaults", a.defaults, "Print the default of every configuration key instead (reads no file)")
      ->excludes(config);
  validate->require_option(1);  // --config or --defaults
  validate->footer(footer(kValidateFooter));
  return validate;
}

CLI::App* add_check(CLI::App& app, Args& a) {
  auto* check = app.add_subcommand("check", "Preflight: ask every node whether it is fit to hold the lease");
  check->add_option("-c,--config", a.config_path, "TOML configuration file")->required()->check(CLI::ExistingFile);
  check->add_flag("--json", a.json, "Print one JSON object");
  check->footer(footer(kCheckFooter));
  return check;
}

CLI::App* add_handover(CLI::App& app, Args& a) {
  auto* handover = app.add_subcommand("handover", "Ask the current leader to step down so another host takes over");
  handover->add_option("-c,--config", a.config_path, "TOML configuration file")->required()->check(CLI::ExistingFile);
  handover->add_option("-k,--key", a.key, "Lock key (overrides [redis] key)");
  handover->add_option("-t,--timeout", a.handover_timeout, "How long to wait for another holder (default: expire + 5s)");
  handover->add_option("--slot", a.handover_slot, "Semaphore ([task] limit > 1): ask the holder of this slot (default 0)");
  handover->add_flag("--force", a.handover_force, "Ask even when no standby waits (the service stops until one comes)");
  handover->footer(footer(kHandoverFooter));
  return handover;
}

CLI::App* add_list(CLI::App& app, Args& a) {
  auto* list = app.add_subcommand("list", "Show every key this Redis deployment coordinates, one line each");
  list->add_option("-c,--config", a.config_path, "TOML configuration file")->required()->check(CLI::ExistingFile);
  list->add_option("-p,--pattern", a.pattern, "Only keys whose name matches this glob (as SCAN MATCH)");
  list->add_flag("--json", a.json, "Print one JSON object");
  list->footer(footer(kListFooter));
  return list;
}

CLI::App* add_pause(CLI::App& app, Args& a) {
  auto* pause = app.add_subcommand("pause", "Maintenance: no host starts the job until the pause ends");
  pause->add_option("-c,--config", a.config_path, "TOML configuration file")->required()->check(CLI::ExistingFile);
  pause->add_option("-k,--key", a.key, "Lock key (overrides [redis] key)");
  pause->add_option("--for", a.pause_for, "How long (required): the pause ends by itself then, e.g. \"2h\"")->required();
  pause->add_option("--reason", a.pause_reason, "Why, shown by status and list");
  pause->add_flag("--stop", a.pause_stop, "Ask the running holder to stop its job now (default: it finishes)");
  pause->footer(footer(kPauseFooter));
  return pause;
}

CLI::App* add_resume(CLI::App& app, Args& a) {
  auto* resume = app.add_subcommand("resume", "End a pause at once and wake the waiters");
  resume->add_option("-c,--config", a.config_path, "TOML configuration file")->required()->check(CLI::ExistingFile);
  resume->add_option("-k,--key", a.key, "Lock key (overrides [redis] key)");
  resume->footer(footer(kResumeFooter));
  return resume;
}

CLI::App* add_adopt(CLI::App& app, Args& a) {
  auto* adopt = app.add_subcommand("adopt", "once_per: declare the current slot unclaimed (a first deployment)");
  adopt->add_option("-c,--config", a.config_path, "TOML configuration file")->required()->check(CLI::ExistingFile);
  adopt->add_option("-k,--key", a.key, "Lock key (overrides [redis] key)");
  adopt->footer(footer(kAdoptFooter));
  return adopt;
}

/// Every subcommand, in the order --help lists them, with its options writing into `a`;
/// only `only` when it is not empty.
Subcommands add_subcommands(CLI::App& app, Args& a, std::string_view only) {
  const auto want = [only](std::string_view name) { return only.empty() || only == name; };
  Subcommands subs;
  if (want("task")) subs.task = add_task(app, a);
  if (want("status")) subs.status = add_status(app, a);
  if (want("validate")) subs.validate = add_validate(app, a);
  if (want("check")) subs.check = add_check(app, a);
  if (want("handover")) subs.handover = add_handover(app, a);
  if (want("list")) subs.list = add_list(app, a);
  if (want("pause")) subs.pause = add_pause(app, a);
  if (want("resume")) subs.resume = add_resume(app, a);
  if (want("adopt")) subs.adopt = add_adopt(app, a);
  if (want("version")) {
    subs.version = app.add_subcommand("version", "Print the version");
    subs.version->footer(footer(kVersionFooter));
  }
  return subs;
}

/// A first argument that names no subcommand: said with the nearest name (78). CLI11
/// would say only "A subcommand is required" for a mistyped one.
std::optional<int> unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc <= 1 || argv[1][0] == '-') return std::nullopt;
  std::vector<std::string_view> names;
  for (const auto* sub : app.get_subcommands(nullptr)) names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), std::string_view(argv[1])) != names.end()) return std::nullopt;
  std::cerr << "redisgo_task: unknown command '" << log::printable(argv[1]) << "'";
  if (auto near = config::closest_name(argv[1], names)) std::cerr << "; did you mean '" << *near << "'?";
  std::cerr << "\nCommands:";
  for (auto n : names) std::cerr << " " << n;
  std::cerr << "\nRun 'redisgo_task --help' for more.\n";
  return kExitConfig;
}

/// Parses argv; the exit status when that ends the run (--help, --version: 0; a bad
/// command line: 78), nullopt when a subcommand is to run.
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the usage hint
    return kExitConfig;
  }
  return std::nullopt;
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

/// Runs the subcommand the command line named.
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

}  // namespace

int run(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the mask and signals reach only
  // the daemon's signalfd (docs/DESIGN.md "Processes and threads").
  process::block_handled_signals();
  process::set_program_args(argc, argv);

  Args args;
  Chosen which;
  {
    CLI::App app{"redisgo_task " REDISGO_VERSION " - run a command as a cluster-wide singleton on Redis"};
    app.footer(footer(kMainFooter));
    app.require_subcommand(1);
    app.set_version_flag("--version", version_line());
    const Subcommands subs = add_subcommands(app, args, only_command(argc, argv));
    if (auto code = unknown_command(app, argc, argv)) return *code;
    if (auto code = parse(app, argc, argv)) return *code;
    which = chosen(subs);
  }  // CLI11's objects are freed here: the daemon, which runs for days, reuses their heap
  return dispatch(which, args);
}

}  // namespace redisgo::cli
