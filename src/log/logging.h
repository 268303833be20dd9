#pragma once
/// spdlog to stderr (journald picks it up under systemd), text or JSON lines.
///
/// Every logger made by get() writes through one process-wide forwarding sink, so
/// setup() and set_sink_for_tests() re-route and re-format all of them at once, also
/// loggers created before the call, and may run while other threads log.

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "log/fmt_engine.h"
#include "config/config.h"

namespace redisgo::log {

/// Installs the default logger: stderr, the given level and format. Safe to call again
/// (replaces it). Text lines: "2026-11-22T10:00:00.123Z info  [daemon] message" (UTC;
/// control characters in the message are escaped as \n, \t, \xNN so one line stays
/// one record). JSON lines: {"ts":"...","level":"info","logger":"daemon","msg":"..."}
/// with JSON escaping (invalid UTF-8 becomes U+FFFD). Lines at warn and above are
/// flushed at once. Before the first call, loggers write text at info to stderr.
///
/// Under journald (JOURNAL_STREAM names stderr's device and inode) a text line starts
/// with its syslog priority ("<4>" for warn) and leaves the time to the journal, so
/// `journalctl -p warning` filters by level. JSON lines also carry, as their own fields,
/// the process's context (key, holder: set_context()) and what the message names:
/// token, pid, status (numbers), node, and the event its head stands for (event_of()).
void setup(config::LogLevel level, config::LogFormat format);

/// The lock key and holder id this process works for, added to every JSON line.
void set_context(const std::string& key, const std::string& holder);

/// Under journald, every line the command line writes to std::cerr itself (usage errors, a
/// config that cannot run: before any logger exists, or outside it) starts with its syslog
/// priority too, "<4>" for a line that says ": warning:" and "<3>" for any other, so that
/// `journalctl -p err` shows why a unit failed to start. Elsewhere it does nothing.
void prefix_stderr_for_journal();

/// True when JOURNAL_STREAM ("<dev>:<ino>") names the file open on `fd`.
bool is_journal_stream(int fd, const char* journal_stream);

/// syslog priority of a level: error 3, warn 4, info 6, debug/trace 7.
int syslog_priority(spdlog::level::level_enum level);

/// The event a message stands for, from its head ("acquired key=..." -> "acquired",
/// "child exited status=1" -> "child_exited"); "" when it is none of the known ones.
std::string_view event_of(std::string_view message);

/// The fields a JSON line carries from a message: token=, pid=, status= (digits), node=
/// or "redis <node>: " (the connection's prefix of an error). In message order; the
/// first of each name wins.
std::vector<std::pair<std::string_view, std::string_view>> fields_of(std::string_view message);

/// A named logger sharing the default sinks ("daemon", "lock", "child", ...): the
/// existing one of that name, or a new one. Thread-safe.
std::shared_ptr<spdlog::logger> get(const std::string& name);

/// For tests: routes every logger to `sink` (e.g. an ostream or ringbuffer sink) at
/// `level`, formatted in the format of the last setup() (text if none). The sink's own
/// formatter is replaced. Undo with setup().
void set_sink_for_tests(spdlog::sink_ptr sink, config::LogLevel level = config::LogLevel::kTrace);

/// Name of the default logger (the one spdlog::info() etc. write to).
inline constexpr const char* kDefaultLoggerName = "main";

/// The formatters behind the two formats, for sinks set up by hand.
std::unique_ptr<spdlog::formatter> make_formatter(config::LogFormat format);

/// Appends `text` to `out` as the inside of a JSON string (no quotes): ", \, control
/// characters escaped; valid UTF-8 kept as is; invalid bytes replaced by U+FFFD.
void append_json_escaped(std::string_view text, std::string& out);
/// `text` safe for a terminal line: control characters escaped (\n, \r, \xNN; C1
/// controls \u00NN) so that a holder id or a server's text cannot forge lines or send
/// escape sequences; a byte that is not valid UTF-8 is \xNN (where JSON has U+FFFD).
std::string printable(std::string_view text);
/// `text` as a JSON string literal, quotes included.
std::string json_quoted(std::string_view text);

}  // namespace redisgo::log
