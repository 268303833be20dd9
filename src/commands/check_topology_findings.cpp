// Where Sentinel or Cluster says the key lives: what the sentinels (a majority of them)
// and the cluster's seeds answered, judged.
#include "commands/check_findings.h"
#include "commands/check_findings_detail.h"

namespace redisgo::commands::check {

using detail::and_list;

SentinelView sentinel_findings(const redis::SentinelReport& report, const std::string& master_name, int wait_replicas) {
  SentinelView view;
  const std::size_t n = report.answers.size();
  const std::size_t majority = n / 2 + 1;
  std::map<std::string, std::size_t> votes;
  std::vector<std::string> named;  // in answer order, distinct
  for (const auto& a : report.answers) {
    if (!a.reachable) {
      view.findings.push_back(make(Level::kWarn, "sentinel", a.sentinel, "unreachable: " + a.error,
                                   "bring it back: with fewer sentinels answering, a failover and the daemon's search "
                                   "for the master depend on the rest"));
    } else if (!a.master) {
      view.findings.push_back(make(Level::kFail, "sentinel", a.sentinel, a.error,
                                   "check sentinel_master against SENTINEL MASTERS on this sentinel"));
    } else if (votes[a.master->str()]++ == 0) {
      named.push_back(a.master->str());
    }
  }
  std::string best;
  std::size_t best_votes = 0;
  for (const auto& m : named) {
    if (votes[m] > best_votes) {
      best = m;
      best_votes = votes[m];
    }
  }
  const std::string counts = std::to_string(best_votes) + " of " + std::to_string(n) + " sentinels";
  Finding f;
  if (best_votes < majority) {
    std::string said;
    for (const auto& m : named) said += (said.empty() ? "" : ", ") + m + " (" + std::to_string(votes[m]) + ")";
    f = make(Level::kFail, "sentinels", "",
             "no majority (" + std::to_string(majority) + " of " + std::to_string(n) + ") of the sentinels names one master for '" +
                 master_name + "'" + (said.empty() ? std::string(": none names one") : ": they name " + said),
             "bring the sentinels back and check that they monitor '" + master_name +
                 "' (SENTINEL MASTERS); the daemon follows only a majority");
    view.findings.push_back(std::move(f));
    return view;
  }
  for (const auto& a : report.answers) {
    if (a.master && a.master->str() == best) {
      view.master = a.master;
      break;
    }
  }
  if (named.size() > 1) {
    std::string said;
    for (const auto& a : report.answers) {
      if (a.master) said += (said.empty() ? "" : ", ") + a.sentinel + " names " + a.master->str();
    }
    f = make(Level::kWarn, "sentinels", "",
             "the sentinels disagree about '" + master_name + "' (" + said + "); the daemon follows the majority's " + best,
             "a failover may be in progress: run check again; if it persists, compare SENTINEL MASTERS on each "
             "sentinel");
  } else {
    f = make(Level::kOk, "sentinels", "", counts + " name " + best + " as master '" + master_name + "'");
  }
  f.fields.emplace_back("master", json_quote(best));
  f.fields.emplace_back("votes", std::to_string(best_votes));
  view.findings.push_back(std::move(f));

  // Replicas that the master's sentinels list and that look usable.
  std::vector<std::string> replicas;
  for (const auto& a : report.answers) {
    if (a.master && a.master->str() == best) {
      replicas = a.replicas;
      break;
    }
  }
  int healthy = 0;
  for (const auto& r : replicas) {
    const bool down = r.find("s_down") != std::string::npos || r.find("o_down") != std::string::npos ||
                      r.find("disconnected") != std::string::npos || r.find("link ok") == std::string::npos;
    healthy += down ? 0 : 1;
  }
  if (wait_replicas > 0 && healthy < wait_replicas) {
    view.findings.push_back(make(Level::kFail, "replicas", best,
                                 std::to_string(healthy) + " healthy replica(s) of " + std::to_string(replicas.size()) +
                                     ", but sentinel_wait_replicas = " + std::to_string(wait_replicas) +
                                     ": every acquisition would wait out io_timeout and be undone",
                                 "add replicas, or lower sentinel_wait_replicas"));
  } else if (replicas.empty()) {
    view.findings.push_back(make(Level::kWarn, "replicas", best, "the sentinels know no replica: a failover has nowhere to go",
                                 "add a replica (replicaof " + best + ")"));
  } else {
    view.findings.push_back(make(Level::kOk, "replicas", best,
                                 std::to_string(healthy) + " healthy of " + std::to_string(replicas.size()) + ": " +
                                     and_list(replicas)));
  }
  return view;
}

ClusterView cluster_findings(const redis::ClusterReport& report, const std::string& key) {
  ClusterView view;
  for (const auto& e : report.errors) {
    view.findings.push_back(make(Level::kWarn, "cluster", "", "seed " + e,
                                 "fix or replace this entry of cluster_nodes: the map is learnt from the seeds"));
  }
  Finding f;
  if (!report.owner) {
    f = make(Level::kFail, "cluster", "",
             "no seed named the owner of slot " + std::to_string(report.slot) + " (key " + key + ")",
             "check cluster_nodes and the cluster's state (CLUSTER INFO: cluster_state, CLUSTER SLOTS)");
  } else {
    view.owner = report.owner;
    f = make(Level::kOk, "cluster", "",
             "slot " + std::to_string(report.slot) + " (key " + key + ") is served by " + report.owner->str() +
                 (report.owner_id.empty() ? std::string() : " (" + report.owner_id + ")") +
                 (report.replicas.empty() ? std::string(", no replicas") : ", replicas " + and_list(report.replicas)) +
                 ", map from " + report.answered_by);
    f.fields.emplace_back("owner", json_quote(report.owner->str()));
  }
  f.fields.emplace_back("slot", std::to_string(report.slot));
  view.findings.push_back(std::move(f));
  return view;
}

}  // namespace redisgo::commands::check
