#include "support/golden.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/task_process.h"

namespace redisgo::testing {
namespace {

using namespace std::chrono_literals;

/// One MONITOR line: `<time> [<db> <client>] "arg" ...`, its arguments unescaped.
struct MonitorLine {
  std::string client;
  std::vector<std::string> args;
};

bool parse_monitor(const std::string& line, MonitorLine& out) {
  const auto open = line.find(" [");
  const auto close = line.find("] ", open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return false;
  const std::string inside = line.substr(open + 2, close - open - 2);
  const auto space = inside.find(' ');
  out.client = space == std::string::npos ? inside : inside.substr(space + 1);
  out.args.clear();
  for (std::size_t i = close + 2; i < line.size();) {
    if (line[i] != '"') {
      ++i;
      continue;
    }
    std::string arg;
    for (++i; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] != '\\' || i + 1 >= line.size()) {
        arg += line[i];
        continue;
      }
      const char c = line[++i];
      switch (c) {
        case 'n': arg += '\n'; break;
        case 'r': arg += '\r'; break;
        case 't': arg += '\t'; break;
        case 'a': arg += '\a'; break;
        case 'b': arg += '\b'; break;
        case 'x':
          if (i + 2 < line.size()) {
            arg += static_cast<char>(std::stoi(line.substr(i + 1, 2), nullptr, 16));
            i += 2;
          }
          break;
        default: arg += c;
      }
    }
    ++i;  // the closing quote
    out.args.push_back(std::move(arg));
  }
  return !out.args.empty();
}

/// A value as the transcript shows it: bare when it is a plain word, else quoted with escapes.
std::string repr(const std::string& s) {
  bool plain = !s.empty();
  std::string q = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += static_cast<char>(c);
      plain = false;
    } else if (c == 0x01 || c == 0x02) {
      q += static_cast<char>(c);  // a token's placeholder (Normaliser::render names it)
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      q += buf;
      plain = false;
    } else {
      if (c == ' ') plain = false;
      q += static_cast<char>(c);
    }
  }
  return plain ? s : q + "\"";
}

/// Arguments joined by spaces, a run of three or more that differ only in a trailing number
/// counting up by one ("{k}:slot:1" ... "{k}:slot:63") written as "{k}:slot:1..63".
std::string join_runs(const std::vector<std::string>& args) {
  static const std::regex numbered("^(.*[^0-9])([0-9]+)$");
  std::string out;
  for (std::size_t i = 0; i < args.size();) {
    std::smatch m;
    std::size_t j = i + 1;
    if (std::regex_match(args[i], m, numbered)) {
      const std::string prefix = m.str(1);
      long long n = std::stoll(m.str(2));
      for (; j < args.size(); ++j, ++n) {
        std::smatch next;
        if (!std::regex_match(args[j], next, numbered) || next.str(1) != prefix || std::stoll(next.str(2)) != n + 1) break;
      }
      if (j - i < 3) j = i + 1;
    }
    if (!out.empty()) out += " ";
    out += j - i >= 3 ? args[i] + ".." + args[j - 1].substr(args[j - 1].find_last_not_of("0123456789") + 1) : args[i];
    i = j;
  }
  return out;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Token placeholders until render() knows every value: \x01T<digits>\x02.
const std::regex kTokenMark("\x01T(\\d{16})\x02");

}  // namespace

bool parse_monitor_line(const std::string& line, std::string& client, std::vector<std::string>& args) {
  MonitorLine m;
  if (!parse_monitor(line, m)) return false;
  client = std::move(m.client);
  args = std::move(m.args);
  return true;
}

// ---- MonitorTap -------------------------------------------------------------------------

MonitorTap::MonitorTap(RedisServer& server) : server_(server) { attach(); }

MonitorTap::~MonitorTap() { detach(); }

void MonitorTap::attach() {
  detach();
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd >= 0) ::close(fd);
    ADD_FAILURE() << "MONITOR tap: cannot connect to " << server_.address();
    return;
  }
  const std::string cmd = "MONITOR\r\n";
  if (::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(cmd.size())) {
    ::close(fd);
    ADD_FAILURE() << "MONITOR tap: cannot send to " << server_.address();
    return;
  }
  // The server's "+OK" comes before any monitored line: once it is read, nothing is missed.
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (got.find("\r\n") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char c;
    if (::recv(fd, &c, 1, 0) != 1) break;
    got += c;
  }
  if (got != "+OK\r\n") {
    ::close(fd);
    ADD_FAILURE() << "MONITOR tap: no OK from " << server_.address() << ": " << got;
    return;
  }
  if (attaches_++ > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back("-- restarted --");
  }
  fd_ = fd;
  stop_ = false;
  reader_ = std::thread([this, fd] { read_loop(fd); });
}

void MonitorTap::detach() {
  if (fd_ < 0) return;
  stop_ = true;
  reader_.join();
  ::close(fd_);
  fd_ = -1;
}

void MonitorTap::read_loop(int fd) {
  std::string buf;
  std::array<char, 65536> chunk;
  while (!stop_) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(fd, chunk.data(), chunk.size(), 0);
    if (n <= 0) return;  // the server went away (a restart): attach() again after it
    buf.append(chunk.data(), static_cast<std::size_t>(n));
    std::size_t at;
    while ((at = buf.find("\r\n")) != std::string::npos) {
      std::string line = buf.substr(0, at);
      buf.erase(0, at + 2);
      if (!line.empty() && line[0] == '+') line.erase(0, 1);
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(std::move(line));
    }
  }
}

std::vector<std::string> MonitorTap::lines() {
  const std::string marker = "golden-marker-" + std::to_string(++markers_);
  local_cli(server_, {"ECHO", marker});
  const std::string quoted = "\"" + marker + "\"";
  const bool seen = wait_until(
      [&] {
        std::lock_guard<std::mutex> lock(mu_);
        return std::any_of(lines_.begin(), lines_.end(),
                           [&](const std::string& l) { return l.find(quoted) != std::string::npos; });
      },
      10s, 5ms);
  EXPECT_TRUE(seen) << "MONITOR tap of " << server_.address() << " never saw its marker";
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& l : lines_) {
    MonitorLine m;
    if (l == "-- restarted --" || (parse_monitor(l, m) && m.client.rfind("unix:", 0) != 0)) out.push_back(l);
  }
  return out;
}

std::string local_cli(const RedisServer& server, const std::vector<std::string>& args) {
  return run_redis_cli("timeout 5 redis-cli -s '" + server.unix_socket() + "'", args);
}

// ---- Normaliser -------------------------------------------------------------------------

Normaliser::Normaliser(std::vector<const RedisServer*> servers, std::set<std::string> kept_durations)
    : kept_durations_(std::move(kept_durations)) {
  for (std::size_t i = 0; i < servers.size(); ++i) {
    nodes_.emplace_back(servers[i]->address(), "node" + std::to_string(i + 1));
  }
}

void Normaliser::script(const std::string& name, const std::string& source, const std::string& sha) {
  scripts_[source] = name;
  scripts_[sha] = name;
}

std::string Normaliser::script_name(const std::string& source_or_sha, bool is_sha) {
  if (auto it = scripts_.find(source_or_sha); it != scripts_.end()) return it->second;
  // An unknown script's source and SHA are told apart: the first EVAL of it names it.
  const std::string key = (is_sha ? "sha:" : "src:") + source_or_sha;
  auto [it, added] = unknown_scripts_.emplace(key, "");
  if (added) it->second = "script?" + std::to_string(unknown_scripts_.size());
  return it->second;
}

std::string Normaliser::value(const std::string& s) {
  std::string out = s;
  for (const auto& [address, name] : nodes_) {
    for (std::size_t at; (at = out.find(address)) != std::string::npos;) out.replace(at, address.size(), name);
  }
  // Holder ids: <prefix>:<pid>:<32 hex> (before the user@host rule below sees one), and lease
  // ids, a holder id and "#<attempt>" (lock/lua/lib/lease_id.lua), as "<holder>#n": how many
  // attempts came before is a matter of timing.
  static const std::regex holder("([A-Za-z0-9_.-]+):([0-9]+):([0-9a-f]{32})(#[0-9]+)?");
  std::string result;
  auto begin = std::sregex_iterator(out.begin(), out.end(), holder);
  std::size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    result += out.substr(last, static_cast<std::size_t>(m.position()) - last);
    const std::string id = m.str(1) + ":" + m.str(2) + ":" + m.str(3);
    auto found = holders_.find(id);
    if (found == holders_.end()) {
      const int n = ++prefixes_[m.str(1)];
      found = holders_.emplace(id, n == 1 ? m.str(1) : m.str(1) + "#" + std::to_string(n)).first;
    }
    result += found->second + (m[4].matched ? "#n" : "");
    last = static_cast<std::size_t>(m.position() + m.length());
  }
  result += out.substr(last);
  // 16 digits: a token or another µs time (kept by rank); 13: epoch milliseconds.
  static const std::regex us("(^|[^0-9])([0-9]{16})(?![0-9])");
  std::string marked;
  last = 0;
  for (auto it = std::sregex_iterator(result.begin(), result.end(), us); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    marked += result.substr(last, static_cast<std::size_t>(m.position(2)) - last);
    if (blank_tokens_) {
      marked += "<µs>";
    } else {
      tokens_.insert(m.str(2));
      marked += "\x01T" + m.str(2) + "\x02";
    }
    last = static_cast<std::size_t>(m.position(2) + m.length(2));
  }
  marked += result.substr(last);
  static const std::regex ms("(^|[^0-9])[0-9]{13}(?![0-9])");
  marked = std::regex_replace(marked, ms, "$1<epoch-ms>");
  // An ISO time in UTC (pause's until, once_per's slot) and a user@host (pause's "by").
  static const std::regex utc("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?Z");
  marked = std::regex_replace(marked, utc, "<utc>");
  static const std::regex by("[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+");
  marked = std::regex_replace(marked, by, "<user@host>");
  for (const auto& [re, with] : rules_) marked = std::regex_replace(marked, re, with);
  return marked;
}

std::string Normaliser::render(const std::string& text) const {
  std::string out;
  std::size_t last = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kTokenMark); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    out += text.substr(last, static_cast<std::size_t>(m.position()) - last);
    const auto rank = std::distance(tokens_.begin(), tokens_.find(m.str(1)));
    out += "t" + std::to_string(rank + 1);
    last = static_cast<std::size_t>(m.position() + m.length());
  }
  return out + text.substr(last);
}

void Normaliser::rule(const std::string& pattern, const std::string& replacement) {
  rules_.emplace_back(std::regex(pattern), replacement);
}

void Normaliser::log_rule(const std::string& pattern, const std::string& replacement) {
  log_rules_.emplace_back(std::regex(pattern), replacement);
}

void Normaliser::repeatable_log(const std::string& pattern) { repeatable_logs_.emplace_back(pattern); }
void Normaliser::repeatable_op(const std::string& pattern) { repeatable_ops_.emplace_back(pattern); }

std::string Normaliser::log_line(const std::string& raw) {
  // "<ISO time> <level> [<component>] <message>"
  static const std::regex stamp("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z ");
  std::string s = std::regex_replace(raw, stamp, "");
  s = value(s);
  static const std::regex pid("pid=[0-9]+");
  s = std::regex_replace(s, pid, "pid=<pid>");
  // Durations (format_duration: 1h2m3s, 1.5s, 480ms): the config's kept, the others blanked.
  static const std::regex duration("(^|[^A-Za-z0-9.<])([0-9]+(\\.[0-9]+)?(ms|h|m|s)([0-9]+(\\.[0-9]+)?(ms|m|s))*)(?![A-Za-z0-9])");
  std::string out;
  std::size_t last = 0;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), duration); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    out += s.substr(last, static_cast<std::size_t>(m.position(2)) - last);
    out += kept_durations_.count(m.str(2)) ? m.str(2) : "<dur>";
    last = static_cast<std::size_t>(m.position(2) + m.length(2));
  }
  s = out + s.substr(last);
  for (const auto& [re, with] : log_rules_) s = std::regex_replace(s, re, with);
  return s;
}

std::vector<std::string> Normaliser::fold(const std::vector<std::string>& entries,
                                          const std::vector<std::regex>& repeatable) {
  // EVAL and EVALSHA of one script are one entry when folding: the first use on a connection
  // is an EVAL, the next ones go by SHA, and how many there were is timing.
  auto same = [](std::string s) {
    if (s.rfind("EVALSHA ", 0) == 0) s.replace(0, 7, "EVAL");
    return s;
  };
  std::vector<std::string> out;
  for (std::size_t i = 0; i < entries.size();) {
    const bool rep = std::any_of(repeatable.begin(), repeatable.end(),
                                 [&](const std::regex& re) { return std::regex_search(entries[i], re); });
    std::size_t j = i + 1;
    if (rep) {
      while (j < entries.size() && same(entries[j]) == same(entries[i])) ++j;
      const auto eol = entries[i].find('\n');
      std::string e = entries[i];
      e.insert(eol == std::string::npos ? e.size() : eol, "  (×≥1)");
      out.push_back(e);
    } else {
      out.push_back(entries[i]);
    }
    i = j;
  }
  return out;
}

std::vector<std::string> Normaliser::monitor(const std::vector<std::string>& lines) {
  // Operations per connection, in the connection's own order; a script's "lua" calls follow
  // its EVAL/EVALSHA at once (a script runs atomically), so they join the last script seen.
  std::map<std::string, std::vector<std::string>> by_client;
  std::map<std::string, std::string> owner;  // a daemon's connection: the holder it acts for
  std::vector<std::string> order;
  std::string last_script_client;
  int epoch = 0;  // a restart starts new connections even where a port repeats
  for (const auto& l : lines) {
    if (l == "-- restarted --") {
      ++epoch;
      continue;
    }
    MonitorLine m;
    if (!parse_monitor(l, m)) continue;
    if (m.client == "lua") {
      if (last_script_client.empty() || by_client[last_script_client].empty()) continue;
      std::vector<std::string> args;
      for (std::size_t i = 1; i < m.args.size(); ++i) args.push_back(repr(value(m.args[i])));
      by_client[last_script_client].back() += "\n    > " + upper(m.args[0]) + (args.empty() ? "" : " " + join_runs(args));
      continue;
    }
    const std::string client = std::to_string(epoch) + "/" + m.client;
    if (!by_client.count(client)) order.push_back(client);
    const std::string verb = upper(m.args[0]);
    std::string op = verb;
    std::size_t from = 1;
    if ((verb == "EVAL" || verb == "EVALSHA") && m.args.size() >= 3) {
      op += " " + script_name(m.args[1], verb == "EVALSHA");
      const std::size_t keys = std::min<std::size_t>(std::strtoul(m.args[2].c_str(), nullptr, 10), m.args.size() - 3);
      std::vector<std::string> key_args, argv;
      for (std::size_t i = 0; i < keys; ++i) key_args.push_back(repr(value(m.args[3 + i])));
      for (std::size_t i = 3 + keys; i < m.args.size(); ++i) argv.push_back(repr(value(m.args[i])));
      op += " keys[" + join_runs(key_args) + "] argv[" + join_runs(argv) + "]";
      // The daemon's scripts take the holder id as their first argument.
      if (!argv.empty() && !owner.count(client) &&
          std::any_of(holders_.begin(), holders_.end(),
                      [&](const auto& h) { return h.second == argv[0] || h.second + "#n" == argv[0]; })) {
        owner[client] = argv[0].size() > 2 && argv[0].compare(argv[0].size() - 2, 2, "#n") == 0
                            ? argv[0].substr(0, argv[0].size() - 2)
                            : argv[0];
      }
      from = m.args.size();
      last_script_client = client;
    } else {
      last_script_client.clear();
    }
    std::vector<std::string> args;
    for (std::size_t i = from; i < m.args.size(); ++i) args.push_back(repr(value(m.args[i])));
    if (!args.empty()) op += " " + join_runs(args);
    // A waiter's wake channel "{K}:wake:<holder>".
    if (verb == "SUBSCRIBE" && args.size() == 1 && !owner.count(client)) {
      const auto at = args[0].rfind(":wake:");
      if (at != std::string::npos) owner[client] = args[0].substr(at + 6);
    }
    by_client[client].push_back(op);
  }
  // A connection's name: the first holder it names and its first operation; the list is
  // sorted by name and text, since which connection came first is timing.
  std::vector<std::pair<std::string, std::string>> sections;
  for (const auto& client : order) {
    std::vector<std::string> kept;
    for (const auto& op : by_client[client]) {
      const bool drop = std::any_of(drop_ops_.begin(), drop_ops_.end(),
                                    [&](const std::regex& re) { return std::regex_search(op, re); });
      if (drop) {
        ++dropped_;
      } else {
        kept.push_back(op);
      }
    }
    if (kept.empty()) continue;
    const auto ops = fold(kept, repeatable_ops_);
    std::string text;
    for (const auto& op : ops) text += "  " + op + "\n";
    const std::string who = owner.count(client) ? "daemon " + owner[client] : "a client";
    std::string first = ops.empty() ? "" : ops.front().substr(0, ops.front().find_first_of(" \n"));
    if (first == "EVAL" || first == "EVALSHA") {
      const auto rest = ops.front().substr(first.size() + 1);
      first = rest.substr(0, rest.find(' '));
    }
    sections.emplace_back("connection of " + who + ", first " + first, text);
  }
  std::sort(sections.begin(), sections.end());
  std::vector<std::string> out;
  for (const auto& [head, text] : sections) {
    out.push_back("[" + head + "]");
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
  }
  return out;
}

std::vector<std::string> Normaliser::log(const std::string& text) {
  std::vector<std::string> lines;
  for (const auto& l : split_lines(text)) lines.push_back(log_line(l));
  auto unordered = [&](const std::string& l) {
    return std::any_of(unordered_logs_.begin(), unordered_logs_.end(),
                       [&](const std::regex& re) { return std::regex_search(l, re); });
  };
  for (std::size_t i = 0; i < lines.size();) {
    std::size_t j = i;
    while (j < lines.size() && unordered(lines[j])) ++j;
    std::sort(lines.begin() + static_cast<std::ptrdiff_t>(i), lines.begin() + static_cast<std::ptrdiff_t>(j));
    i = j == i ? i + 1 : j;
  }
  return fold(lines, repeatable_logs_);
}

// ---- Transcript -------------------------------------------------------------------------

void Transcript::section(const std::string& title, const std::vector<std::string>& lines) {
  body_.push_back("== " + title + " ==");
  for (const auto& l : lines) body_.push_back(l);
}

std::string line_diff(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t j = m; j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string out;
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      out += "  " + a[i++] + "\n";
      ++j;
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out += "+ " + b[j++] + "\n";
    } else {
      out += "- " + a[i++] + "\n";
    }
  }
  return out;
}

void Transcript::finish() {
  std::vector<std::string> actual{"# golden transcript " + name_ + " (tests/golden/README.md)"};
  for (const auto& l : body_) {
    std::istringstream in(norm_.render(l));
    for (std::string part; std::getline(in, part);) actual.push_back(part);
  }
  const std::string path = std::string(REDISGO_SOURCE_DIR) + "/tests/golden/" + name_ + ".txt";
  const char* update = std::getenv("REDISGO_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (const auto& l : actual) out << l << "\n";
    std::cout << "golden: wrote " << path << "\n";
    return;
  }
  std::vector<std::string> expected;
  {
    std::ifstream in(path);
    if (!in) {
      ADD_FAILURE() << "no golden file " << path << " (record it with REDISGO_UPDATE_GOLDEN=1)";
      return;
    }
    for (std::string l; std::getline(in, l);) expected.push_back(l);
  }
  if (expected != actual) {
    ADD_FAILURE() << "transcript differs from " << path << " (- expected, + actual; rewrite it with "
                  << "REDISGO_UPDATE_GOLDEN=1 if the change is meant):\n"
                  << line_diff(expected, actual);
  }
}

}  // namespace redisgo::testing
