// Findings about the setup as a whole (no node): the renewal margins the config leaves,
// and how many nodes answered against the quorum.
#include "commands/check_findings.h"

#include "util/duration.h"
#include "util/rounding.h"

namespace redisgo::commands::check {
namespace {

std::string ms_field(Millis d) { return std::to_string(d.count()); }

}  // namespace

Margins margins(const config::Config& config) {
  const auto& r = config.redis;
  Margins m;
  m.expire = r.expire;
  m.cron = r.cron.count() > 0 ? r.cron : config::default_cron(r.expire);
  m.kill_grace = config.task.kill_grace;
  // As the config's cross-check (config/loader_cross_checks.cpp): the drift allowance and the kill margin.
  m.drift = Millis(ceil_to_int(static_cast<double>(r.expire.count()) * r.drift_factor) +
                   r.drift_fixed.count() + config::kill_margin(r.expire).count());
  m.need = m.cron + m.kill_grace + m.drift;
  m.spare = m.expire - m.need;
  m.round_trip = r.connect_timeout + r.io_timeout;
  return m;
}

Finding margin_finding(const config::Config& config) {
  const Margins m = margins(config);
  const std::string figures = "cron " + format_duration(m.cron) + " + kill_grace " + format_duration(m.kill_grace) +
                              " + drift and kill margin " + format_duration(m.drift) + " = " + format_duration(m.need) +
                              " of expire " + format_duration(m.expire) + ": " + format_duration(m.spare) + " to spare";
  const std::string fix = "lengthen expire, or shorten cron, kill_grace or the timeouts";
  Finding f;
  if (m.spare <= Millis(0)) {
    f = make(Level::kFail, "margins", "",
             figures + "; if a renewal fails, the child cannot be stopped before the lease expires", fix);
  } else if (m.spare < m.round_trip) {
    f = make(Level::kWarn, "margins", "",
             figures + ", less than connect_timeout + io_timeout (" + format_duration(m.round_trip) +
                 "): a renewal that has to reconnect is confirmed only after the child was told to stop",
             fix);
  } else if (m.spare < m.cron) {
    f = make(Level::kWarn, "margins", "",
             figures + ", less than one cron: when a renewal fails, the child is told to stop before the next tick; "
                       "only the quick retries can save it",
             fix);
  } else {
    f = make(Level::kOk, "margins", "",
             figures + " (at least one cron and connect_timeout + io_timeout " + format_duration(m.round_trip) + ")");
  }
  f.fields.emplace_back("cron_ms", ms_field(m.cron));
  f.fields.emplace_back("kill_grace_ms", ms_field(m.kill_grace));
  f.fields.emplace_back("drift_ms", ms_field(m.drift));
  f.fields.emplace_back("expire_ms", ms_field(m.expire));
  f.fields.emplace_back("spare_ms", ms_field(m.spare));
  return f;
}

Finding quorum_finding(int reachable, int nodes, int quorum) {
  const std::string figures = std::to_string(reachable) + " of " + std::to_string(nodes) + " nodes reachable, quorum " +
                              std::to_string(quorum);
  Finding f;
  if (reachable < quorum) {
    f = make(Level::kFail, "quorum", "", figures + ": no lease can be taken or renewed",
             "bring back at least " + std::to_string(quorum - reachable) + " more node(s)");
  } else if (reachable < nodes) {
    f = make(Level::kWarn, "quorum", "",
             figures + ": " + std::to_string(reachable - quorum + 1) + " more failure(s) and no holder can renew",
             "bring the unreachable node(s) back");
  } else {
    f = make(Level::kOk, "quorum", "", figures);
  }
  f.fields.emplace_back("reachable", std::to_string(reachable));
  f.fields.emplace_back("quorum", std::to_string(quorum));
  return f;
}

Finding line_finding(const std::string& node, bool fair, std::optional<std::int64_t> length, std::int64_t outside,
                     const std::string& line_key, const std::string& channel, const std::string& why) {
  const std::string same = "set [redis] fair the same on every daemon of this key (and run one version)";
  Finding f;
  if (!length && why.find("WRONGTYPE") != std::string::npos) {
    // Every acquisition reads the line: a key of another type there fails them all.
    f = make(Level::kFail, "line", node, "the waiting line " + line_key + " is not a sorted set: " + why +
                                          ": every acquisition of this key fails",
             "delete " + line_key + " (something else wrote it)");
  } else if (!length && acl_refused(why)) {
    // A key pattern or a right that leaves the line out: the acquire scripts touch it every time.
    f = make(Level::kFail, "line", node, "this user may not read the waiting line " + line_key + ": " + why +
                                          ": every acquisition of this key is refused (exit 77)",
             "grant the keys ~" + line_key.substr(0, line_key.size() - 4) + "* and the commands the README's ACL recipe lists");
  } else if (!length) {
    f = make(Level::kWarn, "line", node, "could not read the waiting line " + line_key + ": " + why,
             "grant this user ZCARD and ZRANGE on " + line_key + " (the README's ACL recipe)");
  } else if (fair && outside > 0) {
    f = make(Level::kWarn, "line", node,
             std::to_string(outside) + " waiter(s) listen on " + channel +
                 " outside the waiting line (fair = false, or a version without the line): they get the lease "
                 "only when nobody waits in line",
             same);
  } else if (!fair && *length > 0) {
    f = make(Level::kWarn, "line", node,
             std::to_string(*length) + " waiter(s) in the waiting line " + line_key +
                 ": daemons with fair = true share this key, and this one (fair = false) gets a freed lease only "
                 "when nobody waits in line",
             same);
  } else {
    f = make(Level::kOk, "line", node,
             fair ? std::to_string(*length) + " waiting in line" + (outside < 0 ? "" : ", none outside it")
                  : "fair = false, and nobody waits in line");
  }
  if (length) f.fields.emplace_back("length", std::to_string(*length));
  f.fields.emplace_back("outside", outside < 0 ? "null" : std::to_string(outside));
  return f;
}

}  // namespace redisgo::commands::check
