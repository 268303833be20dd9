#include "lock/lease.h"

#include <algorithm>
#include <atomic>
#include <string_view>
#include <vector>

#include "lock/fencing.h"
#include "lock/redlock.h"
#include "util/duration.h"

namespace redisgo::lock {

LeaseKeys LeaseKeys::derive(const std::string& key) {
  // Redis Cluster hashes only the tag when the key has one: the text between the first
  // '{' and the first '}' after it, if that text is non-empty. Then suffixes keep the
  // slot; otherwise the whole key becomes the tag of the derived names.
  bool has_tag = false;
  if (auto open = key.find('{'); open != std::string::npos) {
    auto close = key.find('}', open + 1);
    has_tag = close != std::string::npos && close > open + 1;
  }
  const std::string base = has_tag ? key : "{" + key + "}";
  return LeaseKeys{key, base + ":fence", base + ":released", base + ":control", base, base + ":line"};
}

std::string LeaseKeys::wake(const std::string& holder) const { return base + ":wake:" + holder; }

namespace {
constexpr std::string_view kTurnPrefix = "\x01turn:";
}

std::optional<std::string> turn_of(const std::string& value) {
  if (value.size() <= kTurnPrefix.size() || value.compare(0, kTurnPrefix.size(), kTurnPrefix) != 0) return std::nullopt;
  return value.substr(kTurnPrefix.size());
}

namespace {
constexpr std::string_view kPausePrefix = "\x01pause:";
}  // namespace

std::optional<PauseRecord> pause_of(const std::string& value) {
  if (value.compare(0, kPausePrefix.size(), kPausePrefix) != 0) return std::nullopt;
  const std::string_view rest = std::string_view(value).substr(kPausePrefix.size());
  const auto a = rest.find(':');
  const auto b = a == std::string_view::npos ? a : rest.find(':', a + 1);
  PauseRecord p;
  if (b == std::string_view::npos) return p;
  p.until_ms = parse_count(rest.substr(0, a));
  p.by = std::string(rest.substr(a + 1, b - a - 1));
  p.reason = std::string(rest.substr(b + 1));
  return p;
}

std::string describe_pause(const PauseRecord& p) {
  std::string s = "paused by " + (p.by.empty() ? std::string("(unknown: not written by `pause`)") : p.by);
  if (p.until_ms > 0) s += " until " + utc_text(p.until_ms / 1000);
  if (!p.reason.empty()) s += ": " + p.reason;
  return s;
}

std::string refusal_note_head(const std::string& holder, std::int64_t since_ms, const std::string& user) {
  return holder + "\n" + std::to_string(since_ms) + "\n" + user;
}

std::optional<RefusalNote> parse_refusal_note(const std::string& value) {
  std::vector<std::string> fields;
  std::size_t at = 0;
  for (int i = 0; i < 4; ++i) {
    const auto eol = value.find('\n', at);
    if (eol == std::string::npos) return std::nullopt;
    fields.push_back(value.substr(at, eol - at));
    at = eol + 1;
  }
  RefusalNote n;
  n.holder = fields[0];
  n.since_ms = parse_count(fields[1]);
  n.user = fields[2];
  n.right = fields[3];
  n.error = value.substr(at);
  if (n.holder.empty() || n.right.empty()) return std::nullopt;
  return n;
}

std::string describe_refusal(const RefusalNote& n) {
  const std::string host = holder_prefix(n.holder);
  return "renewals refused" + (n.since_ms > 0 ? " since " + utc_text(n.since_ms / 1000) : std::string()) +
         ": the ACL user '" + n.user + "' of " + host + " lacks " + n.right +
         "; its daemon does not take the lease until it is granted";
}

std::string make_lease_id(const std::string& holder, std::atomic<std::uint64_t>* attempts) {
  static std::atomic<std::uint64_t> process{0};
  auto& count = attempts ? *attempts : process;
  return holder + "#" + std::to_string(count.fetch_add(1, std::memory_order_relaxed) + 1);
}

std::string holder_of(const std::string& lease_id) {
  // A turn or a pause ("\1turn:...", "\1pause:...") is no lease id: a pause's reason may well
  // end in "#<digits>" ("maint #42").
  if (!lease_id.empty() && lease_id.front() == '\x01') return lease_id;
  const auto hash = lease_id.rfind('#');
  if (hash == std::string::npos || hash + 1 == lease_id.size()) return lease_id;
  for (std::size_t i = hash + 1; i < lease_id.size(); ++i) {
    if (lease_id[i] < '0' || lease_id[i] > '9') return lease_id;
  }
  return lease_id.substr(0, hash);
}

std::string describe_holder(const std::string& value) {
  if (auto h = turn_of(value)) return *h + " (its turn: woken from the waiting line)";
  if (auto p = pause_of(value)) return "nobody: " + describe_pause(*p);
  return value;
}

std::string holder_prefix(const std::string& holder) {
  auto last = holder.rfind(':');
  if (last == std::string::npos || last == 0) return holder;
  auto pid = holder.rfind(':', last - 1);
  return pid == std::string::npos ? holder : holder.substr(0, pid);
}

std::optional<std::string> LeaseKeys::key_of_base(const std::string& base) {
  if (base.size() > 2 && base.front() == '{' && base.back() == '}' && derive(base.substr(1, base.size() - 2)).base == base) {
    return base.substr(1, base.size() - 2);
  }
  if (!base.empty() && derive(base).base == base) return base;
  return std::nullopt;
}

std::string LeaseKeys::slot(int i) const { return i == 0 ? key : base + ":slot:" + std::to_string(i); }

std::vector<std::string> LeaseKeys::slots_from(int first) const {
  std::vector<std::string> out;
  for (int i = std::max(first, 0); i < kMaxSlots; ++i) out.push_back(slot(i));
  return out;
}

std::string LeaseKeys::claim(std::int64_t slot_start_s) const { return base + ":once:" + std::to_string(slot_start_s); }

std::int64_t nearest_slot(std::int64_t now_ms, Millis period) {
  const std::int64_t p = period.count();
  // Floor division (a clock before 1970 is no reason to crash), then the nearer end.
  std::int64_t q = now_ms / p;
  if (now_ms % p < 0) --q;
  const std::int64_t into = now_ms - q * p;
  if (2 * into >= p) ++q;
  return q * p / 1000;
}

Millis fence_ttl(Millis lease_ttl) {
  constexpr Millis kWeek = std::chrono::hours(24 * 7);
  return std::max(kWeek, lease_ttl * 100);
}

bool is_daemon_holder(const std::string& holder) {
  constexpr std::size_t kHex = 32;
  const auto last = holder.rfind(':');
  if (last == std::string::npos || last == 0 || holder.size() - last - 1 != kHex) return false;
  const auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (!std::all_of(holder.begin() + static_cast<std::ptrdiff_t>(last) + 1, holder.end(), is_hex)) return false;
  const auto pid = holder.rfind(':', last - 1);
  if (pid == std::string::npos || pid + 1 == last) return false;
  return std::all_of(holder.begin() + static_cast<std::ptrdiff_t>(pid) + 1,
                     holder.begin() + static_cast<std::ptrdiff_t>(last), [](char c) { return c >= '0' && c <= '9'; });
}

Millis restart_guard_left(std::int64_t uptime_s, Millis guard) {
  if (guard <= Millis(0)) return Millis(0);
  const Millis left = guard - Millis((uptime_s - 1) * 1000);
  return std::max(Millis(0), left);
}

std::unique_ptr<RedisLease> make_redis_backend(const LeaseOptions& options, const Clock& clock) {
  return std::make_unique<RedlockBackend>(options, clock);
}

}  // namespace redisgo::lock
