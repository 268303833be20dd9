#include "lock/once.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "lock/fencing.h"
#include "util/duration.h"

namespace redisgo::lock {

std::string describe_claim(const ClaimRecord& c) {
  std::string out = "holder " + c.holder + " (token " + (c.token.empty() ? "?" : c.token);
  if (const auto start = parse_token(c.start_ms); start && *start < kFenceLimit) {
    out += ", started " + utc_text(static_cast<std::int64_t>(*start) / 1000);
  }
  out += c.status.empty() ? ", no exit status recorded" : ", exit status " + c.status;
  return out + ")";
}

std::optional<std::int64_t> server_started_ms(const OnceNode& n) {
  if (n.uptime_s < 0 || n.now_ms <= 0) return std::nullopt;
  // Whole seconds of a cached clock: a server up 0.1 s may say 1 (docs/DESIGN.md
  // "Restart guard"), so it is taken to have started one second later than it says.
  return n.now_ms - (n.uptime_s - 1) * 1000;
}

bool supports_waitaof(std::string_view version) {
  int major = 0, minor = 0;
  std::size_t i = 0;
  auto number = [&](int& out) {
    const std::size_t from = i;
    while (i < version.size() && version[i] >= '0' && version[i] <= '9' && i - from < 6) out = out * 10 + (version[i++] - '0');
    return i > from;
  };
  if (!number(major) || i >= version.size() || version[i++] != '.' || !number(minor)) return false;
  return major > 7 || (major == 7 && minor >= 2);
}

bool fsyncs_claims(const OnceNode& n) { return n.aof == 1 && supports_waitaof(n.version); }

const char* to_string(Counted how) {
  switch (how) {
    case Counted::kUptime: return "uptime";
    case Counted::kAdopt: return "adopt";
    case Counted::kWitness: return "witness";
    case Counted::kGuardOff: return "off";
    case Counted::kNo: return "";
  }
  return "";
}

Counted counted_from(std::string_view word) {
  for (Counted c : {Counted::kUptime, Counted::kAdopt, Counted::kWitness, Counted::kGuardOff}) {
    if (word == to_string(c)) return c;
  }
  return Counted::kNo;
}

OnceVerdict once_verdict(const OnceNode& n, std::int64_t slot_s, std::int64_t guard_from_ms, std::int64_t highest) {
  if (guard_from_ms <= 0) return {Counted::kGuardOff, "restart_guard = false"};
  const auto started = server_started_ms(n);
  // Unlike the lease's guard, which grants and warns, a claim needs the evidence: a node
  // that cannot say when it started may have restarted and lost a run's claim.
  if (!started) {
    return {Counted::kNo, "INFO refused to this user (grant +info): it cannot say whether it restarted, and so lost a "
                          "claim of the slot, since the slot could begin"};
  }
  const std::string since = utc_text(*started / 1000);
  if (*started <= guard_from_ms) return {Counted::kUptime, "up since " + since + ", before the slot could begin"};
  if (n.adopted == slot_s && n.adopted_ms >= *started) {
    return {Counted::kAdopt, "up since before `adopt` declared the slot unclaimed (" + n.adopted_by + ", " +
                                 utc_text(n.adopted_ms / 1000) + ")"};
  }
  std::string why = "started " + since + ", after the slot could begin (" + utc_text(guard_from_ms / 1000) + "), ";
  if (n.adopted == slot_s) why += "after `adopt` declared it unclaimed (" + utc_text(n.adopted_ms / 1000) + "), ";
  if (n.aof == 0) return {Counted::kNo, why + "with AOF off: a restart loses the claims since the last save"};
  if (n.aof < 0) return {Counted::kNo, why + "and its AOF setting could not be read (INFO persistence)"};
  if (!supports_waitaof(n.version)) {
    return {Counted::kNo, why + "with AOF on but Redis " + (n.version.empty() ? std::string("(version unknown)") : n.version) +
                              ", which has no WAITAOF (7.2 and later): its claims were not fsynced before their runs"};
  }
  if (n.witness <= 0) return {Counted::kNo, why + "with no witness (a fresh or wiped server: no evidence that it kept its claims)"};
  if (!n.witness_durable) {
    return {Counted::kNo, why + "with a witness written where claims were not fsynced (AOF off or Redis < 7.2 then)"};
  }
  if (n.witness < highest) {
    return {Counted::kNo, why + "with a witness (slot " + utc_text(n.witness) + ") lower than another node's (slot " +
                              utc_text(highest) + "): its data is older than the others'"};
  }
  return {Counted::kWitness, "AOF on, WAITAOF, and a witness (slot " + utc_text(n.witness) + ") as high as any node's"};
}

std::int64_t highest_witness(const std::vector<OnceNode>& nodes) {
  std::int64_t w = 0;
  for (const auto& n : nodes) {
    if (n.reachable) w = std::max(w, n.witness);
  }
  return w;
}

std::string once_advice(const std::string& config_path, const std::string& key_flag) {
  // As one shell word: as it is when it holds nothing a shell reads, else in single quotes.
  auto word = [](const std::string& w) {
    const bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-.,/:@%+=").find(c) != std::string_view::npos;
    });
    if (plain) return w;
    std::string quoted = "'";
    for (char c : w) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
  };
  return "on a first deployment (servers that never ran this key), declare the slot unclaimed with `redisgo_task adopt "
         "--config " +
         word(config_path) + (key_flag.empty() ? std::string() : " --key " + word(key_flag)) +
         "`; for maintenance restarts, run Redis >= 7.2 with AOF (appendonly yes, appendfsync everysec), whose "
         "claims survive a restart";
}

Millis witness_ttl(Millis once_per) {
  constexpr Millis kWeek = std::chrono::hours(24 * 7);
  return std::max(kWeek, once_per * 4);
}

}  // namespace redisgo::lock
