// Findings themselves: making one, its level, the exit status they decide, and how they
// print (text and --json). The findings are judged in check_node_findings.cpp (what a
// server answered), check_clock_findings.cpp, check_setup_findings.cpp (the config's
// margins, the quorum) and check_topology_findings.cpp (Sentinel, Cluster).
#include "commands/check_findings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "commands/check_findings_detail.h"
#include "log/logging.h"
#include "util/exit_status.h"

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

Finding make(Level level, std::string check, std::string node, std::string message, std::string hint) {
  Finding f;
  f.level = level;
  f.check = std::move(check);
  f.node = std::move(node);
  f.message = std::move(message);
  f.hint = std::move(hint);
  return f;
}

bool acl_refused(std::string_view why) { return why.find("NOPERM") != std::string_view::npos; }

Finding skip(std::string check, std::string node, const std::string& what, const std::string& why,
             const std::string& right) {
  return make(Level::kSkip, std::move(check), std::move(node), "not checked: this user may not read " + what + " (" + why + ")",
              "grant the ACL user " + right + " to make this check, or check it by hand");
}

const char* to_string(Level level) {
  switch (level) {
    case Level::kOk: return "ok";
    case Level::kWarn: return "warn";
    case Level::kFail: return "fail";
    case Level::kSkip: return "skip";
  }
  return "fail";
}

int exit_code(const std::vector<Finding>& findings, bool quorum_reachable, bool refused) {
  if (!quorum_reachable) return refused ? kExitNoPerm : kExitUnavailable;
  const bool clean = std::all_of(findings.begin(), findings.end(),
                                 [](const Finding& f) { return f.level == Level::kOk || f.level == Level::kSkip; });
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

}  // namespace redisgo::commands::check
