// Metrics::render(): the exact exposition text, label escaping, histogram buckets, the
// remaining-seconds gauge against a FakeClock, version() and concurrent updates.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <latch>
#include <limits>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "metrics/metrics.h"
#include "util/clock.h"

namespace metrics_render_test {

using namespace std::chrono_literals;
using redisgo::FakeClock;
using redisgo::metrics::Metrics;
using redisgo::metrics::State;

namespace {

/// The value of the sample whose name and labels are exactly `series`, or "" if absent.
std::string value_of(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ') {
      return line.substr(series.size() + 1);
    }
  }
  return "";
}

/// Every family render() may show (over HTTP and in the textfile, which adds
/// redisgo_task_textfile_written_timestamp_seconds), with its type: the names that 1.0
/// freezes. A family added, renamed or removed fails EveryFamilyHasHelpAndTypeOnce...
const std::map<std::string, std::string> kFamilies{
    {"redisgo_task_build_info", "gauge"},
    {"redisgo_task_state", "gauge"},
    {"redisgo_task_token", "gauge"},
    {"redisgo_task_lease_remaining_seconds", "gauge"},
    {"redisgo_task_acquisitions_total", "counter"},
    {"redisgo_task_config_info", "gauge"},
    {"redisgo_task_expire_seconds", "gauge"},
    {"redisgo_task_once_per_seconds", "gauge"},
    {"redisgo_task_renewals_total", "counter"},
    {"redisgo_task_renewal_duration_seconds", "histogram"},
    {"redisgo_task_wait_seconds", "histogram"},
    {"redisgo_task_line_length", "gauge"},
    {"redisgo_task_line_position", "gauge"},
    {"redisgo_task_renewal_refused_info", "gauge"},
    {"redisgo_task_lease_losses_total", "counter"},
    {"redisgo_task_child_starts_total", "counter"},
    {"redisgo_task_freezes_past_lease_total", "counter"},
    {"redisgo_task_child_last_exit_code", "gauge"},
    {"redisgo_task_child_last_start_timestamp_seconds", "gauge"},
    {"redisgo_task_last_success_timestamp_seconds", "gauge"},
    {"redisgo_task_once_per_slots_skipped_total", "counter"},
    {"redisgo_task_step_downs_total", "counter"},
    {"redisgo_task_control_requests_total", "counter"},
    {"redisgo_task_textfile_write_errors_total", "counter"},
    {"redisgo_task_node_up", "gauge"},
    {"redisgo_task_redis_errors_total", "counter"},
    {"process_cpu_seconds_total", "counter"},
    {"process_open_fds", "gauge"},
    {"process_resident_memory_bytes", "gauge"},
    {"process_start_time_seconds", "gauge"},
};

/// Fixed process_* values, so that a render can be compared as text.
redisgo::metrics::ProcessStats fixed_process() {
  redisgo::metrics::ProcessStats p;
  p.start_time_seconds = 1700000000.25;
  p.cpu_seconds = 0.5;
  p.resident_bytes = 5242880;
  p.open_fds = 12;
  return p;
}

/// # TYPE lines of `text`: family -> type.
std::map<std::string, std::string> types_in(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    std::istringstream words(line.substr(7));
    std::string name, type;
    words >> name >> type;
    out[name] = type;
  }
  return out;
}

/// A Metrics through everything that adds a series: every family of kFamilies is there.
void exercise(Metrics& m) {
  m.set_child_exit(0);
  m.set_renewal_refused("+pexpire");
  m.set_node_up("n:1", true);
  m.add_redis_error("n:1", "timeout");
}

}  // namespace

TEST(MetricsRender, FreshMetricsRenderExactly) {
  FakeClock clock;
  Metrics m("jobs:nightly", {"10.0.0.1:6379"}, clock, fixed_process);
  const std::string expected =
      "# HELP redisgo_task_build_info Always 1; the version of the running binary is a label.\n"
      "# TYPE redisgo_task_build_info gauge\n"
      "redisgo_task_build_info{key=\"jobs:nightly\",version=\"" REDISGO_TEST_VERSION "\"} 1\n"
      "# HELP redisgo_task_state 1 for what this daemon is doing now, 0 for the other states (standby, in_line, restart_guard, paused, leader, stepped_down, unreachable, credentials_refused, tls_failed, error_reply, renewal_refused).\n"
      "# TYPE redisgo_task_state gauge\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"standby\"} 1\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"in_line\"} 0\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"restart_guard\"} 0\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"paused\"} 0\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"leader\"} 0\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"stepped_down\"} 0\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"unreachable\"} 0\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"credentials_refused\"} 0\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"tls_failed\"} 0\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"error_reply\"} 0\n"
      "redisgo_task_state{key=\"jobs:nightly\",state=\"renewal_refused\"} 0\n"
      "# HELP redisgo_task_token Fencing token of the current or last lease (0 before the first).\n"
      "# TYPE redisgo_task_token gauge\n"
      "redisgo_task_token{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_lease_remaining_seconds Seconds until the local lease deadline; 0 when no lease is held.\n"
      "# TYPE redisgo_task_lease_remaining_seconds gauge\n"
      "redisgo_task_lease_remaining_seconds{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_acquisitions_total Leases acquired.\n"
      "# TYPE redisgo_task_acquisitions_total counter\n"
      "redisgo_task_acquisitions_total{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_config_info Always 1; the task's mode and limit are labels.\n"
      "# TYPE redisgo_task_config_info gauge\n"
      "redisgo_task_config_info{key=\"jobs:nightly\",mode=\"oneshot\",limit=\"1\"} 1\n"
      "# HELP redisgo_task_expire_seconds The lease's TTL (expire) in seconds.\n"
      "# TYPE redisgo_task_expire_seconds gauge\n"
      "redisgo_task_expire_seconds{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_once_per_seconds The configured once_per period in seconds; 0 when not set.\n"
      "# TYPE redisgo_task_once_per_seconds gauge\n"
      "redisgo_task_once_per_seconds{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_renewals_total Renewal rounds by result (confirmed by a quorum, failed, or lease lost).\n"
      "# TYPE redisgo_task_renewals_total counter\n"
      "redisgo_task_renewals_total{key=\"jobs:nightly\",result=\"confirmed\"} 0\n"
      "redisgo_task_renewals_total{key=\"jobs:nightly\",result=\"failed\"} 0\n"
      "redisgo_task_renewals_total{key=\"jobs:nightly\",result=\"lost\"} 0\n"
      "# HELP redisgo_task_renewal_duration_seconds Duration of a renewal round.\n"
      "# TYPE redisgo_task_renewal_duration_seconds histogram\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.0005\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.001\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.0025\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.005\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.01\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.025\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.05\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.1\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.25\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"0.5\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"1\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"2.5\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"5\"} 0\n"
      "redisgo_task_renewal_duration_seconds_bucket{key=\"jobs:nightly\",le=\"+Inf\"} 0\n"
      "redisgo_task_renewal_duration_seconds_sum{key=\"jobs:nightly\"} 0\n"
      "redisgo_task_renewal_duration_seconds_count{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_wait_seconds Time from the start of a wait for the lease to its acquisition.\n"
      "# TYPE redisgo_task_wait_seconds histogram\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"0.01\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"0.1\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"1\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"5\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"15\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"60\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"300\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"900\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"3600\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"14400\"} 0\n"
      "redisgo_task_wait_seconds_bucket{key=\"jobs:nightly\",le=\"+Inf\"} 0\n"
      "redisgo_task_wait_seconds_sum{key=\"jobs:nightly\"} 0\n"
      "redisgo_task_wait_seconds_count{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_line_length The waiting line's length as this daemon last saw it (fair = true): read when it joins, then at least its own place; max by (key) is the line's length.\n"
      "# TYPE redisgo_task_line_length gauge\n"
      "redisgo_task_line_length{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_line_position This daemon's place in the waiting line as of its last attempt (1 = next; 0 = not in line).\n"
      "# TYPE redisgo_task_line_position gauge\n"
      "redisgo_task_line_position{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_lease_losses_total Leases lost while held, by cause.\n"
      "# TYPE redisgo_task_lease_losses_total counter\n"
      "redisgo_task_lease_losses_total{key=\"jobs:nightly\",cause=\"deadline\"} 0\n"
      "redisgo_task_lease_losses_total{key=\"jobs:nightly\",cause=\"lost\"} 0\n"
      "redisgo_task_lease_losses_total{key=\"jobs:nightly\",cause=\"taken\"} 0\n"
      "# HELP redisgo_task_child_starts_total Child processes started.\n"
      "# TYPE redisgo_task_child_starts_total counter\n"
      "redisgo_task_child_starts_total{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_freezes_past_lease_total Times this host was frozen past its lease deadline with its child alive: the child may have overlapped the next holder.\n"
      "# TYPE redisgo_task_freezes_past_lease_total counter\n"
      "redisgo_task_freezes_past_lease_total{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_child_last_start_timestamp_seconds Unix time the last child started (0 before the first).\n"
      "# TYPE redisgo_task_child_last_start_timestamp_seconds gauge\n"
      "redisgo_task_child_last_start_timestamp_seconds{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_last_success_timestamp_seconds Unix time a child last exited 0 (0 before the first; a oneshot run carries the one its textfile had).\n"
      "# TYPE redisgo_task_last_success_timestamp_seconds gauge\n"
      "redisgo_task_last_success_timestamp_seconds{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_once_per_slots_skipped_total once_per slots that no host ran though nobody had run them, by reason (a oneshot run carries the count its textfile had).\n"
      "# TYPE redisgo_task_once_per_slots_skipped_total counter\n"
      "redisgo_task_once_per_slots_skipped_total{key=\"jobs:nightly\",reason=\"claim_failed\"} 0\n"
      "redisgo_task_once_per_slots_skipped_total{key=\"jobs:nightly\",reason=\"not_durable\"} 0\n"
      "redisgo_task_once_per_slots_skipped_total{key=\"jobs:nightly\",reason=\"restart_guard\"} 0\n"
      "# HELP redisgo_task_step_downs_total Times this daemon stepped down as leader, by cause.\n"
      "# TYPE redisgo_task_step_downs_total counter\n"
      "redisgo_task_step_downs_total{key=\"jobs:nightly\",cause=\"cannot_start\"} 0\n"
      "redisgo_task_step_downs_total{key=\"jobs:nightly\",cause=\"handover\"} 0\n"
      "redisgo_task_step_downs_total{key=\"jobs:nightly\",cause=\"health\"} 0\n"
      "redisgo_task_step_downs_total{key=\"jobs:nightly\",cause=\"pause\"} 0\n"
      "redisgo_task_step_downs_total{key=\"jobs:nightly\",cause=\"renewal_refused\"} 0\n"
      "redisgo_task_step_downs_total{key=\"jobs:nightly\",cause=\"restart_limit\"} 0\n"
      "# HELP redisgo_task_control_requests_total Operators' requests that reached this daemon, by kind (a handover asked of it as leader; a pause that began to hold it back; a resume that ended one before its time).\n"
      "# TYPE redisgo_task_control_requests_total counter\n"
      "redisgo_task_control_requests_total{key=\"jobs:nightly\",kind=\"handover\"} 0\n"
      "redisgo_task_control_requests_total{key=\"jobs:nightly\",kind=\"pause\"} 0\n"
      "redisgo_task_control_requests_total{key=\"jobs:nightly\",kind=\"resume\"} 0\n"
      "# HELP redisgo_task_textfile_write_errors_total Writes of the metrics textfile that failed (it then keeps what the last good write said).\n"
      "# TYPE redisgo_task_textfile_write_errors_total counter\n"
      "redisgo_task_textfile_write_errors_total{key=\"jobs:nightly\"} 0\n"
      "# HELP redisgo_task_node_up 1 if the Redis node answered the last request, else 0.\n"
      "# TYPE redisgo_task_node_up gauge\n"
      "redisgo_task_node_up{key=\"jobs:nightly\",node=\"10.0.0.1:6379\"} 0\n"
      "# HELP redisgo_task_redis_errors_total Failed calls and connections to each Redis node, by kind (unreachable, timeout, closed, protocol, auth, tls, reply).\n"
      "# TYPE redisgo_task_redis_errors_total counter\n"
      "redisgo_task_redis_errors_total{key=\"jobs:nightly\",node=\"10.0.0.1:6379\",kind=\"auth\"} 0\n"
      "redisgo_task_redis_errors_total{key=\"jobs:nightly\",node=\"10.0.0.1:6379\",kind=\"closed\"} 0\n"
      "redisgo_task_redis_errors_total{key=\"jobs:nightly\",node=\"10.0.0.1:6379\",kind=\"protocol\"} 0\n"
      "redisgo_task_redis_errors_total{key=\"jobs:nightly\",node=\"10.0.0.1:6379\",kind=\"reply\"} 0\n"
      "redisgo_task_redis_errors_total{key=\"jobs:nightly\",node=\"10.0.0.1:6379\",kind=\"timeout\"} 0\n"
      "redisgo_task_redis_errors_total{key=\"jobs:nightly\",node=\"10.0.0.1:6379\",kind=\"tls\"} 0\n"
      "redisgo_task_redis_errors_total{key=\"jobs:nightly\",node=\"10.0.0.1:6379\",kind=\"unreachable\"} 0\n"
      "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
      "# TYPE process_cpu_seconds_total counter\n"
      "process_cpu_seconds_total{key=\"jobs:nightly\"} 0.5\n"
      "# HELP process_open_fds Number of open file descriptors.\n"
      "# TYPE process_open_fds gauge\n"
      "process_open_fds{key=\"jobs:nightly\"} 12\n"
      "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
      "# TYPE process_resident_memory_bytes gauge\n"
      "process_resident_memory_bytes{key=\"jobs:nightly\"} 5242880\n"
      "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
      "# TYPE process_start_time_seconds gauge\n"
      "process_start_time_seconds{key=\"jobs:nightly\"} 1700000000.25\n";
  EXPECT_EQ(m.render(), expected);
  // No child has exited and no renewal was refused: those series are absent, not -1 or 0.
  EXPECT_EQ(m.render().find("redisgo_task_child_last_exit_code"), std::string::npos);
  EXPECT_EQ(m.render().find("redisgo_task_renewal_refused_info"), std::string::npos);
}

TEST(MetricsRender, UpdatedValuesAppearInTheirSeries) {
  FakeClock clock;
  Metrics m("k", {"a:1", "b:2", "a:1"}, clock);  // a duplicate node is reported once
  m.set_token(1700000000123456ULL);
  m.add_acquisition();
  m.add_acquisition();
  m.add_renewal("confirmed", 0.001);
  m.add_renewal("failed", 0.002);
  m.add_lease_loss("deadline");
  m.add_lease_loss("redis_down");  // a cause not known in advance gets its own series
  m.add_child_start();
  m.add_freeze_past_lease();
  m.set_child_exit(143);
  m.add_step_down("health");
  m.set_node_up("b:2", true);
  m.set_node_up("c:3", true);  // unknown: added

  std::string t = m.render();
  EXPECT_EQ(value_of(t, "redisgo_task_token{key=\"k\"}"), "1700000000123456");
  EXPECT_EQ(value_of(t, "redisgo_task_acquisitions_total{key=\"k\"}"), "2");
  EXPECT_EQ(value_of(t, "redisgo_task_renewals_total{key=\"k\",result=\"confirmed\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_renewals_total{key=\"k\",result=\"failed\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_renewals_total{key=\"k\",result=\"lost\"}"), "0");
  EXPECT_EQ(value_of(t, "redisgo_task_lease_losses_total{key=\"k\",cause=\"deadline\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_lease_losses_total{key=\"k\",cause=\"redis_down\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_child_starts_total{key=\"k\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_freezes_past_lease_total{key=\"k\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_child_last_exit_code{key=\"k\"}"), "143");
  EXPECT_EQ(value_of(t, "redisgo_task_step_downs_total{key=\"k\",cause=\"health\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_node_up{key=\"k\",node=\"a:1\"}"), "0");
  EXPECT_EQ(value_of(t, "redisgo_task_node_up{key=\"k\",node=\"b:2\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_node_up{key=\"k\",node=\"c:3\"}"), "1");
  // Configured order, then first seen; the duplicate is gone.
  const std::string up = "redisgo_task_node_up{key=\"k\",";
  auto a = t.find(up + "node=\"a:1\""), b = t.find(up + "node=\"b:2\""), c = t.find(up + "node=\"c:3\"");
  // A node first seen gets its Redis error series too, every kind at 0.
  EXPECT_EQ(value_of(t, "redisgo_task_redis_errors_total{key=\"k\",node=\"c:3\",kind=\"timeout\"}"), "0");
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(t.find(up + "node=\"a:1\"", a + 1), std::string::npos);
}

// redisgo_task_redis_errors_total: every kind of every configured node from the start, at 0;
// each failure counts under its node and kind; a counter handed to a connection outlives
// the Metrics it counts for (a connection of the renewal thread may be the last to go).
TEST(MetricsRender, RedisErrorsCountPerNodeAndKind) {
  FakeClock clock;
  auto m = std::make_unique<Metrics>("k", std::vector<std::string>{"a:1", "b:2"}, clock);
  auto v = [&](const std::string& node, const std::string& kind) {
    return value_of(m->render(), "redisgo_task_redis_errors_total{key=\"k\",node=\"" + node + "\",kind=\"" + kind + "\"}");
  };
  for (const char* kind : redisgo::metrics::kRedisErrorKinds) {
    EXPECT_EQ(v("a:1", kind), "0") << kind;
    EXPECT_EQ(v("b:2", kind), "0") << kind;
  }
  const std::string text = m->render();
  std::size_t series = 0;
  for (auto at = text.find("\nredisgo_task_redis_errors_total{"); at != std::string::npos;
       at = text.find("\nredisgo_task_redis_errors_total{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, 2 * redisgo::metrics::kRedisErrorKindCount) << "a fixed set of kinds per node:\n" << text;
  auto count_b = m->redis_error_counter("b:2");
  const auto version = m->version();
  count_b("unreachable");
  count_b("unreachable");
  m->add_redis_error("a:1", "timeout");
  EXPECT_GT(m->version(), version) << "a failure is a change: the textfile says it";
  EXPECT_EQ(v("b:2", "unreachable"), "2");
  EXPECT_EQ(v("a:1", "timeout"), "1");
  EXPECT_EQ(v("a:1", "unreachable"), "0");
  m->add_redis_error("c:3", "auth");  // a node not configured (a Cluster redirect's): added
  EXPECT_EQ(v("c:3", "auth"), "1");
  EXPECT_EQ(v("c:3", "reply"), "0");
  m.reset();
  count_b("closed");  // nothing left to show it, and nothing breaks
}

// redisgo_task_control_requests_total: handover, pause and resume from the start, at 0.
TEST(MetricsRender, ControlRequestsCountByKind) {
  FakeClock clock;
  Metrics m("k", {}, clock);
  for (const char* kind : redisgo::metrics::kControlKinds) {
    EXPECT_EQ(value_of(m.render(), std::string("redisgo_task_control_requests_total{key=\"k\",kind=\"") + kind + "\"}"),
              "0")
        << kind;
  }
  m.add_control_request("handover");
  m.add_control_request("resume");
  m.add_control_request("resume");
  const std::string t = m.render();
  EXPECT_EQ(value_of(t, "redisgo_task_control_requests_total{key=\"k\",kind=\"handover\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_control_requests_total{key=\"k\",kind=\"pause\"}"), "0");
  EXPECT_EQ(value_of(t, "redisgo_task_control_requests_total{key=\"k\",kind=\"resume\"}"), "2");
  EXPECT_EQ(m.render_record().find("redisgo_task_control_requests_total"), std::string::npos) << "a live series";
}

// redisgo_task_child_last_exit_code: absent until a child exits (0.1's -1 read as an exit
// code to a `!= 0` alert), then the last one, in the record too.
TEST(MetricsRender, ChildExitCodeIsAbsentUntilTheFirstExit) {
  FakeClock clock;
  Metrics m("k", {}, clock);
  EXPECT_EQ(m.render().find("redisgo_task_child_last_exit_code"), std::string::npos);
  EXPECT_EQ(m.render_record().find("redisgo_task_child_last_exit_code"), std::string::npos);
  m.set_child_exit(-1);  // what a child can exit with is never "none"
  EXPECT_EQ(value_of(m.render(), "redisgo_task_child_last_exit_code{key=\"k\"}"), "-1");
  m.set_child_exit(137);
  EXPECT_EQ(value_of(m.render(), "redisgo_task_child_last_exit_code{key=\"k\"}"), "137");
  EXPECT_EQ(value_of(m.render_record(), "redisgo_task_child_last_exit_code{key=\"k\"}"), "137");
  EXPECT_NE(m.render().find("# TYPE redisgo_task_child_last_exit_code gauge\n"), std::string::npos);
  for (const char* gone : {"redisgo_task_leader", "redisgo_task_cannot_acquire", "redisgo_task_child_last_exit_status",
                           "redisgo_task_renewals_refused", "redisgo_task_frozen_past_lease_total"}) {
    EXPECT_EQ(m.render().find(gone), std::string::npos) << gone << " was renamed or removed before 1.0";
  }
}

// The standard process metrics of this very process: present, and plausible.
TEST(MetricsRender, ProcessMetricsArePlausible) {
  Metrics m("k", {});
  const std::string t = m.render();
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string start = value_of(t, "process_start_time_seconds{key=\"k\"}");
  ASSERT_FALSE(start.empty()) << t;
  EXPECT_LE(std::stod(start), now + 1);
  EXPECT_GT(std::stod(start), now - 24 * 3600) << "this test process started today";
  const std::string rss = value_of(t, "process_resident_memory_bytes{key=\"k\"}");
  ASSERT_FALSE(rss.empty()) << t;
  EXPECT_GT(std::stod(rss), 1 << 20);
  EXPECT_LT(std::stod(rss), 64.0 * (1 << 30));
  const std::string fds = value_of(t, "process_open_fds{key=\"k\"}");
  ASSERT_FALSE(fds.empty()) << t;
  EXPECT_GE(std::stod(fds), 3);  // stdin, stdout, stderr
  EXPECT_EQ(fds.find('.'), std::string::npos) << "a whole count: " << fds;
  const std::string cpu = value_of(t, "process_cpu_seconds_total{key=\"k\"}");
  ASSERT_FALSE(cpu.empty()) << t;
  // Burn some CPU: the counter moves, never back.
  volatile double x = 0;
  for (int i = 0; i < 50'000'000; ++i) x = x + 1e-9 * i;
  EXPECT_GT(std::stod(value_of(m.render(), "process_cpu_seconds_total{key=\"k\"}")), std::stod(cpu));
  // Neither in a finished run's record: that process is gone.
  EXPECT_EQ(m.render_record().find("process_"), std::string::npos);
  // A probe that reads nothing (no /proc) leaves the families out.
  Metrics none("k", {}, redisgo::SystemClock::instance(), [] { return redisgo::metrics::ProcessStats{}; });
  EXPECT_EQ(none.render().find("process_"), std::string::npos);
}

// Renewals refused: the right is a label while the daemon holds back, and the series is gone
// once it no longer does (an alert on it then resolves); never in a oneshot run's record.
TEST(MetricsRender, RenewalsRefusedNamesTheRightWhileItLasts) {
  FakeClock clock;
  Metrics m("k", {}, clock);
  EXPECT_EQ(m.render().find("redisgo_task_renewal_refused_info"), std::string::npos);
  m.set_renewal_refused("+pexpire");
  EXPECT_EQ(value_of(m.render(), "redisgo_task_renewal_refused_info{key=\"k\",right=\"+pexpire\"}"), "1");
  EXPECT_NE(m.render().find("# TYPE redisgo_task_renewal_refused_info gauge\n"), std::string::npos);
  EXPECT_EQ(m.render_record().find("redisgo_task_renewal_refused_info"), std::string::npos);
  const auto version = m.version();
  m.set_renewal_refused("+pexpire");
  EXPECT_EQ(m.version(), version) << "no change, no textfile rewrite";
  m.set_renewal_refused(std::nullopt);
  EXPECT_EQ(m.render().find("redisgo_task_renewal_refused_info"), std::string::npos);
  EXPECT_NE(m.version(), version);
}

TEST(MetricsRender, EveryFamilyHasHelpAndTypeOnceBeforeItsSamples) {
  FakeClock clock;
  Metrics m("k", {}, clock);  // no node: redisgo_task_node_up has no sample at all
  m.set_child_exit(0);
  m.set_renewal_refused("+pexpire");
  std::string t = m.render();
  std::map<std::string, int> help, type;
  std::set<std::string> declared;
  std::istringstream in(t);
  std::string line;
  while (std::getline(in, line)) {
    ASSERT_FALSE(line.empty());
    std::istringstream words(line);
    std::string first, kind, name;
    words >> first;
    if (first == "#") {
      words >> kind >> name;
      if (kind == "HELP") ++help[name];
      if (kind == "TYPE") {
        ++type[name];
        declared.insert(name);
      }
      continue;
    }
    std::string sample = first.substr(0, first.find('{'));
    bool ok = declared.count(sample) != 0;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      std::string s(suffix);
      if (sample.size() > s.size() && sample.compare(sample.size() - s.size(), s.size(), s) == 0) {
        ok = ok || declared.count(sample.substr(0, sample.size() - s.size())) != 0;
      }
    }
    EXPECT_TRUE(ok) << "sample before its # TYPE: " << line;
  }
  for (const auto& [f, kind] : kFamilies) {
    EXPECT_EQ(help[f], 1) << f;
    EXPECT_EQ(type[f], 1) << f;
  }
  EXPECT_EQ(help.size(), kFamilies.size());
  EXPECT_EQ(type.size(), kFamilies.size());
  EXPECT_EQ(types_in(t), kFamilies) << "a family's type changed";
  EXPECT_NE(t.find("# TYPE redisgo_task_node_up gauge\n"), std::string::npos);
  EXPECT_EQ(t.find("redisgo_task_node_up{"), std::string::npos);
  // The textfile adds one family; a finished run's record only has families of render().
  const auto textfile = types_in(m.render_textfile(1));
  EXPECT_EQ(textfile.size(), kFamilies.size() + 1);
  EXPECT_EQ(textfile.at("redisgo_task_textfile_written_timestamp_seconds"), "gauge");
  for (const auto& [f, kind] : types_in(m.render_record())) EXPECT_EQ(kFamilies.at(f), kind) << f;
}

// Prometheus' naming conventions (prometheus.io, "Metric and label naming"), checked on what
// the binary exports: one prefix; base units named as a suffix; `_total` on counters and only
// there; `_info` gauges that are always 1; no unit in a label's name; every series carries
// key; the daemon's own label values from a fixed set (a value made of data would make a
// series per value).
TEST(MetricsRender, NamesFollowPrometheusConventions) {
  FakeClock clock;
  Metrics m("k", {"n:1"}, clock);
  exercise(m);
  const std::string text = m.render_textfile(1);
  const auto types = types_in(text);
  const std::regex name_re("(redisgo_task|process)_[a-z0-9_]+");
  for (const auto& [name, type] : types) {
    EXPECT_TRUE(std::regex_match(name, name_re)) << name;
    const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(total, type == "counter") << name << " (" << type << "): `_total` is for counters, and every counter has it";
    for (const char* unit : {"_ms", "_millis", "milliseconds", "_minutes", "_kb", "_mb", "_percent"}) {
      EXPECT_EQ(name.find(unit), std::string::npos) << name << ": base units (seconds, bytes)";
    }
    if (name.find("seconds") != std::string::npos) {
      EXPECT_TRUE(std::regex_search(name, std::regex("_seconds(_total)?$"))) << name << ": the unit comes last";
    }
    for (const char* reserved : {"_bucket", "_sum", "_count"}) {
      EXPECT_FALSE(std::regex_search(name, std::regex(std::string(reserved) + "$"))) << name;
    }
  }
  const std::map<std::string, std::set<std::string>> bounded{
      {"state",
       {"standby", "in_line", "restart_guard", "paused", "leader", "stepped_down", "unreachable", "credentials_refused",
        "tls_failed", "error_reply", "renewal_refused"}},
      {"result", {"confirmed", "failed", "lost"}},
      {"reason", {"claim_failed", "not_durable", "restart_guard"}},
      {"mode", {"oneshot", "supervise"}},
  };
  const std::map<std::string, std::set<std::string>> kinds{
      {"redisgo_task_redis_errors_total", {"auth", "closed", "protocol", "reply", "timeout", "tls", "unreachable"}},
      {"redisgo_task_control_requests_total", {"handover", "pause", "resume"}},
      {"redisgo_task_lease_losses_total", {"deadline", "lost", "taken"}},
      {"redisgo_task_step_downs_total",
       {"cannot_start", "handover", "health", "pause", "renewal_refused", "restart_limit"}},
  };
  const std::regex sample_re(R"(^([a-z_0-9]+)\{(.*)\} (\S+)$)");
  const std::regex label_re(R"re(([a-z_]+)="([^"]*)")re");
  std::istringstream in(text);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) continue;
    std::smatch sm;
    ASSERT_TRUE(std::regex_match(line, sm, sample_re)) << "every sample has labels, key first: " << line;
    ++samples;
    const std::string name = sm[1], labels = sm[2], value = sm[3];
    EXPECT_EQ(labels.rfind("key=\"k\"", 0), 0u) << line;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, "_info") == 0) {
      EXPECT_EQ(value, "1") << line;
    }
    for (std::sregex_iterator it(labels.begin(), labels.end(), label_re), stop; it != stop; ++it) {
      const std::string label = (*it)[1], v = (*it)[2];
      EXPECT_FALSE(std::regex_search(label, std::regex("(seconds|bytes|_ms|total)$"))) << line << ": a unit in a label";
      if (auto b = bounded.find(label); b != bounded.end()) {
        EXPECT_TRUE(b->second.contains(v)) << line;
      }
      if (label == "kind" || label == "cause") {
        EXPECT_TRUE(kinds.at(name).contains(v)) << line;
      }
    }
  }
  EXPECT_GT(samples, 60);
}

TEST(MetricsRender, EscapesLabelValues) {
  FakeClock clock;
  Metrics m("a\"b\\c\nd", {"n\"1"}, clock);
  m.add_lease_loss("x\ny");
  std::string t = m.render();
  EXPECT_EQ(value_of(t, "redisgo_task_token{key=\"a\\\"b\\\\c\\nd\"}"), "0") << t;
  EXPECT_EQ(value_of(t, "redisgo_task_node_up{key=\"a\\\"b\\\\c\\nd\",node=\"n\\\"1\"}"), "0") << t;
  EXPECT_EQ(value_of(t, "redisgo_task_lease_losses_total{key=\"a\\\"b\\\\c\\nd\",cause=\"x\\ny\"}"), "1") << t;
  // No raw newline survives inside a sample: every line starts a comment or a metric name.
  std::istringstream in(t);
  std::string line;
  while (std::getline(in, line)) {
    EXPECT_TRUE(line.rfind("redisgo_task_", 0) == 0 || line.rfind("process_", 0) == 0 || line.rfind("# ", 0) == 0)
        << line;
  }
}

TEST(MetricsRender, HistogramBucketsAreCumulativeAndInclusive) {
  FakeClock clock;
  Metrics m("k", {}, clock);
  const std::string b = "redisgo_task_renewal_duration_seconds_bucket{key=\"k\",le=\"";
  m.add_renewal("confirmed", 0.0005);  // on a bound: counts in that bucket (le = "<=")
  m.add_renewal("confirmed", 0.0006);  // -> 0.001
  m.add_renewal("confirmed", 0.25);    // on a bound
  m.add_renewal("failed", 5);          // the last finite bound
  m.add_renewal("failed", 7.5);        // only +Inf
  std::string t = m.render();
  EXPECT_EQ(value_of(t, b + "0.0005\"}"), "1");
  EXPECT_EQ(value_of(t, b + "0.001\"}"), "2");
  EXPECT_EQ(value_of(t, b + "0.1\"}"), "2");
  EXPECT_EQ(value_of(t, b + "0.25\"}"), "3");
  EXPECT_EQ(value_of(t, b + "2.5\"}"), "3");
  EXPECT_EQ(value_of(t, b + "5\"}"), "4");
  EXPECT_EQ(value_of(t, b + "+Inf\"}"), "5");
  EXPECT_EQ(value_of(t, "redisgo_task_renewal_duration_seconds_count{key=\"k\"}"), "5");
  EXPECT_DOUBLE_EQ(std::stod(value_of(t, "redisgo_task_renewal_duration_seconds_sum{key=\"k\"}")),
                   0.0005 + 0.0006 + 0.25 + 5 + 7.5);
  EXPECT_EQ(value_of(t, "redisgo_task_renewals_total{key=\"k\",result=\"confirmed\"}"), "3");
  EXPECT_EQ(value_of(t, "redisgo_task_renewals_total{key=\"k\",result=\"failed\"}"), "2");
}

TEST(MetricsRender, HistogramSumIsExactForRepresentableValues) {
  FakeClock clock;
  Metrics m("k", {}, clock);
  m.add_renewal("confirmed", 0.25);
  m.add_renewal("confirmed", 0.5);
  m.add_renewal("confirmed", 4);
  EXPECT_EQ(value_of(m.render(), "redisgo_task_renewal_duration_seconds_sum{key=\"k\"}"), "4.75");
}

TEST(MetricsRender, NonsenseDurationsCountAsZero) {
  FakeClock clock;
  Metrics m("k", {}, clock);
  m.add_renewal("confirmed", -1);
  m.add_renewal("confirmed", std::numeric_limits<double>::quiet_NaN());
  m.add_renewal("confirmed", std::numeric_limits<double>::infinity());
  std::string t = m.render();
  EXPECT_EQ(value_of(t, "redisgo_task_renewal_duration_seconds_bucket{key=\"k\",le=\"0.0005\"}"), "3");
  EXPECT_EQ(value_of(t, "redisgo_task_renewal_duration_seconds_sum{key=\"k\"}"), "0");
  EXPECT_EQ(value_of(t, "redisgo_task_renewal_duration_seconds_count{key=\"k\"}"), "3");
}

TEST(MetricsRender, RemainingSecondsFollowTheClock) {
  FakeClock clock;
  Metrics m("k", {}, clock);
  const std::string s = "redisgo_task_lease_remaining_seconds{key=\"k\"}";
  EXPECT_EQ(value_of(m.render(), s), "0");
  m.set_lease_deadline(clock.now() + 2500ms);
  EXPECT_EQ(value_of(m.render(), s), "2.5");
  clock.advance(1s);
  EXPECT_EQ(value_of(m.render(), s), "1.5");
  clock.advance(1499ms + 500us);
  EXPECT_EQ(value_of(m.render(), s), "0.001");  // rounded up: a live lease never reads 0
  clock.advance(1ms);
  EXPECT_EQ(value_of(m.render(), s), "0");  // past: 0, never negative
  clock.advance(1h);
  EXPECT_EQ(value_of(m.render(), s), "0");
  m.set_lease_deadline(clock.now() + 30s);
  EXPECT_EQ(value_of(m.render(), s), "30");
  m.set_lease_deadline(std::nullopt);
  EXPECT_EQ(value_of(m.render(), s), "0");
}

TEST(MetricsRender, VersionMovesOnlyWhenAValueChanges) {
  FakeClock clock;
  Metrics m("k", {"n"}, clock);
  auto v = m.version();
  m.set_state(State::kStandby);
  m.set_token(0);
  m.set_node_up("n", false);
  m.set_lease_deadline(std::nullopt);
  EXPECT_EQ(m.version(), v);
  m.set_state(State::kLeader);
  EXPECT_GT(m.version(), v);
  v = m.version();
  m.set_state(State::kLeader);
  EXPECT_EQ(m.version(), v);
  m.set_child_exit(3);
  EXPECT_GT(m.version(), v);
  v = m.version();
  m.set_child_exit(3);
  EXPECT_EQ(m.version(), v);
  m.set_lease_deadline(clock.now() + 1s);
  EXPECT_GT(m.version(), v);
  v = m.version();
  clock.advance(1s);  // time alone is not a change (the textfile refresh covers it)
  EXPECT_EQ(m.version(), v);
  for (auto update : std::vector<std::function<void()>>{
           [&] { m.set_token(7); }, [&] { m.add_acquisition(); }, [&] { m.add_renewal("confirmed", 0.001); },
           [&] { m.add_lease_loss("lost"); }, [&] { m.add_child_start(); }, [&] { m.add_freeze_past_lease(); }, [&] { m.set_child_exit(0); },
           [&] { m.add_step_down("health"); }, [&] { m.set_node_up("n", true); }, [&] { m.set_node_up("new", false); },
           [&] { m.add_redis_error("n", "timeout"); }, [&] { m.redis_error_counter("n")("closed"); },
           [&] { m.add_control_request("pause"); }, [&] { m.set_renewal_refused("+pexpire"); }}) {
    v = m.version();
    update();
    EXPECT_GT(m.version(), v);
  }
}

// Two updater threads (the main loop and the renewal thread) against a renderer; under
// TSan this is the data-race check, and every render stays self-consistent.
TEST(MetricsRender, ConcurrentUpdatesAndRenders) {
  Metrics m("k", {"a", "b"});
  constexpr int kRounds = 5000;
  std::atomic<int> finished{0};
  std::latch start(3);  // all three begin together, so renders overlap the updates
  auto count_a = m.redis_error_counter("a");
  std::thread renewal([&] {
    start.arrive_and_wait();
    for (int i = 0; i < kRounds; ++i) {
      m.add_renewal(i % 3 == 0 ? "failed" : "confirmed", 0.001 * (i % 10));
      m.set_lease_deadline(redisgo::SystemClock::instance().now() + 10s);
      m.set_node_up(i % 2 ? "a" : "b", i % 4 < 2);
      count_a("timeout");  // the renewal thread's own connection failing
    }
    ++finished;
  });
  std::thread main_loop([&] {
    start.arrive_and_wait();
    for (int i = 0; i < kRounds; ++i) {
      m.set_state(i % 2 == 0 ? State::kLeader : State::kStandby);
      m.add_redis_error("b", "unreachable");
      m.set_token(static_cast<std::uint64_t>(i));
      m.add_child_start();
      m.set_child_exit(i % 256);
      m.add_lease_loss("lost");
      m.add_step_down("handover");
    }
    ++finished;
  });
  int renders = 0;
  // The updaters run bounded loops; the renderer keeps going until both are done.
  start.arrive_and_wait();
  do {
    std::string t = m.render();
    ++renders;
    // _count and +Inf come from one critical section: they always agree.
    EXPECT_EQ(value_of(t, "redisgo_task_renewal_duration_seconds_count{key=\"k\"}"),
              value_of(t, "redisgo_task_renewal_duration_seconds_bucket{key=\"k\",le=\"+Inf\"}"));
  } while (finished.load() < 2);
  renewal.join();
  main_loop.join();
  std::string t = m.render();
  EXPECT_EQ(value_of(t, "redisgo_task_renewals_total{key=\"k\",result=\"failed\"}"), std::to_string((kRounds + 2) / 3));
  EXPECT_EQ(value_of(t, "redisgo_task_lease_losses_total{key=\"k\",cause=\"lost\"}"), std::to_string(kRounds));
  EXPECT_EQ(value_of(t, "redisgo_task_renewal_duration_seconds_count{key=\"k\"}"), std::to_string(kRounds));
  EXPECT_EQ(value_of(t, "redisgo_task_child_starts_total{key=\"k\"}"), std::to_string(kRounds));
  EXPECT_EQ(value_of(t, "redisgo_task_redis_errors_total{key=\"k\",node=\"a\",kind=\"timeout\"}"), std::to_string(kRounds));
  EXPECT_EQ(value_of(t, "redisgo_task_redis_errors_total{key=\"k\",node=\"b\",kind=\"unreachable\"}"),
            std::to_string(kRounds));
  EXPECT_GT(renders, 0);
}

// redisgo_task_state: every state has a series, exactly one of them is 1.
TEST(MetricsRender, StateIsOneHotOverEveryState) {
  FakeClock clock;
  Metrics m("k", {}, clock);
  const std::vector<std::string> names{"standby",      "in_line",     "restart_guard",       "paused",
                                       "leader",       "stepped_down", "unreachable",        "credentials_refused",
                                       "tls_failed",   "error_reply",  "renewal_refused"};
  ASSERT_EQ(names.size(), redisgo::metrics::kStateCount);
  for (std::size_t now = 0; now < names.size(); ++now) {
    m.set_state(static_cast<State>(now));
    EXPECT_EQ(m.state(), static_cast<State>(now));
    EXPECT_EQ(to_string(static_cast<State>(now)), names[now]);
    const std::string t = m.render();
    for (std::size_t i = 0; i < names.size(); ++i) {
      EXPECT_EQ(value_of(t, "redisgo_task_state{key=\"k\",state=\"" + names[i] + "\"}"), i == now ? "1" : "0")
          << names[now] << " / " << names[i];
    }
  }
  const auto version = m.version();
  m.set_state(m.state());
  EXPECT_EQ(m.version(), version) << "no change, no textfile rewrite";
}

TEST(MetricsRender, CannotAcquireCausesMapToTheirStates) {
  using redisgo::metrics::state_of_cause;
  EXPECT_EQ(state_of_cause(""), std::nullopt);
  EXPECT_EQ(state_of_cause("unreachable"), State::kUnreachable);
  EXPECT_EQ(state_of_cause("credentials"), State::kCredentialsRefused);
  EXPECT_EQ(state_of_cause("tls"), State::kTlsFailed);
  EXPECT_EQ(state_of_cause("error"), State::kErrorReply);
  EXPECT_EQ(state_of_cause("something new"), State::kErrorReply);
}

TEST(MetricsRender, BuildConfigAndRunSeries) {
  FakeClock clock;
  Metrics m("k", {}, clock);
  std::string t = m.render();
  EXPECT_NE(t.find("redisgo_task_build_info{key=\"k\",version=\"" REDISGO_TEST_VERSION "\"} 1\n"), std::string::npos) << t;
  EXPECT_EQ(value_of(t, "redisgo_task_config_info{key=\"k\",mode=\"oneshot\",limit=\"1\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_expire_seconds{key=\"k\"}"), "0");
  EXPECT_EQ(value_of(t, "redisgo_task_once_per_seconds{key=\"k\"}"), "0");
  EXPECT_EQ(value_of(t, "redisgo_task_last_success_timestamp_seconds{key=\"k\"}"), "0");
  EXPECT_EQ(value_of(t, "redisgo_task_child_last_start_timestamp_seconds{key=\"k\"}"), "0");
  EXPECT_EQ(value_of(t, "redisgo_task_line_position{key=\"k\"}"), "0");

  m.configure({"supervise", 3, 10.5, 3600});
  m.set_last_start(1700000000.5);
  m.set_last_success(1700000090.25);
  m.set_line_position(4);
  t = m.render();
  EXPECT_EQ(value_of(t, "redisgo_task_config_info{key=\"k\",mode=\"supervise\",limit=\"3\"}"), "1");
  EXPECT_EQ(value_of(t, "redisgo_task_expire_seconds{key=\"k\"}"), "10.5");
  EXPECT_EQ(value_of(t, "redisgo_task_once_per_seconds{key=\"k\"}"), "3600");
  EXPECT_EQ(value_of(t, "redisgo_task_child_last_start_timestamp_seconds{key=\"k\"}"), "1700000000.5");
  EXPECT_EQ(value_of(t, "redisgo_task_last_success_timestamp_seconds{key=\"k\"}"), "1700000090.25");
  EXPECT_EQ(value_of(t, "redisgo_task_line_position{key=\"k\"}"), "4");
  EXPECT_EQ(t.find("redisgo_task_textfile_written_timestamp_seconds"), std::string::npos) << "a textfile-only series";
}

// The textfile adds its written timestamp; the record of a finished oneshot run keeps only
// what describes the run.
TEST(MetricsRender, TextfileAndRecordTexts) {
  FakeClock clock;
  Metrics m("k", {"n:1"}, clock, fixed_process);
  m.set_state(State::kLeader);
  m.set_child_exit(0);
  m.set_last_success(1700000000);
  const std::string tf = m.render_textfile(1700000100.5);
  EXPECT_EQ(tf.substr(0, m.render().size()), m.render());
  EXPECT_EQ(value_of(tf, "redisgo_task_textfile_written_timestamp_seconds{key=\"k\"}"), "1700000100.5");
  EXPECT_NE(tf.find("# TYPE redisgo_task_textfile_written_timestamp_seconds gauge\n"), std::string::npos);

  const std::string rec = m.render_record();
  for (const char* kept : {"redisgo_task_build_info{", "redisgo_task_config_info{", "redisgo_task_expire_seconds{",
                           "redisgo_task_once_per_seconds{", "redisgo_task_child_last_exit_code{",
                           "redisgo_task_child_last_start_timestamp_seconds{",
                           "redisgo_task_last_success_timestamp_seconds{"}) {
    EXPECT_NE(rec.find(std::string("\n") + kept), std::string::npos) << kept << "\n" << rec;
  }
  for (const char* gone : {"redisgo_task_state", "redisgo_task_node_up", "redisgo_task_redis_errors_total",
                           "redisgo_task_textfile_written_timestamp_seconds", "redisgo_task_lease_remaining_seconds",
                           "redisgo_task_control_requests_total", "redisgo_task_line_length", "process_"}) {
    EXPECT_EQ(rec.find(gone), std::string::npos) << gone << "\n" << rec;
  }
  EXPECT_EQ(value_of(rec, "redisgo_task_last_success_timestamp_seconds{key=\"k\"}"), "1700000000");
}

// A cron job's runs are processes of their own: each takes the last success from the file
// the run before it left, for its own key only, and never goes back in time.
TEST(MetricsRender, LastSuccessIsRestoredFromAPreviousTextfile) {
  FakeClock clock;
  Metrics before("jobs:\"x\"", {}, clock);
  before.set_last_success(1700000000.75);
  const std::string previous = before.render_record() + Metrics("other", {}, clock).render_record();

  Metrics m("jobs:\"x\"", {}, clock);
  EXPECT_TRUE(m.restore_last_success(previous));
  EXPECT_EQ(value_of(m.render(), "redisgo_task_last_success_timestamp_seconds{key=\"jobs:\\\"x\\\"\"}"), "1700000000.75");
  EXPECT_FALSE(m.restore_last_success(previous)) << "not newer";
  m.set_last_success(1800000000);
  EXPECT_FALSE(m.restore_last_success(previous)) << "an older value never replaces ours";

  Metrics other("other", {}, clock);
  EXPECT_FALSE(other.restore_last_success(previous)) << "its value is 0: nothing to restore";
  Metrics third("third", {}, clock);
  EXPECT_FALSE(third.restore_last_success(previous)) << "no line for this key";
  EXPECT_FALSE(third.restore_last_success(""));
  for (const char* bad : {"redisgo_task_last_success_timestamp_seconds{key=\"third\"} x\n",
                          "redisgo_task_last_success_timestamp_seconds{key=\"third\"} 12abc\n",
                          "redisgo_task_last_success_timestamp_seconds{key=\"third\"} NaN\n",
                          "redisgo_task_last_success_timestamp_seconds{key=\"third\"} -5\n",
                          // What std::from_chars refused, which strtod would take: hex, a sign,
                          // leading blanks; and what overflows a double.
                          "redisgo_task_last_success_timestamp_seconds{key=\"third\"} 0x1p30\n",
                          "redisgo_task_last_success_timestamp_seconds{key=\"third\"} +5\n",
                          "redisgo_task_last_success_timestamp_seconds{key=\"third\"}  5\n",
                          "redisgo_task_last_success_timestamp_seconds{key=\"third\"} 1e999\n",
                          "# redisgo_task_last_success_timestamp_seconds{key=\"third\"} 5\n"}) {
    EXPECT_FALSE(third.restore_last_success(bad)) << bad;
  }
  EXPECT_EQ(value_of(third.render(), "redisgo_task_last_success_timestamp_seconds{key=\"third\"}"), "0");
  EXPECT_TRUE(third.restore_last_success("redisgo_task_last_success_timestamp_seconds{key=\"third\"} 1.7e9\n"));
  EXPECT_EQ(value_of(third.render(), "redisgo_task_last_success_timestamp_seconds{key=\"third\"}"), "1700000000");
}

// once_per slots skipped (redisgo_task(1), METRICS): every reason at 0 from the start, in the
// record a oneshot run leaves, and carried from run to run so that the count only grows on a
// host (each cron run is a process of its own) and increase() sees every skip.
TEST(MetricsRender, SkippedOncePerSlotsAreInTheRecordAndCarriedAcrossRuns) {
  FakeClock clock;
  Metrics first("nightly", {}, clock);
  for (const char* reason : {"restart_guard", "not_durable", "claim_failed"}) {
    EXPECT_EQ(value_of(first.render(), std::string("redisgo_task_once_per_slots_skipped_total{key=\"nightly\",reason=\"") +
                                           reason + "\"}"),
              "0")
        << reason;
  }
  first.add_once_skipped("restart_guard");
  const std::string previous = first.render_record();
  EXPECT_EQ(value_of(previous, "redisgo_task_once_per_slots_skipped_total{key=\"nightly\",reason=\"restart_guard\"}"), "1")
      << previous;
  EXPECT_NE(previous.find("# TYPE redisgo_task_once_per_slots_skipped_total counter\n"), std::string::npos);

  Metrics second("nightly", {}, clock);
  EXPECT_TRUE(second.restore_once_skipped(previous));
  second.add_once_skipped("restart_guard");
  EXPECT_EQ(second.once_skipped("restart_guard"), 2u);
  EXPECT_EQ(second.once_skipped("not_durable"), 0u);
  EXPECT_FALSE(second.restore_once_skipped(previous)) << "an older count never replaces ours";
  Metrics other("other", {}, clock);
  EXPECT_FALSE(other.restore_once_skipped(previous)) << "another key's line";
  EXPECT_FALSE(other.restore_once_skipped(
      "redisgo_task_once_per_slots_skipped_total{key=\"other\",reason=\"restart_guard\"} -3\n"));
  EXPECT_FALSE(other.restore_once_skipped(
      "redisgo_task_once_per_slots_skipped_total{key=\"other\",reason=\"restart_guard\"} 1e3\n"));
}

}  // namespace metrics_render_test
