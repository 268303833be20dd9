// The servers' clocks against this host's: the offset measured by TIME round trips, and
// how much of it is too much.
#include "commands/check_findings.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "util/duration.h"

namespace redisgo::commands::check {

ClockOffset offset_of(const ClockSample& s) {
  const std::int64_t rtt = s.recv_us - s.send_us;
  ClockOffset o;
  o.offset_us = s.server_us - (s.send_us + rtt / 2);
  o.uncertainty_us = std::abs(rtt) / 2 + (std::abs(rtt) % 2);
  return o;
}

std::optional<ClockOffset> best_offset(const std::vector<ClockSample>& samples) {
  const ClockSample* best = nullptr;
  for (const auto& s : samples) {
    if (!best || std::abs(s.recv_us - s.send_us) < std::abs(best->recv_us - best->send_us)) best = &s;
  }
  if (!best) return std::nullopt;
  return offset_of(*best);
}

std::optional<std::int64_t> parse_time_reply(const std::string& seconds, const std::string& micros) {
  std::int64_t s = 0, us = 0;
  auto [p1, e1] = std::from_chars(seconds.data(), seconds.data() + seconds.size(), s);
  auto [p2, e2] = std::from_chars(micros.data(), micros.data() + micros.size(), us);
  if (e1 != std::errc() || e2 != std::errc() || p1 != seconds.data() + seconds.size() ||
      p2 != micros.data() + micros.size() || s < 0 || us < 0 || us >= 1'000'000 || s > 100'000'000'000LL) {
    return std::nullopt;
  }
  return s * 1'000'000 + us;
}

Millis clock_limit(Millis expire, std::optional<Millis> once_per) {
  const Millis limit = std::min(expire / 10, Millis(1000));
  return once_per ? std::min(limit, *once_per / 4) : limit;
}

std::string format_us(std::int64_t us) {
  char buf[64];
  const double v = static_cast<double>(us);
  if (std::abs(us) < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", v / 1000.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", v / 1e6);
  }
  std::string out = buf;
  if (out.rfind("-0.00 ", 0) == 0 && out.find_first_not_of("-0. ms") == std::string::npos) out.erase(0, 1);  // no "-0.00"
  return out;
}

Finding clock_finding(const std::string& node, const ClockOffset& o, Millis expire, std::optional<Millis> once_per) {
  const Millis limit = clock_limit(expire, once_per);
  const std::string why_limit = limit < clock_limit(expire) ? " (a quarter of once_per: every host must name the same slot)"
                                                            : " (a tenth of expire, at most 1s)";
  const std::int64_t beyond = std::abs(o.offset_us) - o.uncertainty_us;
  const std::string sign = o.offset_us >= 5 ? "+" : "";  // nothing before a figure that rounds to 0.00
  const std::string figures = sign + format_us(o.offset_us) + " (±" + format_us(o.uncertainty_us) + ")";
  Finding f;
  if (beyond > limit.count() * 1000) {
    f = make(Level::kWarn, "clock", node,
             "the server's TIME is " + figures + " from this host's clock, more than " + format_duration(limit) + why_limit,
             "synchronise this host and the Redis servers with NTP (chrony, systemd-timesyncd): the lease itself runs "
             "on monotonic clocks, but fencing tokens take the server's TIME as their floor and once_per slots come "
             "from each host's clock");
  } else {
    f = make(Level::kOk, "clock", node,
             "the server's TIME is " + figures + " from this host's clock (warn above " + format_duration(limit) + ")");
  }
  f.fields.emplace_back("offset_ms", json_number(static_cast<double>(o.offset_us) / 1000.0));
  f.fields.emplace_back("uncertainty_ms", json_number(static_cast<double>(o.uncertainty_us) / 1000.0));
  return f;
}

}  // namespace redisgo::commands::check
