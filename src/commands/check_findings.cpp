#include "commands/check_findings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "commands/check_findings_detail.h"
#include "daemon/state_machine.h"
#include "log/logging.h"
#include "util/duration.h"

namespace redisgo::commands::check {
namespace detail {

std::string and_list(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += i + 1 == parts.size() ? " and " : ", ";
    out += parts[i];
  }
  return out;
}

}  // namespace detail

namespace {

std::string ms_field(Millis d) { return std::to_string(d.count()); }

}  // namespace

Finding make(Level level, std::string check, std::string node, std::string message, std::string hint) {
  Finding f;
  f.level = level;
  f.check = std::move(check);
  f.node = std::move(node);
  f.message = std::move(message);
  f.hint = std::move(hint);
  return f;
}

const char* to_string(Level level) {
  switch (level) {
    case Level::kOk: return "ok";
    case Level::kWarn: return "warn";
    case Level::kFail: return "fail";
  }
  return "fail";
}

int exit_code(const std::vector<Finding>& findings, bool quorum_reachable) {
  if (!quorum_reachable) return kExitUnavailable;
  const bool clean = std::all_of(findings.begin(), findings.end(), [](const Finding& f) { return f.level == Level::kOk; });
  return clean ? 0 : 1;
}

void write_text(const std::vector<Finding>& findings, std::ostream& out) {
  for (const auto& f : findings) {
    std::string level = to_string(f.level);
    level.resize(4, ' ');
    // One line per finding, whatever a server or a holder id put in the text.
    out << level << " " << f.check;
    if (!f.node.empty()) out << " " << log::printable(f.node);
    out << ": " << log::printable(f.message);
    if (!f.hint.empty()) {
      const bool stop = !f.message.empty() && std::string_view(".?!").find(f.message.back()) != std::string_view::npos;
      out << (stop ? " Fix: " : ". Fix: ") << log::printable(f.hint);
    }
    out << "\n";
  }
}

std::string json_quote(std::string_view s) { return log::json_quoted(s); }

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

void write_json(const Report& r, std::ostream& out) {
  out << "{\"config\":" << json_quote(r.config) << ",\"key\":" << json_quote(r.key)
      << ",\"topology\":" << json_quote(r.topology) << ",\"nodes\":" << r.nodes << ",\"reachable\":" << r.reachable
      << ",\"quorum\":" << r.quorum << ",\"findings\":[";
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    out << (i ? "," : "") << "{\"level\":" << json_quote(to_string(f.level)) << ",\"check\":" << json_quote(f.check)
        << ",\"node\":" << (f.node.empty() ? "null" : json_quote(f.node)) << ",\"message\":" << json_quote(f.message)
        << ",\"hint\":" << (f.hint.empty() ? "null" : json_quote(f.hint));
    for (const auto& [name, value] : f.fields) out << "," << json_quote(name) << ":" << value;
    out << "}";
  }
  out << "],\"exit\":" << r.exit << "}\n";
}

Margins margins(const config::Config& config) {
  const auto& r = config.redis;
  Margins m;
  m.expire = r.expire;
  m.cron = r.cron.count() > 0 ? r.cron : r.expire / 3;
  m.kill_grace = config.task.kill_grace;
  // As config.cpp's cross-check: the drift allowance and the kill margin.
  m.drift = Millis(static_cast<std::int64_t>(std::ceil(static_cast<double>(r.expire.count()) * r.drift_factor)) +
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

}  // namespace redisgo::commands::check
