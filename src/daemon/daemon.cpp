#include "daemon/daemon.h"

#include "daemon/runner.h"

namespace redisgo::daemon {

process::SpawnOptions spawn_options(const config::Config& config) {
  process::SpawnOptions spawn;
  spawn.argv = config.task.command;
  spawn.workdir = config.task.workdir;
  spawn.env = config.task.env;
  // systemd's notify and watchdog variables address the daemon, the unit's main process.
  // A child that speaks sd_notify would otherwise report READY/STATUS/WATCHDOG as if it
  // were the service, and with WATCHDOG_PID absent it would even feed the watchdog.
  spawn.unset_env = {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"};
  // What the keeper does at the deadline when the daemon cannot (process/deadline_rule.h):
  // the daemon's own stop, and its silence judged by the renewal interval.
  spawn.kill_signal = config.task.kill_signal;
  spawn.kill_grace = config.task.kill_grace;
  spawn.tick = config.redis.cron.count() > 0 ? config.redis.cron : config::default_cron(config.redis.expire);
  // The child never sees the Redis password (redisgo_task(1), ENVIRONMENT), unless the
  // operator hands it over on purpose through [task] env.
  if (config.redis.password_source == config::PasswordSource::kEnv) spawn.unset_env.push_back(config.redis.password_origin);
  if (config.redis.sentinel_password_source == config::PasswordSource::kEnv) {
    spawn.unset_env.push_back(config.redis.sentinel_password_origin);
  }
  return spawn;
}

void add_task_env(process::SpawnOptions& spawn, const config::Config& config, const std::string& holder,
                  std::uint64_t token, int slot) {
  spawn.env["REDISGO_TASK_KEY"] = config.redis.key;
  spawn.env["REDISGO_TASK_TOKEN"] = std::to_string(token);
  spawn.env["REDISGO_TASK_HOLDER"] = holder;
  spawn.env["REDISGO_TASK_EXPIRE_MS"] = std::to_string(config.redis.expire.count());
  spawn.env["REDISGO_TASK_SLOT"] = std::to_string(slot);
}

int run_task(const TaskOptions& options, const Dependencies& deps) {
  Runner runner(options, deps);
  return runner.run();
}

}  // namespace redisgo::daemon
