// Log lines as operators and log shippers see them: text and JSON formats, escaping,
// level filtering, and named loggers that follow setup() wherever they were created.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "log/logging.h"

namespace log_logging_test {

using redisgo::config::LogFormat;
using redisgo::config::LogLevel;
namespace rlog = redisgo::log;

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A minimal JSON reader for one flat object of string values, strict enough to reject
// what a real parser would: unescaped control characters, bad escapes, trailing junk.
// Returns false on any syntax error.
bool parse_flat_json(const std::string& s, std::vector<std::pair<std::string, std::string>>& out) {
  std::size_t i = 0;
  auto read_string = [&](std::string& v) -> bool {
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    while (i < s.size() && s[i] != '"') {
      auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x20) return false;
      if (c != '\\') {
        v.push_back(s[i++]);
        continue;
      }
      if (++i >= s.size()) return false;
      char e = s[i++];
      switch (e) {
        case '"': v.push_back('"'); break;
        case '\\': v.push_back('\\'); break;
        case '/': v.push_back('/'); break;
        case 'n': v.push_back('\n'); break;
        case 't': v.push_back('\t'); break;
        case 'r': v.push_back('\r'); break;
        case 'b': v.push_back('\b'); break;
        case 'f': v.push_back('\f'); break;
        case 'u': {
          if (i + 4 > s.size()) return false;
          unsigned cp = std::stoul(s.substr(i, 4), nullptr, 16);
          i += 4;
          if (cp < 0x80) {
            v.push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            v.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            v.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else {
            v.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            v.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            v.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          }
          break;
        }
        default: return false;
      }
    }
    if (i >= s.size()) return false;
    ++i;
    return true;
  };
  if (s.empty() || s[i++] != '{') return false;
  for (;;) {
    std::string k, v;
    if (!read_string(k) || i >= s.size() || s[i++] != ':' || !read_string(v)) return false;
    out.emplace_back(k, v);
    if (i >= s.size()) return false;
    char c = s[i++];
    if (c == '}') return i == s.size();
    if (c != ',') return false;
  }
}

class LogTest : public ::testing::Test {
 protected:
  void capture(LogFormat format, LogLevel level) {
    rlog::setup(level, format);  // selects the format
    rlog::set_sink_for_tests(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_), level);
  }
  // The sink refers to out_: route logging back to stderr before out_ goes away.
  void TearDown() override { rlog::setup(LogLevel::kInfo, LogFormat::kText); }
  std::vector<std::string> captured() const { return lines(out_.str()); }

  std::ostringstream out_;
};

// "2026-11-22T10:00:00.123Z" (std::regex is avoided: GCC 12 warns inside it under ASan).
bool is_timestamp(const std::string& s) {
  const std::string shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (s.size() != shape.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    bool ok = shape[i] == 'd' ? (s[i] >= '0' && s[i] <= '9') : s[i] == shape[i];
    if (!ok) return false;
  }
  return true;
}

}  // namespace

TEST_F(LogTest, TextLineLayout) {
  capture(LogFormat::kText, LogLevel::kInfo);
  rlog::get("daemon")->info("lease acquired token={}", 7);
  rlog::get("lock")->warn("renewal slow");
  auto got = captured();
  ASSERT_EQ(got.size(), 2u);
  ASSERT_GT(got[0].size(), 24u);
  EXPECT_TRUE(is_timestamp(got[0].substr(0, 24))) << got[0];
  EXPECT_EQ(got[0].substr(24), " info  [daemon] lease acquired token=7");
  ASSERT_GT(got[1].size(), 24u);
  EXPECT_TRUE(is_timestamp(got[1].substr(0, 24))) << got[1];
  EXPECT_EQ(got[1].substr(24), " warn  [lock] renewal slow");
}

TEST_F(LogTest, TextKeepsOneRecordPerLine) {
  capture(LogFormat::kText, LogLevel::kInfo);
  rlog::get("daemon")->error("redis said: ERR x\nFAKE info [daemon] forged\x01");
  auto got = captured();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find(R"(error [daemon] redis said: ERR x\nFAKE info [daemon] forged\x01)"), std::string::npos)
      << got[0];
}

TEST_F(LogTest, JsonLineIsExactAndParses) {
  capture(LogFormat::kJson, LogLevel::kInfo);
  const std::string msg = "a \"quoted\" back\\slash\nnew\ttab\x01 end \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  rlog::get("daemon")->info("{}", msg);
  auto got = captured();
  ASSERT_EQ(got.size(), 1u);
  const std::string head = R"({"ts":")";
  ASSERT_GT(got[0].size(), head.size() + 26);
  EXPECT_EQ(got[0].substr(0, head.size()), head);
  EXPECT_TRUE(is_timestamp(got[0].substr(head.size(), 24))) << got[0];
  EXPECT_EQ(got[0].substr(head.size() + 24, 2), "\",");
  EXPECT_EQ(got[0].substr(head.size() + 26),
            R"("level":"info","logger":"daemon","msg":"a \"quoted\" back\\slash\nnew\ttab\u0001 end )"
            "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"}");

  std::vector<std::pair<std::string, std::string>> fields;
  ASSERT_TRUE(parse_flat_json(got[0], fields)) << got[0];
  ASSERT_EQ(fields.size(), 4u);
  EXPECT_EQ(fields[0].first, "ts");
  EXPECT_EQ(fields[1], (std::pair<std::string, std::string>{"level", "info"}));
  EXPECT_EQ(fields[2], (std::pair<std::string, std::string>{"logger", "daemon"}));
  EXPECT_EQ(fields[3], (std::pair<std::string, std::string>{"msg", msg}));
}

TEST(LogJson, EscapesEveryControlCharacterAndRepairsBadUtf8) {
  std::string all;
  for (int c = 0; c < 0x20; ++c) all.push_back(static_cast<char>(c));
  std::string out;
  rlog::append_json_escaped(all, out);
  for (unsigned char c : out) EXPECT_GE(c, 0x20u) << out;
  EXPECT_EQ(out.substr(0, 12), R"(\u0000\u0001)");

  out.clear();
  // Stray continuation byte, truncated sequence, overlong '/', UTF-16 surrogate.
  rlog::append_json_escaped("a\x80 b\xE2\x82 c\xC0\xAF d\xED\xA0\x80", out);
  EXPECT_EQ(out, R"(a\ufffd b\ufffd\ufffd c\ufffd\ufffd d\ufffd\ufffd\ufffd)");
}

// Text output (status, check, handover and the text log) escapes what JSON replaces: a
// byte that is not UTF-8 (a holder id or claim written by hand) reaches no terminal raw,
// and shows which byte it was; valid UTF-8 passes, C1 controls (8-bit CSI) do not.
TEST(LogText, PrintableEscapesBadUtf8AndC1Controls) {
  EXPECT_EQ(rlog::printable("host\xff\xfe:1:abc"), R"(host\xff\xfe:1:abc)");
  EXPECT_EQ(rlog::printable("a\x80 b\xE2\x82 c\xC0\xAF d\xED\xA0\x80"),
            R"(a\x80 b\xe2\x82 c\xc0\xaf d\xed\xa0\x80)");
  EXPECT_EQ(rlog::printable("h\xC3\xB4te \xE2\x82\xAC \xF0\x9F\x98\x80"), "h\xC3\xB4te \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(rlog::printable("csi\xC2\x9B" "31m"), R"(csi\u009b31m)");
  EXPECT_EQ(rlog::printable("nl\ntab\tesc\x1b"), "nl\\ntab\tesc\\x1b");  // a tab stays a tab
}

TEST_F(LogTest, LevelFiltering) {
  capture(LogFormat::kJson, LogLevel::kWarn);
  auto log = rlog::get("daemon");
  log->debug("hidden debug");
  log->info("hidden info");
  log->warn("shown warn");
  log->error("shown error");
  auto got = captured();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NE(got[0].find(R"("level":"warn")"), std::string::npos) << got[0];
  EXPECT_NE(got[1].find(R"("level":"error")"), std::string::npos) << got[1];

  rlog::set_sink_for_tests(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_), LogLevel::kTrace);
  out_.str("");
  log->trace("now shown");
  EXPECT_EQ(captured().size(), 1u);
}

TEST_F(LogTest, NamedLoggersShareSinkAndFollowSetup) {
  // Created before the capture is set up: must follow it anyway.
  auto early = rlog::get("early");
  capture(LogFormat::kJson, LogLevel::kDebug);
  auto late = rlog::get("late");
  EXPECT_EQ(rlog::get("late"), late) << "same name, same logger";
  early->debug("from early");
  late->debug("from late");
  spdlog::debug("from default");  // spdlog's default logger is ours too
  auto got = captured();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_NE(got[0].find(R"("logger":"early","msg":"from early")"), std::string::npos) << got[0];
  EXPECT_NE(got[1].find(R"("logger":"late","msg":"from late")"), std::string::npos) << got[1];
  EXPECT_NE(got[2].find(std::string(R"("logger":")") + rlog::kDefaultLoggerName + R"(","msg":"from default")"),
            std::string::npos)
      << got[2];
}

TEST_F(LogTest, ConcurrentLoggingWhileRerouting) {
  capture(LogFormat::kText, LogLevel::kInfo);
  constexpr int kWriters = 3;
  constexpr int kLinesEach = 300;
  std::atomic<int> done{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      auto log = rlog::get("w" + std::to_string(t));
      for (int i = 0; i < kLinesEach; ++i) log->info("line from {}", t);
      ++done;
    });
  }
  // Swap between two sinks while the writers run: every line must land whole in
  // exactly one of them.
  std::ostringstream other;
  for (int i = 0; done < kWriters; ++i) {
    rlog::set_sink_for_tests(std::make_shared<spdlog::sinks::ostream_sink_mt>(i % 2 ? out_ : other),
                             LogLevel::kInfo);
  }
  for (auto& w : writers) w.join();
  rlog::setup(LogLevel::kInfo, LogFormat::kText);  // before `other` goes away
  auto got = captured();
  auto more = lines(other.str());
  got.insert(got.end(), more.begin(), more.end());
  EXPECT_EQ(got.size(), static_cast<std::size_t>(kWriters * kLinesEach));
  for (const auto& line : got) {
    auto pos = line.find("Z info  [w");
    ASSERT_NE(pos, std::string::npos) << line;
    EXPECT_EQ(line.substr(pos + 11), "] line from " + line.substr(pos + 10, 1)) << line;
  }
}

// ---- fields an operator can filter on (issue 11) --------------------------------------

TEST(LogFields, EventsFromTheDaemonsMessageHeads) {
  EXPECT_EQ(rlog::event_of("acquired key=k token=5 valid for 4948ms"), "acquired");
  EXPECT_EQ(rlog::event_of("child started pid=12 token=5"), "child_started");
  EXPECT_EQ(rlog::event_of("child exited status=3"), "child_exited");
  EXPECT_EQ(rlog::event_of("released key=k on 1 of 1 node(s)"), "released");
  EXPECT_EQ(rlog::event_of("lease lost: no quorum"), "lease_lost");
  EXPECT_EQ(rlog::event_of("stepped down: crash loop; not contending for 10s"), "stepped_down");
  EXPECT_EQ(rlog::event_of("lease not acquired after 1 attempt(s); giving up"), "gave_up");
  EXPECT_EQ(rlog::event_of("something else"), "");
}

TEST(LogFields, NumbersAndNodesNamedInTheMessage) {
  using F = std::vector<std::pair<std::string_view, std::string_view>>;
  EXPECT_EQ(rlog::fields_of("child started pid=12 token=99"), (F{{"pid", "12"}, {"token", "99"}}));
  EXPECT_EQ(rlog::fields_of("child exited status=143"), (F{{"status", "143"}}));
  EXPECT_EQ(rlog::fields_of("acquire: redis 10.0.0.1:6379: connect refused"), (F{{"node", "10.0.0.1:6379"}}));
  EXPECT_EQ(rlog::fields_of("x (redis unix:///run/r.sock: closed), token=abc"), (F{{"node", "unix:///run/r.sock"}}))
      << "a token that is not a number is no field";
  EXPECT_EQ(rlog::fields_of("pid=1 pid=2"), (F{{"pid", "1"}})) << "the first wins";
  EXPECT_EQ(rlog::fields_of("mypid=3 subtoken=4"), F{}) << "only whole words";
}

TEST_F(LogTest, JsonLinesCarryTheFieldsAndTheContext) {
  capture(LogFormat::kJson, LogLevel::kInfo);
  rlog::set_context("jobs:backup", "host-a:12:abcd");
  rlog::get("daemon")->info("child started pid={} token={}", 4242, 17);
  rlog::get("lock")->warn("renew: redis 127.0.0.1:6380: timeout");
  rlog::set_context("", "");
  auto got = captured();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NE(got[0].find("\"key\":\"jobs:backup\",\"holder\":\"host-a:12:abcd\",\"event\":\"child_started\",\"pid\":4242,"
                        "\"token\":17}"),
            std::string::npos)
      << got[0];
  EXPECT_NE(got[1].find("\"node\":\"127.0.0.1:6380\"}"), std::string::npos) << got[1];
}

TEST(LogJournal, StreamMatchesOnlyTheSameFileAndPrioritiesAreSyslogs) {
  char path[] = "/tmp/redisgo-journal-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  const std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  EXPECT_TRUE(rlog::is_journal_stream(fd, mine.c_str()));
  EXPECT_FALSE(rlog::is_journal_stream(fd, (mine + "1").c_str()));
  EXPECT_FALSE(rlog::is_journal_stream(fd, (mine + "x").c_str()));
  EXPECT_FALSE(rlog::is_journal_stream(fd, nullptr));
  EXPECT_FALSE(rlog::is_journal_stream(fd, "garbage"));
  ::close(fd);
  ::unlink(path);
  EXPECT_EQ(rlog::syslog_priority(spdlog::level::err), 3);
  EXPECT_EQ(rlog::syslog_priority(spdlog::level::warn), 4);
  EXPECT_EQ(rlog::syslog_priority(spdlog::level::info), 6);
  EXPECT_EQ(rlog::syslog_priority(spdlog::level::debug), 7);
}

}  // namespace log_logging_test
