// contrib/: the Grafana dashboard and the Prometheus rules (and the series their promtool
// tests feed) name only series that the binary exports, with labels it puts on them. The
// list of exported series is the rendered text of a Metrics (what GET /metrics and the
// textfile serve), never a list kept by hand. promtool itself runs in CTest
// prometheus_rules (tests/prometheus/run_promtool.sh).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "util/clock.h"

namespace metrics_contrib_test {

using redisgo::FakeClock;
using redisgo::metrics::Metrics;

namespace {

std::string read_source(const std::string& relative) {
  std::ifstream in(std::string(REDISGO_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Sample (or family) name -> label="value" pairs seen on it, over the texts of a oneshot and a
/// supervise daemon that have been through everything that adds a series.
std::map<std::string, std::set<std::string>> exported() {
  FakeClock clock;
  std::map<std::string, std::set<std::string>> out;
  for (const char* mode : {"oneshot", "supervise"}) {
    Metrics m("k", {"n:1"}, clock);
    m.configure({mode, 1, 10, 3600});
    m.set_renewal_refused("+pexpire");  // a series only while a daemon holds back
    m.set_child_exit(0);                 // a series only once a child exited
    for (std::size_t s = 0; s < redisgo::metrics::kStateCount; ++s) {
      m.set_state(static_cast<redisgo::metrics::State>(s));
      const std::string text = m.render_textfile(1) + m.render_record();
      std::istringstream in(text);
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("# TYPE ", 0) == 0) {
          // A family's own name (a histogram's, which prose may name) counts as exported.
          std::istringstream words(line.substr(7));
          std::string family;
          words >> family;
          out[family];
          continue;
        }
        if (line.empty() || line[0] == '#') continue;
        const auto brace = line.find('{');
        auto& labels = out[line.substr(0, brace)];
        if (brace == std::string::npos) continue;
        const auto end = line.find("} ", brace);
        // Label values here hold no comma or brace: split on them.
        std::string body = line.substr(brace + 1, end - brace - 1);
        std::stringstream pairs(body);
        std::string pair;
        while (std::getline(pairs, pair, ',')) labels.insert(pair);
      }
    }
  }
  return out;
}

bool has_label(const std::set<std::string>& labels, const std::string& name) {
  for (const auto& l : labels) {
    if (l.compare(0, name.size() + 1, name + "=") == 0) return true;
  }
  return false;
}

/// Every redisgo_task_* and process_* name in `text` is an exported sample; every
/// `name{label="v"}`, `name{label!="v"}` or `name{label=~"v|w"}` matcher names a label the
/// series has and, for the daemon's own label values (cause, result, state, mode, kind,
/// reason), values it takes.
void expect_only_exported(const std::string& file) {
  const std::string text = read_source(file);
  ASSERT_FALSE(text.empty()) << file << " is missing";
  const auto series = exported();
  std::set<std::string> names;
  const std::regex name_re("(redisgo_task|process)_[a-z0-9_]+");
  for (std::sregex_iterator it(text.begin(), text.end(), name_re), end; it != end; ++it) names.insert(it->str());
  EXPECT_FALSE(names.empty()) << file;
  for (const auto& n : names) EXPECT_TRUE(series.contains(n)) << file << " names " << n << ", which is not exported";

  const std::regex selector_re(R"(((?:redisgo_task|process)_[a-z0-9_]+)\{([^}]*)\})");
  const std::regex matcher_re(R"(([a-z_]+)\s*(=~|!~|!=|=)\s*\\?\"([^"\\]*)\\?\")");
  const std::set<std::string> own_values{"cause", "result", "state", "mode", "kind", "reason"};
  int matchers = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), selector_re), end; it != end; ++it) {
    const std::string name = (*it)[1];
    if (!series.contains(name)) continue;  // said above
    const std::string body = (*it)[2];
    for (std::sregex_iterator m(body.begin(), body.end(), matcher_re); m != std::sregex_iterator(); ++m) {
      const std::string label = (*m)[1], op = (*m)[2], value = (*m)[3];
      // Scrape labels (job, instance) and the test inputs' own values are not ours to check.
      if (label == "job" || label == "instance") continue;
      ++matchers;
      EXPECT_TRUE(has_label(series.at(name), label)) << file << ": " << name << " has no label " << label;
      if (!own_values.contains(label)) continue;
      // A regex matcher of the daemon's own values is a list of them ("a|b"): each is one.
      std::vector<std::string> values{value};
      if (op == "=~" || op == "!~") {
        values.clear();
        std::stringstream alternatives(value);
        for (std::string v; std::getline(alternatives, v, '|');) values.push_back(v);
      }
      for (const auto& v : values) {
        EXPECT_TRUE(series.at(name).contains(label + "=\"" + v + "\""))
            << file << ": " << name << " never has " << label << "=\"" << v << "\"";
      }
    }
  }
  EXPECT_GT(matchers, 0) << file;
}

}  // namespace

TEST(MetricsContrib, DashboardQueriesNameOnlyExportedSeries) {
  expect_only_exported("contrib/grafana/redisgo_task.json");
}

TEST(MetricsContrib, RulesNameOnlyExportedSeries) { expect_only_exported("contrib/prometheus/redisgo_task.rules.yml"); }

// The promtool tests' input series are real ones: a test that feeds a series nobody
// exports proves nothing.
TEST(MetricsContrib, RuleTestsFeedOnlyExportedSeries) {
  expect_only_exported("tests/prometheus/redisgo_task.rules.test.yml");
}

// What the dashboard takes from the rules file (redisgo_task:... series) is recorded there.
TEST(MetricsContrib, DashboardRecordedSeriesAreRecorded) {
  const std::string dashboard = read_source("contrib/grafana/redisgo_task.json");
  const std::string rules = read_source("contrib/prometheus/redisgo_task.rules.yml");
  const std::regex recorded_re("redisgo_task:[a-z0-9_:]+");
  for (std::sregex_iterator it(dashboard.begin(), dashboard.end(), recorded_re), end; it != end; ++it) {
    EXPECT_NE(rules.find("record: " + it->str() + "\n"), std::string::npos) << it->str() << " is not recorded";
  }
}

// The manual's METRICS section lists every family the binary exports, and names none that it
// does not: the reference an operator writes rules from agrees with the binary.
TEST(MetricsContrib, ManualListsExactlyTheExportedFamilies) {
  const std::string manual = read_source("docs/redisgo_task.1.scd");
  const auto begin = manual.find("\n# METRICS\n"), end = manual.find("\n# LOGGING\n");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string section = manual.substr(begin, end - begin);
  const auto series = exported();
  std::set<std::string> named;
  const std::regex name_re("(redisgo_task|process)_[a-z0-9_]+");
  for (std::sregex_iterator it(section.begin(), section.end(), name_re), stop; it != stop; ++it) named.insert(it->str());
  for (const auto& n : named) EXPECT_TRUE(series.contains(n)) << "the manual names " << n << ", which is not exported";
  // The families: the names with a # TYPE line in the textfile's text.
  FakeClock clock;
  Metrics m("k", {"n:1"}, clock);
  m.set_renewal_refused("+pexpire");
  m.set_child_exit(0);
  std::istringstream in(m.render_textfile(1));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    const std::string family = line.substr(7, line.find(' ', 7) - 7);
    EXPECT_TRUE(named.contains(family)) << family << " is exported but not in the manual's METRICS";
  }
  // The README's names are the 1.0 ones too.
  const std::string readme = read_source("README.md");
  for (const char* gone : {"redisgo_task_leader{", "redisgo_task_leader ", "redisgo_task_cannot_acquire",
                           "redisgo_task_child_last_exit_status", "redisgo_task_renewals_refused",
                           "redisgo_task_frozen_past_lease_total"}) {
    EXPECT_EQ(readme.find(gone), std::string::npos) << "README names " << gone << ", gone in 1.0";
  }
}

}  // namespace metrics_contrib_test
