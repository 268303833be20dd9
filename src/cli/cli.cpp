#include "cli/cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/dispatch.h"
#include "cli/installed.h"
#include "config/config.h"
#include "log/logging.h"
#include "process/child.h"
#include "process/signals.h"
#include "util/exit_status.h"

#ifndef REDISGO_VERSION
#define REDISGO_VERSION "unknown"
#endif

namespace redisgo::cli {
namespace {

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

}  // namespace

int run(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the mask and signals reach only
  // the daemon's signalfd (docs/DESIGN.md "Processes and threads").
  process::block_handled_signals();
  process::set_program_args(argc, argv);
  log::prefix_stderr_for_journal();

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
