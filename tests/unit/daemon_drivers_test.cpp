// The drivers of the phase machines (docs/DESIGN.md "The phases") carry out actions and feed
// events back; what a node's answer means is decided in lock (lock/verdict.h, lock/wake.h)
// and what follows from it in the machines. Checked on the source: a driver file that reads
// the scripts' replies, a node's fault kind or a reply string itself fails here.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/source_tree.h"

namespace daemon_drivers_test {

namespace {

using redisgo::testing::read_source;

/// The driver files. A new file of the drivers joins this list.
const char* const kDrivers[] = {"src/daemon/runner.h",         "src/daemon/runner.cpp",
                                "src/daemon/event_loop.h",     "src/daemon/event_loop.cpp",
                                "src/daemon/standby_driver.h", "src/daemon/standby_driver.cpp",
                                "src/daemon/leader_driver.h",  "src/daemon/leader_driver.cpp",
                                "src/daemon/leader_loop.cpp",  "src/daemon/leading.h",
                                "src/daemon/notices.h",        "src/daemon/notices.cpp",
                                "src/daemon/notices_lease.cpp", "src/daemon/hold.h", "src/daemon/hold.cpp", "src/daemon/once_per.h", "src/daemon/once.cpp"};

/// The code of `text` without its // comments (a comment may name what the code must not do).
std::vector<std::string> code_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    bool quoted = false;
    std::size_t cut = line.size();
    for (std::size_t i = 0; i + 1 < line.size(); ++i) {
      if (line[i] == '\\' && quoted) {
        ++i;
      } else if (line[i] == '"') {
        quoted = !quoted;
      } else if (!quoted && line[i] == '/' && line[i + 1] == '/') {
        cut = i;
        break;
      }
    }
    lines.push_back(line.substr(0, cut));
  }
  return lines;
}

struct Rule {
  const char* what;
  std::regex pattern;
};

/// What a driver leaves to lock and the machines, as patterns of code.
std::vector<Rule> rules() {
  return {
      {"includes the scripts' replies (lock/replies*.h, lock/reply_elements.h)",
       std::regex(R"(#\s*include\s*[<"]lock/(replies(_[a-z]+)?|reply_elements)\.h[>"])")},
      {"reads a reply's kind", std::regex(R"(Reply::(Kind|Result)\b)")},
      {"compares a node's fault kind (lock::classify, lock::server_answered decide)", std::regex(R"(\bFault::)")},
      {"compares a string with a literal", std::regex(R"((==|!=)\s*")")},
      {"compares a literal with a string", std::regex(R"("\s*(==|!=))")},
      {"searches a string for a literal", std::regex(R"(\.(r?find|compare|starts_with|ends_with)\s*\(\s*")")},
      {"reads a key's value (a turn, a pause) itself", std::regex(R"(\b(turn_of|pause_of)\s*\()")},
      {"reads a control message itself", std::regex(R"(\bkPauseStopPrefix\b)")},
  };
}

/// The lines of `text` that break a rule, "line N: what: code".
std::vector<std::string> breaches(const std::string& text) {
  std::vector<std::string> found;
  const auto lines = code_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    for (const auto& rule : rules()) {
      if (std::regex_search(lines[i], rule.pattern)) {
        found.push_back("line " + std::to_string(i + 1) + ": " + rule.what + ": " + lines[i]);
      }
    }
  }
  return found;
}

}  // namespace

TEST(DriverFiles, DecideNothingTheMachinesOrTheLockLayerDecide) {
  for (const char* file : kDrivers) {
    bool found = false;
    const std::string text = read_source(file, found);
    ASSERT_TRUE(found) << file << " is gone: the list of driver files names what the drivers are";
    for (const auto& b : breaches(text)) ADD_FAILURE() << file << " " << b;
  }
}

// The rules themselves: each catches what it is for, and a comment or a string that names it
// does not trip it.
TEST(DriverFiles, TheRulesCatchWhatTheyAreFor) {
  EXPECT_EQ(breaches("#include \"lock/replies.h\"\n").size(), 1u);
  for (const char* header : {"replies_line", "replies_admin", "replies_once", "reply_elements"}) {
    EXPECT_EQ(breaches(std::string("#include \"lock/") + header + ".h\"\n").size(), 1u) << header;
  }
  EXPECT_EQ(breaches("if (r.kind == lock::AcquireReply::Kind::kBusy) {}\n").size(), 1u);
  EXPECT_EQ(breaches("if (r->result == lock::RenewReply::Result::kRenewed) {}\n").size(), 1u);
  EXPECT_EQ(breaches("if (e.fault == redis::Fault::kAuth) {}\n").size(), 1u);
  EXPECT_EQ(breaches("if (payload == \"turn\") {}\n").size(), 1u);
  EXPECT_EQ(breaches("if (\"any\" != message) {}\n").size(), 1u);
  EXPECT_EQ(breaches("bool none = why.find(\"NOAUTH\") != npos;\n").size(), 1u);
  EXPECT_EQ(breaches("if (lock::pause_of(acq.holder)) {}\n").size(), 1u);
  EXPECT_EQ(breaches("if (m == lock::kPauseStopPrefix + holder) {}\n").size(), 1u);
  EXPECT_TRUE(breaches("// never write payload == \"turn\" here\n").empty());
  EXPECT_TRUE(breaches("log_->info(\"a // b == \\\"c\\\"\");\n").empty());
  EXPECT_TRUE(breaches("if (outcome.cause == StepDown::kRenewalRefused) {}\n").empty());
}

}  // namespace daemon_drivers_test
