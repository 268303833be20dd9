#include "commands/waiting_line.h"

#include <chrono>
#include <string>

#include "log/logging.h"
#include "util/duration.h"

namespace redisgo::commands {

namespace {

/// The node whose line is the longest (under Redlock the lines agree on their order; a node
/// may miss a waiter that could not reach it).
const lock::LineView* longest(const std::vector<lock::LineView>& lines) {
  const lock::LineView* best = nullptr;
  for (const auto& l : lines) {
    if (l.reachable && (!best || l.length > best->length)) best = &l;
  }
  return best;
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void write_line(lock::LeaseAdmin& backend, const config::Config& config, bool json, std::ostream& out) {
  std::vector<lock::LineView> lines;
  try {
    lines = backend.read_line(kLineShown);
  } catch (const std::exception&) {
    lines.clear();
  }
  const lock::LineView* line = longest(lines);
  const std::int64_t now = now_us();
  auto waited_ms = [&](const lock::LineEntry& e) {
    return e.ticket > 0 && static_cast<std::int64_t>(e.ticket) < now ? (now - static_cast<std::int64_t>(e.ticket)) / 1000 : 0;
  };
  // Nodes whose line could not be read, while another's could: said by name, or a line of
  // another type on one node of three would read as "empty".
  std::vector<const lock::LineView*> unread;
  for (const auto& l : lines) {
    if (!l.reachable && !l.error.empty()) unread.push_back(&l);
  }
  if (json) {
    out << ",\"fair\":" << (config.redis.fair ? "true" : "false");
    if (!unread.empty()) {
      out << ",\"line_errors\":[";
      for (std::size_t i = 0; i < unread.size(); ++i) {
        out << (i ? "," : "") << "{\"node\":" << log::json_quoted(unread[i]->node)
            << ",\"error\":" << log::json_quoted(unread[i]->error) << "}";
      }
      out << "]";
    }
    out << ",\"line\":";
    if (!line) {
      out << "null";
      return;
    }
    out << "{\"length\":" << line->length << ",\"node\":" << log::json_quoted(line->node)
        << ",\"outside\":" << (line->outside >= 0 ? std::to_string(line->outside) : "null") << ",\"waiters\":[";
    for (std::size_t i = 0; i < line->entries.size(); ++i) {
      const auto& e = line->entries[i];
      out << (i ? "," : "") << "{\"position\":" << i + 1 << ",\"holder\":" << log::json_quoted(e.holder)
          << ",\"since_us\":" << e.ticket << ",\"waited_ms\":" << waited_ms(e)
          << ",\"listening\":" << (e.listeners < 0 ? "null" : e.listeners > 0 ? "true" : "false") << "}";
    }
    out << "]}";
    return;
  }
  if (!line) {
    // Why, as the first node said it (a line key of another type, a right the ACL user lacks).
    std::string why = "no node could be read";
    if (!unread.empty()) why += ": " + log::printable(unread.front()->error);
    if (config.redis.fair || !lines.empty()) out << "line:   unknown (" << why << ")\n";
    return;
  }
  for (const auto* l : unread) {
    out << "note:   the waiting line on " << log::printable(l->node) << " could not be read: " << log::printable(l->error)
        << "\n";
  }
  if (line->outside > 0 && (config.redis.fair || line->length > 0)) {
    // Mixed settings on one key (redisgo_task(1), The waiting line). With fair = false and no
    // line, the listeners are this config's own standbys, and nothing is said.
    out << "note:   " << line->outside << " waiter(s) listen outside the waiting line (fair = false, or an older "
        << "version): they get a freed lease only when nobody waits in line\n";
  }
  if (line->length == 0) {
    if (config.redis.fair) out << "line:   empty\n";
    return;
  }
  out << "line:   " << line->length << " waiting" << (config.redis.fair ? "" : " (this config has fair = false)")
      << "\n";
  for (std::size_t i = 0; i < line->entries.size(); ++i) {
    const auto& e = line->entries[i];
    out << "  " << i + 1 << ". " << log::printable(e.holder) << ", waiting "
        << format_duration(std::chrono::milliseconds(waited_ms(e)))
        << (e.listeners == 0 ? " (gone: nobody listens on its wake channel; the next release drops it)" : "") << "\n";
  }
  if (line->length > static_cast<std::int64_t>(line->entries.size())) {
    out << "  ... " << line->length - static_cast<std::int64_t>(line->entries.size()) << " more\n";
  }
}

}  // namespace redisgo::commands
