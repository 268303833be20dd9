// Where Sentinel or Cluster says the key lives: what the sentinels (a majority of them)
// and the cluster's seeds answered, judged.
#include <cctype>

#include "commands/check_findings.h"
#include "commands/check_findings_detail.h"

namespace redisgo::commands::check {

using detail::and_list;

namespace {

/// How the sentinels that answered voted: the masters they name and the one most of them
/// name (the first named, on a tie).
struct Votes {
  std::map<std::string, std::size_t> count;
  std::vector<std::string> named;  // in answer order, distinct
  std::string best;
  std::size_t best_votes = 0;
};

/// The votes, and a finding for each sentinel that names no master (unreachable, or it
/// does not know sentinel_master).
Votes count_votes(const redis::SentinelReport& report, std::vector<Finding>& findings) {
  Votes v;
  for (const auto& a : report.answers) {
    if (!a.reachable) {
      findings.push_back(make(Level::kWarn, "sentinel", a.sentinel, "unreachable: " + a.error,
                              "bring it back: with fewer sentinels answering, a failover and the daemon's search "
                              "for the master depend on the rest"));
    } else if (!a.master) {
      findings.push_back(make(Level::kFail, "sentinel", a.sentinel, a.error,
                              "check sentinel_master against SENTINEL MASTERS on this sentinel"));
    } else if (v.count[a.master->str()]++ == 0) {
      v.named.push_back(a.master->str());
    }
  }
  for (const auto& m : v.named) {
    if (v.count[m] > v.best_votes) {
      v.best = m;
      v.best_votes = v.count[m];
    }
  }
  return v;
}

/// No majority names one master: the daemon would follow none.
Finding no_majority_finding(const Votes& v, std::size_t n, std::size_t majority, const std::string& master_name) {
  std::string said;
  for (const auto& m : v.named) said += (said.empty() ? "" : ", ") + m + " (" + std::to_string(v.count.at(m)) + ")";
  return make(Level::kFail, "sentinels", "",
              "no majority (" + std::to_string(majority) + " of " + std::to_string(n) + ") of the sentinels names one master for '" +
                  master_name + "'" + (said.empty() ? std::string(": none names one") : ": they name " + said),
              "bring the sentinels back and check that they monitor '" + master_name +
                  "' (SENTINEL MASTERS); the daemon follows only a majority");
}

/// The master a majority names: ok when no sentinel names another, else warn.
Finding majority_finding(const redis::SentinelReport& report, const Votes& v, const std::string& master_name) {
  const std::string counts = std::to_string(v.best_votes) + " of " + std::to_string(report.answers.size()) + " sentinels";
  Finding f;
  if (v.named.size() > 1) {
    std::string said;
    for (const auto& a : report.answers) {
      if (a.master) said += (said.empty() ? "" : ", ") + a.sentinel + " names " + a.master->str();
    }
    f = make(Level::kWarn, "sentinels", "",
             "the sentinels disagree about '" + master_name + "' (" + said + "); the daemon follows the majority's " + v.best,
             "a failover may be in progress: run check again; if it persists, compare SENTINEL MASTERS on each "
             "sentinel");
  } else {
    f = make(Level::kOk, "sentinels", "", counts + " name " + v.best + " as master '" + master_name + "'");
  }
  f.fields.emplace_back("master", json_quote(v.best));
  f.fields.emplace_back("votes", std::to_string(v.best_votes));
  return f;
}

/// The first sentinel's answer that names `master`; null when none does.
const redis::SentinelReport::Answer* first_naming(const redis::SentinelReport& report, const std::string& master) {
  for (const auto& a : report.answers) {
    if (a.master && a.master->str() == master) return &a;
  }
  return nullptr;
}

}  // namespace

Finding replica_finding(const std::vector<std::string>& replicas, const std::string& replicas_error,
                        const std::string& master, int wait_replicas, std::optional<int> online_on_master) {
  int healthy = 0;
  for (const auto& r : replicas) {
    const bool down = r.find("s_down") != std::string::npos || r.find("o_down") != std::string::npos ||
                      r.find("disconnected") != std::string::npos || r.find("link ok") == std::string::npos;
    healthy += down ? 0 : 1;
  }
  const std::string listed = replicas_error.empty() ? ("the sentinels list " + std::to_string(healthy) + " healthy of " +
                                                       std::to_string(replicas.size()))
                                                    : "the sentinels would not list them (" + replicas_error + ")";
  if (wait_replicas > 0 && online_on_master) {
    // WAIT counts the master's own replicas: that is what decides.
    if (*online_on_master < wait_replicas) {
      return make(Level::kFail, "replicas", master,
                  std::to_string(*online_on_master) + " replica(s) online on the master (INFO replication), but "
                      "sentinel_wait_replicas = " + std::to_string(wait_replicas) +
                      ": every acquisition would wait out io_timeout and be undone; " + listed,
                  "add replicas, or lower sentinel_wait_replicas");
    }
    return make(Level::kOk, "replicas", master,
                std::to_string(*online_on_master) + " replica(s) online on the master, enough for sentinel_wait_replicas = " +
                    std::to_string(wait_replicas) + "; " + listed);
  }
  if (!replicas_error.empty()) {
    return skip("replicas", master, "the master's replicas", "SENTINEL REPLICAS: " + replicas_error,
                "SENTINEL REPLICAS on the sentinels (or +info on the master)");
  }
  if (wait_replicas > 0 && healthy < wait_replicas) {
    return make(Level::kFail, "replicas", master,
                std::to_string(healthy) + " healthy replica(s) of " + std::to_string(replicas.size()) +
                    ", but sentinel_wait_replicas = " + std::to_string(wait_replicas) +
                    ": every acquisition would wait out io_timeout and be undone",
                "add replicas, or lower sentinel_wait_replicas");
  }
  if (replicas.empty()) {
    if (online_on_master && *online_on_master > 0) {
      return make(Level::kOk, "replicas", master,
                  std::to_string(*online_on_master) +
                      " replica(s) online on the master (the sentinels list none yet: they learn of a replica at their "
                      "next INFO of the master)");
    }
    return make(Level::kWarn, "replicas", master, "the sentinels know no replica: a failover has nowhere to go",
                "add a replica (replicaof " + master + ")");
  }
  return make(Level::kOk, "replicas", master,
              std::to_string(healthy) + " healthy of " + std::to_string(replicas.size()) + ": " + and_list(replicas));
}

std::optional<int> online_replicas(const std::map<std::string, std::string>& info) {
  if (info.find("connected_slaves") == info.end()) return std::nullopt;
  int online = 0;
  for (const auto& [name, value] : info) {
    if (name.rfind("slave", 0) == 0 && name.size() > 5 && std::isdigit(static_cast<unsigned char>(name[5])) &&
        value.find("state=online") != std::string::npos) {
      ++online;
    }
  }
  return online;
}

SentinelView sentinel_findings(const redis::SentinelReport& report, const std::string& master_name, int wait_replicas) {
  SentinelView view;
  const std::size_t n = report.answers.size();
  const std::size_t majority = n / 2 + 1;
  const Votes votes = count_votes(report, view.findings);
  if (votes.best_votes < majority) {
    view.findings.push_back(no_majority_finding(votes, n, majority, master_name));
    return view;
  }
  // The replicas listed are those of the first sentinel naming the majority's master.
  if (const auto* answer = first_naming(report, votes.best)) {
    view.master = answer->master;
    view.replicas = answer->replicas;
    view.replicas_error = answer->replicas_error;
  }
  view.findings.push_back(majority_finding(report, votes, master_name));
  view.findings.push_back(replica_finding(view.replicas, view.replicas_error, votes.best, wait_replicas, std::nullopt));
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
