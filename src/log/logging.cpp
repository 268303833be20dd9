#include "log/logging.h"

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>
#include <mutex>
#include <vector>

#include "util/text.h"

namespace redisgo::log {

namespace {

spdlog::level::level_enum to_spdlog(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::kTrace: return spdlog::level::trace;
    case config::LogLevel::kDebug: return spdlog::level::debug;
    case config::LogLevel::kInfo: return spdlog::level::info;
    case config::LogLevel::kWarn: return spdlog::level::warn;
    case config::LogLevel::kError: return spdlog::level::err;
  }
  return spdlog::level::info;
}

// The names of the config file ("warn", not spdlog's "warning"), so a line's level can be
// matched against the configured one.
std::string_view level_name(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "critical";
    case spdlog::level::off:
    case spdlog::level::n_levels: break;
  }
  return "off";
}

template <class Out>
void append(Out& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

constexpr char kHex[] = "0123456789abcdef";

// "2026-11-22T10:00:00.123Z": UTC, so lines from hosts in different zones sort together.
template <class Out>
void append_timestamp(Out& out, spdlog::log_clock::time_point tp) {
  auto since = tp.time_since_epoch();
  auto secs = std::chrono::floor<std::chrono::seconds>(since);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - secs).count();
  std::time_t t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  fmt::format_to(std::back_inserter(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

template <class Out>
void escape_json(std::string_view s, Out& out) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': append(out, "\\\""); ++i; continue;
      case '\\': append(out, "\\\\"); ++i; continue;
      case '\n': append(out, "\\n"); ++i; continue;
      case '\r': append(out, "\\r"); ++i; continue;
      case '\t': append(out, "\\t"); ++i; continue;
      default: break;
    }
    if (c < 0x20) {
      char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out.append(esc, esc + sizeof(esc));
      ++i;
      continue;
    }
    std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      // A JSON line must be valid UTF-8 or parsers drop it whole; a stray byte (e.g.
      // from a child's garbled output) becomes the replacement character instead.
      append(out, "\\ufffd");
      ++i;
      continue;
    }
    out.append(s.data() + i, s.data() + i + n);
    i += n;
  }
}

// Text lines are read by people and by journald, which splits records at newlines: a
// newline in a message (e.g. in an error text from Redis) must not forge a new record, and a
// terminal must get no raw byte it could take for a control (util/text.h).
template <class Out>
void escape_text(std::string_view s, Out& out) {
  append_escaped_text(s, out);
}

std::string_view view(spdlog::string_view_t s) { return {s.data(), s.size()}; }

/// What every JSON line says about this process (set_context()).
struct Context {
  std::mutex mu;
  std::string key, holder;
};
Context& context() {
  static Context* c = new Context();  // never destroyed: threads may log during exit
  return *c;
}

class TextFormatter final : public spdlog::formatter {
 public:
  explicit TextFormatter(bool journal) : journal_(journal) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    if (journal_) {
      // journald reads "<N>" as the priority and stamps the time itself.
      fmt::format_to(std::back_inserter(dest), "<{}>", syslog_priority(msg.level));
    } else {
      append_timestamp(dest, msg.time);
      dest.push_back(' ');
    }
    fmt::format_to(std::back_inserter(dest), "{:<5} [", level_name(msg.level));
    escape_text(view(msg.logger_name), dest);
    append(dest, "] ");
    escape_text(view(msg.payload), dest);
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<TextFormatter>(journal_); }

 private:
  bool journal_;
};

bool all_digits(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    append(dest, "{\"ts\":\"");
    append_timestamp(dest, msg.time);
    append(dest, "\",\"level\":\"");
    append(dest, level_name(msg.level));
    append(dest, "\",\"logger\":\"");
    escape_json(view(msg.logger_name), dest);
    append(dest, "\",\"msg\":\"");
    const std::string_view text = view(msg.payload);
    escape_json(text, dest);
    append(dest, "\"");
    {
      auto& c = context();
      std::lock_guard lock(c.mu);
      if (!c.key.empty()) field(dest, "key", c.key, false);
      if (!c.holder.empty()) field(dest, "holder", c.holder, false);
    }
    const std::string_view event = event_of(text);
    if (!event.empty()) field(dest, "event", event, false);
    for (const auto& [name, value] : fields_of(text)) field(dest, name, value, name != "node");  // fields_of keeps only digits for the others
    append(dest, "}\n");
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }

 private:
  static void field(spdlog::memory_buf_t& dest, std::string_view name, std::string_view value, bool number) {
    append(dest, ",\"");
    append(dest, name);
    append(dest, number ? "\":" : "\":\"");
    escape_json(value, dest);
    if (!number) dest.push_back('"');
  }
};

// Process-wide logging state. Every logger we create has exactly one sink, `root`, which
// forwards to the current real sink: re-routing swaps root's children under root's own
// lock instead of editing each logger's sink vector, which spdlog does not guard.
struct State {
  std::mutex mu;  // guards the fields below (root has its own lock for its children)
  std::shared_ptr<spdlog::sinks::dist_sink_mt> root = std::make_shared<spdlog::sinks::dist_sink_mt>();
  spdlog::level::level_enum level = spdlog::level::info;
  config::LogFormat format = config::LogFormat::kText;
  bool journal = false;  // stderr is journald's stream
  std::vector<std::shared_ptr<spdlog::logger>> loggers;

  State() {
    route(std::make_shared<spdlog::sinks::stderr_sink_mt>());
    auto main = create(kDefaultLoggerName);
    spdlog::set_default_logger(main);
  }

  // Callers hold mu (or are the constructor).
  void route(spdlog::sink_ptr sink) {
    sink->set_level(spdlog::level::trace);  // loggers filter; the sink takes all they pass
    sink->set_formatter(format == config::LogFormat::kText && journal ? std::make_unique<TextFormatter>(true)
                                                                      : make_formatter(format));
    root->set_sinks({std::move(sink)});
  }

  void apply_level() {
    for (auto& logger : loggers) logger->set_level(level);
  }

  std::shared_ptr<spdlog::logger> create(const std::string& name) {
    auto logger = std::make_shared<spdlog::logger>(name, root);
    logger->set_level(level);
    // Warnings and errors reach the journal before a crash can swallow them.
    logger->flush_on(spdlog::level::warn);
    loggers.push_back(logger);
    return logger;
  }
};

State& state() {
  // Never destroyed: threads and static destructors may still log during exit.
  static State* s = new State();
  return *s;
}

}  // namespace

std::unique_ptr<spdlog::formatter> make_formatter(config::LogFormat format) {
  if (format == config::LogFormat::kJson) return std::make_unique<JsonFormatter>();
  return std::make_unique<TextFormatter>(false);
}

bool is_journal_stream(int fd, const char* journal_stream) {
  if (journal_stream == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  char tail = 0;
  if (std::sscanf(journal_stream, "%llu:%llu%c", &dev, &ino, &tail) != 2) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

int syslog_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical: return 2;
    case spdlog::level::err: return 3;
    case spdlog::level::warn: return 4;
    case spdlog::level::info: return 6;
    default: return 7;
  }
}

std::string_view event_of(std::string_view message) {
  // The heads of the daemon's lifecycle messages (src/daemon: runner.cpp, notices*.cpp,
  // leader_driver.cpp); a test pins each against the real message.
  static constexpr std::pair<std::string_view, std::string_view> kEvents[] = {
      {"contending for ", "contending"},
      {"acquired ", "acquired"},
      {"released ", "released"},
      {"release deleted nothing", "release_missed"},
      {"child started ", "child_started"},
      {"child exited ", "child_exited"},
      {"cannot start the child", "child_start_failed"},
      {"stopping child ", "child_stopping"},
      {"restarting child ", "child_restarting"},
      {"forwarding ", "signal_forwarded"},
      {"received ", "signal_received"},
      {"lease lost", "lease_lost"},
      {"lease not acquired", "gave_up"},
      {"stepped down", "stepped_down"},
      {"contending again", "contending_again"},
  };
  for (const auto& [head, event] : kEvents) {
    if (message.substr(0, head.size()) == head) return event;
  }
  return {};
}

std::vector<std::pair<std::string_view, std::string_view>> fields_of(std::string_view message) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  auto add = [&](std::string_view name, std::string_view value) {
    for (const auto& f : out) {
      if (f.first == name) return;
    }
    if (!value.empty()) out.emplace_back(name, value);
  };
  auto word_end = [&](std::size_t from) {
    std::size_t end = message.find_first_of(" \t", from);
    if (end == std::string_view::npos) end = message.size();
    while (end > from && (message[end - 1] == ',' || message[end - 1] == ';' || message[end - 1] == ')')) --end;
    return end;
  };
  for (std::size_t i = 0; i < message.size();) {
    const bool at_word = i == 0 || message[i - 1] == ' ' || message[i - 1] == '(';
    bool matched = false;
    if (at_word) {
      for (std::string_view name : {"token", "pid", "status", "node"}) {
        if (message.substr(i, name.size()) == name && message.substr(i + name.size(), 1) == "=") {
          const std::size_t from = i + name.size() + 1;
          const std::size_t end = word_end(from);
          std::string_view value = message.substr(from, end - from);
          if (name == "node" || all_digits(value)) add(name, value);
          i = end;
          matched = true;
          break;
        }
      }
      // "redis 10.0.0.1:6379: connect ...": the connection names its node so.
      if (!matched && message.substr(i, 6) == "redis ") {
        const std::size_t from = i + 6;
        const std::size_t colon = message.find(": ", from);
        const std::size_t space = message.find(' ', from);
        if (colon != std::string_view::npos && (space == std::string_view::npos || colon < space) && colon > from) {
          add("node", message.substr(from, colon - from));
          i = colon;
          matched = true;
        }
      }
    }
    if (!matched) ++i;
  }
  return out;
}

void set_context(const std::string& key, const std::string& holder) {
  auto& c = context();
  std::lock_guard lock(c.mu);
  c.key = key;
  c.holder = holder;
}

void append_json_escaped(std::string_view text, std::string& out) { escape_json(text, out); }

std::string printable(std::string_view text) { return escaped_text(text); }

std::string json_quoted(std::string_view text) {
  std::string out = "\"";
  escape_json(text, out);
  return out + "\"";
}

void setup(config::LogLevel level, config::LogFormat format) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  s.level = to_spdlog(level);
  s.format = format;
  s.journal = is_journal_stream(STDERR_FILENO, std::getenv("JOURNAL_STREAM"));
  s.route(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  s.apply_level();
}

std::shared_ptr<spdlog::logger> get(const std::string& name) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  // Someone may have registered this name directly with spdlog; hand that one out
  // rather than fail registration.
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = s.create(name);
  spdlog::register_logger(logger);
  return logger;
}

void set_sink_for_tests(spdlog::sink_ptr sink, config::LogLevel level) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  s.level = to_spdlog(level);
  s.route(std::move(sink));
  s.apply_level();
}

}  // namespace redisgo::log
