#pragma once
/// Golden transcripts (tests/golden/README.md): what the daemon and the CLI send to Redis (as
/// MONITOR shows it, script calls included), what they log and how they exit, normalised so
/// that nothing timing-dependent is left in the text, compared with a file under
/// tests/golden/ (or written there with REDISGO_UPDATE_GOLDEN=1).
///
/// What varies and how it is named: holder ids "<prefix>:<pid>:<random>" become "<prefix>"
/// (with "#2", "#3" for a later id of the same prefix, in order of first appearance);
/// 16-digit numbers (tokens and other µs times) become t1, t2, ... by rank, so their order is
/// kept; 13-digit numbers (epoch ms) become <epoch-ms>; the servers' addresses become
/// node1..N; script bodies and SHA1s become the script's name (from lock/scripts.h); log
/// durations that are not one of the config's become <dur>. A connection is named by the
/// holder it acts for (a script's first argument, a wake channel), if any, and the first
/// operation it sent; connections are listed in the
/// order of their text, never of time. Repeatable entries (a renewal, a wait) fold into one
/// "(×≥1)" entry.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_server.h"

namespace redisgo::testing {

/// A MONITOR connection to one server, read by a thread. Attach before the scenario starts;
/// detach() before a restart of the server and attach() after it.
class MonitorTap {
 public:
  explicit MonitorTap(RedisServer& server);
  ~MonitorTap();
  MonitorTap(const MonitorTap&) = delete;
  MonitorTap& operator=(const MonitorTap&) = delete;

  void attach();  ///< connects and sends MONITOR; returns once the server said OK (bounded)
  void detach();  ///< closes the connection; the lines read so far stay
  /// Every line so far: an ECHO of a marker goes through the server's unix socket, and the lines
  /// up to it are returned (bounded). Commands from unix-socket clients (the test's own) are
  /// left out. A "-- restarted --" line marks each attach() after the first.
  std::vector<std::string> lines();

 private:
  void read_loop(int fd);
  RedisServer& server_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::thread reader_;
  std::atomic<bool> stop_{false};
  int fd_ = -1;
  int attaches_ = 0;
  int markers_ = 0;
};

/// One MONITOR line's client ("127.0.0.1:port", "lua", "unix:...") and arguments, unescaped;
/// false when it is not a command line.
bool parse_monitor_line(const std::string& line, std::string& client, std::vector<std::string>& args);

/// The test's own command to `server`, over its unix socket (so that MONITOR taps leave it
/// out); returns the trimmed reply as redis-cli prints it.
std::string local_cli(const RedisServer& server, const std::vector<std::string>& args);

/// The normaliser shared by one scenario's monitor and log sections (one naming of holders,
/// tokens and nodes for all of them).
class Normaliser {
 public:
  /// `servers`: node1..N in this order. `kept_durations`: the config's values, as a log writes
  /// them ("3s", "1s", "500ms"): kept; any other duration in a log line becomes <dur>.
  Normaliser(std::vector<const RedisServer*> servers, std::set<std::string> kept_durations);

  /// Names one more address (a node that is not a RedisServer).
  void node(const std::string& address, const std::string& name) { nodes_.emplace_back(address, name); }

  /// One value (a command's argument or a log line): holder ids, tokens, epoch ms, node
  /// addresses replaced. Tokens are named only by render(): until then a placeholder.
  std::string value(const std::string& s);
  /// A log line: its timestamp cut, then value(), pids and durations blanked.
  std::string log_line(const std::string& line);
  /// Adds a rule applied to every value (commands' arguments and log lines) after the
  /// built-in ones (regex, replacement).
  void rule(const std::string& pattern, const std::string& replacement);
  /// Adds a rule applied to log lines after the built-in ones.
  void log_rule(const std::string& pattern, const std::string& replacement);
  /// 16-digit values become <µs> instead of t1, t2 (Redlock: each node issues its own token
  /// from its own clock, so which one is highest is timing).
  void blank_tokens() { blank_tokens_ = true; }
  /// Operations matching `pattern` are left out of monitor()'s sections; each one left out is
  /// counted in dropped() (the test checks them its own way).
  void drop_op(const std::string& pattern) { drop_ops_.emplace_back(pattern); }
  int dropped() const { return dropped_; }
  /// Adds a pattern of log lines (after normalising) that may repeat: runs fold to one "(×≥1)".
  void repeatable_log(const std::string& pattern);
  /// Adds a pattern of log lines whose order among themselves is timing (one per node, from
  /// concurrent replies): each run of consecutive matching lines is sorted.
  void unordered_log(const std::string& pattern) { unordered_logs_.emplace_back(pattern); }
  /// Adds a pattern of rendered operations ("EVALSHA renew ...") that may repeat.
  void repeatable_op(const std::string& pattern);

  /// The MONITOR lines of one server as sections of connections; one string per line of text.
  std::vector<std::string> monitor(const std::vector<std::string>& lines);
  /// The normalised log text (stderr of a process), repeatable runs folded.
  std::vector<std::string> log(const std::string& text);

  /// Replaces the token placeholders in `text` with t1, t2, ... by rank of their values.
  std::string render(const std::string& text) const;

  /// Names a script (its source and SHA1): EVAL and EVALSHA of it render as `name`. Any
  /// other script is "script?N", N in order of first appearance.
  void script(const std::string& name, const std::string& source, const std::string& sha);
  std::string script_name(const std::string& source_or_sha, bool is_sha);

 private:
  std::vector<std::string> fold(const std::vector<std::string>& entries, const std::vector<std::regex>& repeatable);
  std::vector<std::pair<std::string, std::string>> nodes_;  ///< address, name
  std::set<std::string> kept_durations_;
  std::map<std::string, std::string> holders_;              ///< id -> label
  std::map<std::string, int> prefixes_;                     ///< prefix -> ids seen
  std::set<std::string> tokens_;                            ///< 16-digit values seen
  std::map<std::string, std::string> scripts_;  ///< source or SHA1 -> name
  std::map<std::string, std::string> unknown_scripts_;
  std::vector<std::pair<std::regex, std::string>> rules_, log_rules_;
  std::vector<std::regex> drop_ops_;
  int dropped_ = 0;
  bool blank_tokens_ = false;
  std::vector<std::regex> repeatable_logs_, repeatable_ops_, unordered_logs_;
};

/// One scenario's transcript: sections of lines, compared with tests/golden/<name>.txt at
/// finish() (or written there when REDISGO_UPDATE_GOLDEN=1). A mismatch fails the test with
/// a line diff (expected "-", actual "+").
class Transcript {
 public:
  Transcript(std::string name, Normaliser& norm) : name_(std::move(name)), norm_(norm) {}
  void section(const std::string& title, const std::vector<std::string>& lines);
  void line(const std::string& text) { body_.push_back(text); }
  void finish();

 private:
  std::string name_;
  Normaliser& norm_;
  std::vector<std::string> body_;
};

/// The line diff of `expected` and `actual` (LCS): " " kept, "-" only expected, "+" only actual.
std::string line_diff(const std::vector<std::string>& expected, const std::vector<std::string>& actual);

}  // namespace redisgo::testing
