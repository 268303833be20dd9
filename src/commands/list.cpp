#include "commands/list.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include "commands/check_findings.h"
#include "lock/fencing.h"
#include "lock/lease.h"
#include "log/logging.h"
#include "util/duration.h"

namespace redisgo::commands {

namespace list {

namespace {

/// The holder id's host (or `value` prefix): "" for a value without the id's tail.
std::string host_of(const std::string& holder) {
  const std::string head = lock::holder_prefix(holder);
  return head == holder ? "" : head;
}

/// The key's answers from every node that gave one.
struct Gathered {
  std::vector<const NodeKey*> answers;
  std::optional<LastClaim> claim;
};

/// A semaphore's other slots: those a quorum names a holder of (with the lowest TTL of the
/// nodes that do), and those whose key is of another type on any node.
void judge_slots(const std::vector<const NodeKey*>& read, int quorum, Row& row) {
  std::map<std::pair<int, std::string>, int> slots;
  for (const auto* a : read) {
    for (const auto& s : a->slots) ++slots[{s.slot, s.holder}];
  }
  for (const auto& [slot, n] : slots) {
    if (n < quorum) continue;
    std::int64_t ttl = -2;
    for (const auto* a : read) {
      for (const auto& s : a->slots) {
        if (s.slot == slot.first && s.holder == slot.second) ttl = ttl == -2 ? s.ttl_ms : std::min(ttl, s.ttl_ms);
      }
    }
    row.slots.push_back({slot.first, slot.second, ttl});
  }
  std::map<int, std::string> others;
  for (const auto* a : read) {
    for (const auto& [slot, type] : a->other_type) others.emplace(slot, type);
  }
  row.other_type.assign(others.begin(), others.end());
}

Row judge(const std::string& key, const Gathered& g, int quorum) {
  Row row;
  row.key = key;
  std::vector<const NodeKey*> read;
  for (const auto* a : g.answers) {
    if (a->read) {
      read.push_back(a);
    } else if (row.error.empty()) {
      row.error = a->error;
    }
    // One node's note is enough: it only says that a daemon holds back, and why.
    auto note = a->read ? lock::parse_refusal_note(a->refusal) : std::nullopt;
    if (note && (!row.refusal || note->since_ms > row.refusal->since_ms)) row.refusal = std::move(note);
  }
  row.claim = g.claim;
  if (static_cast<int>(read.size()) < quorum) {
    row.state = "unreadable";
    if (row.error.empty()) row.error = "read on fewer nodes than a quorum";
    return row;
  }
  std::map<std::string, int> holders;
  int paused = 0;
  bool corrupt = false;
  std::vector<std::uint64_t> tokens;
  for (const auto* a : read) {
    if (!a->holder.empty()) ++holders[a->holder];
    row.line = std::max(row.line, a->line);
    if (a->pause_ttl_ms != -2) ++paused;
    if (!a->fence.empty()) {
      if (auto t = lock::parse_fence(a->fence)) {
        tokens.push_back(*t);
      } else {
        corrupt = true;
      }
    }
  }
  // The highest counter a quorum has reached: a grant raised it there. An attempt granted on a
  // minority (and undone) raises a counter too; the highest of all would show that as a grant
  // that never was, with a token no child had.
  std::sort(tokens.begin(), tokens.end(), std::greater<>());
  const std::uint64_t token =
      tokens.empty() ? 0 : tokens[std::min(tokens.size(), static_cast<std::size_t>(quorum)) - 1];
  if (!corrupt && token > 0) row.token = token;
  row.fence_seen = corrupt || token > 0;
  row.state = holders.empty() ? "free" : "split";
  for (const auto& [holder, n] : holders) {
    if (n < quorum) continue;
    row.state = "held";
    row.holder = holder;
    for (const auto* a : read) {
      if (a->holder != holder) continue;
      row.ttl_ms = row.ttl_ms == -2 ? a->ttl_ms : std::min(row.ttl_ms, a->ttl_ms);
    }
  }
  if (row.state == "held") {
    const std::string who = lock::turn_of(row.holder).value_or(row.holder);
    row.host = host_of(who);
    // The token is the server's TIME in µs at the grant (or the counter + 1, which is
    // later only after a clock went back): when the lease was taken.
    if (row.token && *row.token >= 1'000'000'000'000'000ULL) row.since_s = static_cast<std::int64_t>(*row.token / 1'000'000);
  }
  judge_slots(read, quorum, row);
  if (paused >= quorum) {
    for (const auto* a : read) {
      if (a->pause_ttl_ms == -2) continue;
      row.paused = true;
      row.paused_by = a->paused_by;
      row.pause_reason = a->pause_reason;
      row.paused_since_ms = lock::parse_count(a->paused_since_ms);
      row.paused_until_ms = lock::parse_count(a->paused_until_ms);
      break;
    }
  }
  return row;
}

std::string ttl_text(std::int64_t ms) {
  if (ms == -1) return "no expiry (set by hand?)";
  if (ms < 0) return "?";
  return format_duration(std::chrono::milliseconds(ms)) + " left";
}

std::string ms_utc(std::int64_t ms) { return ms > 0 ? utc_text(ms / 1000) : std::string("unknown"); }

}  // namespace

std::vector<Row> merge(const std::vector<NodeScan>& scans, int quorum) {
  std::map<std::string, Gathered> keys;
  for (const auto& scan : scans) {
    for (const auto& [key, answer] : scan.keys) keys[key].answers.push_back(&answer);
    for (const auto& [key, claim] : scan.claims) {
      auto& g = keys[key];
      if (!g.claim || claim.slot_start_s > g.claim->slot_start_s) g.claim = claim;
    }
  }
  std::vector<Row> rows;
  for (const auto& [key, g] : keys) {
    if (g.answers.empty()) continue;  // a claim of a key whose fence counter is gone
    rows.push_back(judge(key, g, quorum));
  }
  return rows;
}

void write_text(const std::vector<Row>& rows, const std::vector<NodeScan>& scans, std::ostream& out) {
  // The nodes that could not be scanned first (a user without +scan: NOPERM), and "no keys
  // found" only where every node was scanned: said before a refusal, it read as the answer.
  int scanned = 0;
  for (const auto& s : scans) {
    if (!s.reachable) out << "node " << log::printable(s.node) << ": not scanned: " << log::printable(s.error) << "\n";
    scanned += s.reachable ? 1 : 0;
  }
  for (const auto& r : rows) {
    out << log::printable(r.key) << ": ";
    if (r.state == "held") {
      out << "held by " << log::printable(lock::describe_holder(r.holder));
      if (!r.host.empty()) out << " (host " << log::printable(r.host) << ")";
      if (r.since_s) out << " since " << utc_text(*r.since_s);
      out << ", " << ttl_text(r.ttl_ms);
    } else if (r.state == "unreadable") {
      out << "unreadable (" << log::printable(r.error) << ")";
    } else {
      out << r.state;
    }
    if (r.state != "unreadable") {
      out << ", token " << (r.token ? std::to_string(*r.token) : r.fence_seen ? "unreadable" : "none yet");
      if (r.line > 0) out << ", " << r.line << " waiting in line";
      if (r.line < 0) out << ", the waiting line is not a sorted set";
    }
    out << "\n";
    for (const auto& s : r.slots) {
      out << "  slot " << s.slot << ": held by " << log::printable(s.holder) << ", " << ttl_text(s.ttl_ms) << "\n";
    }
    for (const auto& [slot, type] : r.other_type) {
      out << "  slot " << slot << ": a " << log::printable(type)
          << " key, not a lease (something else wrote it): the daemons skip this slot\n";
    }
    if (r.claim) {
      out << "  once_per: last slot " << utc_text(r.claim->slot_start_s) << " claimed by "
          << log::printable(r.claim->holder.empty() ? "(nobody)" : r.claim->holder)
          << (r.claim->status.empty() ? ", running or no exit status recorded"
                                      : ", exit status " + log::printable(r.claim->status))
          << "\n";
    }
    if (r.paused) {
      out << "  paused by " << log::printable(r.paused_by) << " since " << ms_utc(r.paused_since_ms) << " until "
          << ms_utc(r.paused_until_ms) << (r.pause_reason.empty() ? "" : ": " + log::printable(r.pause_reason)) << "\n";
    }
    if (r.refusal) out << "  alert: " << log::printable(lock::describe_refusal(*r.refusal)) << "\n";
  }
  if (rows.empty() && scanned == static_cast<int>(scans.size())) out << "no keys found\n";
  if (rows.empty() && scanned > 0 && scanned < static_cast<int>(scans.size())) {
    out << "no keys found on the " << scanned << " node(s) scanned\n";
  }
  for (const auto& s : scans) {
    if (s.truncated) out << "node " << log::printable(s.node) << ": stopped at the scan's bound; narrow it with --pattern\n";
  }
}

void write_json(const std::vector<Row>& rows, const std::vector<NodeScan>& scans, std::ostream& out) {
  using check::json_quote;
  out << "{\"keys\":[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out << (i ? "," : "") << "{\"key\":" << json_quote(r.key) << ",\"state\":" << json_quote(r.state)
        << ",\"holder\":" << (r.holder.empty() ? "null" : json_quote(r.holder))
        << ",\"host\":" << (r.host.empty() ? "null" : json_quote(r.host))
        << ",\"since\":" << (r.since_s ? json_quote(utc_text(*r.since_s)) : "null")
        << ",\"token\":" << (r.token ? std::to_string(*r.token) : "null")
        << ",\"ttl_ms\":" << (r.state == "held" && r.ttl_ms >= 0 ? std::to_string(r.ttl_ms) : "null")
        << ",\"line\":" << r.line << ",\"slots\":[";
    for (std::size_t k = 0; k < r.slots.size(); ++k) {
      out << (k ? "," : "") << "{\"slot\":" << r.slots[k].slot << ",\"holder\":" << json_quote(r.slots[k].holder)
          << ",\"ttl_ms\":" << r.slots[k].ttl_ms << "}";
    }
    out << "],\"other_type_slots\":[";
    for (std::size_t k = 0; k < r.other_type.size(); ++k) {
      out << (k ? "," : "") << "{\"slot\":" << r.other_type[k].first << ",\"type\":" << json_quote(r.other_type[k].second)
          << "}";
    }
    out << "],\"once_per\":";
    if (r.claim) {
      out << "{\"slot\":" << json_quote(utc_text(r.claim->slot_start_s)) << ",\"holder\":" << json_quote(r.claim->holder)
          << ",\"status\":" << (r.claim->status.empty() ? "null" : json_quote(r.claim->status)) << "}";
    } else {
      out << "null";
    }
    out << ",\"paused\":";
    if (r.paused) {
      out << "{\"by\":" << json_quote(r.paused_by) << ",\"reason\":" << json_quote(r.pause_reason)
          << ",\"since\":" << json_quote(ms_utc(r.paused_since_ms)) << ",\"until\":" << json_quote(ms_utc(r.paused_until_ms))
          << "}";
    } else {
      out << "null";
    }
    out << ",\"renewals_refused\":";
    if (r.refusal) {
      const auto& n = *r.refusal;
      out << "{\"holder\":" << json_quote(n.holder) << ",\"host\":" << json_quote(lock::holder_prefix(n.holder))
          << ",\"since\":" << (n.since_ms > 0 ? json_quote(utc_text(n.since_ms / 1000)) : "null")
          << ",\"user\":" << json_quote(n.user) << ",\"right\":" << json_quote(n.right) << "}";
    } else {
      out << "null";
    }
    out << ",\"error\":" << (r.error.empty() || r.state != "unreadable" ? "null" : json_quote(r.error)) << "}";
  }
  out << "],\"nodes\":[";
  for (std::size_t i = 0; i < scans.size(); ++i) {
    const auto& s = scans[i];
    out << (i ? "," : "") << "{\"node\":" << json_quote(s.node) << ",\"scanned\":" << (s.reachable ? "true" : "false")
        << ",\"truncated\":" << (s.truncated ? "true" : "false")
        << ",\"error\":" << (s.error.empty() ? "null" : json_quote(s.error)) << "}";
  }
  out << "]}\n";
}

}  // namespace list

}  // namespace redisgo::commands
