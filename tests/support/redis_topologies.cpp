#include "support/redis_topologies.h"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <thread>

namespace redisgo::testing {
namespace {

using namespace std::chrono_literals;

/// The value of `field:` in INFO-style text ("" if absent).
std::string info_field(const std::string& info, const std::string& field) {
  std::istringstream in(info);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  }
  return "";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace

// ---- Sentinel ------------------------------------------------------------------------

SentinelSet::SentinelSet() : SentinelSet(Options{}) {}

SentinelSet::SentinelSet(Options options) {
  servers_.push_back(std::make_unique<RedisServer>());
  int upstream = servers_[0]->port();
  if (options.proxied_replication) {
    link_ = std::make_unique<FaultProxy>(upstream);
    upstream = link_->port();
  }
  RedisServerOptions replica;
  replica.extra_config = {"replicaof 127.0.0.1 " + std::to_string(upstream)};
  servers_.push_back(std::make_unique<RedisServer>(replica));
  const bool linked = wait_until(
      [&] { return info_field(servers_[1]->cli({"INFO", "replication"}), "master_link_status") == "up"; }, 10s);
  if (!linked) ADD_FAILURE() << "the replica did not link to the master";
  for (int i = 0; i < 3; ++i) {
    RedisServerOptions s;
    s.sentinel = true;
    s.extra_config = {"sentinel monitor " + std::string(kMaster) + " 127.0.0.1 " + std::to_string(servers_[0]->port()) + " 2",
                      "sentinel down-after-milliseconds " + std::string(kMaster) + " 1000",
                      // Behind a proxy the replica follows an address the sentinels do not know as the
                      // master's, and they would point it at the master after this long.
                      "sentinel failover-timeout " + std::string(kMaster) + (link_ ? " 120000" : " 3000"),
                      "sentinel parallel-syncs " + std::string(kMaster) + " 1"};
    sentinels_.push_back(std::make_unique<RedisServer>(s));
  }
  // Each sentinel must know the replica (for a failover) and the two others (for a vote).
  const bool ready = wait_until(
      [&] {
        for (auto& s : sentinels_) {
          const std::string m = s->cli({"SENTINEL", "master", kMaster});
          auto l = lines_of(m);
          std::string replicas, others;
          for (std::size_t i = 0; i + 1 < l.size(); i += 2) {
            if (l[i] == "num-slaves") replicas = l[i + 1];
            if (l[i] == "num-other-sentinels") others = l[i + 1];
          }
          if (replicas != "1" || others != "2") return false;
        }
        return true;
      },
      30s, 50ms);
  if (!ready) ADD_FAILURE() << "the sentinels did not discover the replica and each other";
}

std::vector<std::string> SentinelSet::sentinel_addresses() const {
  std::vector<std::string> out;
  for (const auto& s : sentinels_) out.push_back(s->address());
  return out;
}

std::string SentinelSet::config_lines() const {
  std::string list;
  for (const auto& a : sentinel_addresses()) list += (list.empty() ? "\"" : ", \"") + a + "\"";
  return "sentinels = [" + list + "]\nsentinel_master = \"" + kMaster + "\"\n";
}

std::string SentinelSet::named_master() const {
  for (const auto& s : sentinels_) {
    auto l = lines_of(s->cli({"SENTINEL", "get-master-addr-by-name", kMaster}));
    if (l.size() == 2) return l[0] + ":" + l[1];
  }
  return "";
}

void SentinelSet::wait_for_master(const std::string& address, std::chrono::milliseconds timeout) {
  const bool switched = wait_until(
      [&] {
        for (const auto& s : sentinels_) {
          auto l = lines_of(s->cli({"SENTINEL", "get-master-addr-by-name", kMaster}));
          if (l.size() != 2 || l[0] + ":" + l[1] != address) return false;
        }
        return true;
      },
      timeout, 100ms);
  if (!switched) ADD_FAILURE() << "the sentinels did not name " << address << " as the master in time";
}

void SentinelSet::failover() {
  const std::string next = replica().address();
  const std::string reply = sentinels_[0]->cli({"SENTINEL", "FAILOVER", kMaster});
  if (reply != "OK") ADD_FAILURE() << "SENTINEL FAILOVER: " << reply;
  wait_for_master(next, 20s);
  master_ = 1 - master_;
  auto says_master = [&] {
    auto l = lines_of(master().cli({"ROLE"}));
    return !l.empty() && l.front() == "master";
  };
  if (!wait_until(says_master, 10s, 50ms)) {
    ADD_FAILURE() << "the promoted replica does not say ROLE master";
  }
}

void SentinelSet::kill_master() {
  const std::string next = replica().address();
  master().kill();
  wait_for_master(next, 30s);
  master_ = 1 - master_;
}

// ---- Cluster -------------------------------------------------------------------------

ClusterSet::ClusterSet() {
  for (int i = 0; i < 3; ++i) {
    RedisServerOptions o;
    o.cluster_bus = true;
    o.extra_config = {"cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 2000"};
    nodes_.push_back(std::make_unique<RedisServer>(o));
  }
  std::string cmd = "timeout 30 redis-cli --cluster create";
  for (const auto& n : nodes_) cmd += " " + n->address();
  cmd += " --cluster-replicas 0 --cluster-yes >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "redis-cli --cluster create failed";
  const bool ok = wait_until(
      [&] {
        for (auto& n : nodes_) {
          if (info_field(n->cli({"CLUSTER", "INFO"}), "cluster_state") != "ok") return false;
        }
        return true;
      },
      30s);
  if (!ok) ADD_FAILURE() << "the cluster did not become ok";
}

std::vector<std::string> ClusterSet::addresses() const {
  std::vector<std::string> out;
  for (const auto& n : nodes_) out.push_back(n->address());
  return out;
}

std::string ClusterSet::id_of(std::size_t i) { return nodes_[i]->cli({"CLUSTER", "MYID"}); }

std::size_t ClusterSet::owner_of(int slot) {
  // CLUSTER NODES: "<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <state> <slots...>"
  for (const auto& line : lines_of(nodes_[0]->cli({"CLUSTER", "NODES"}))) {
    std::istringstream in(line);
    std::string id, addr, flags, master, ping, pong, epoch, state, range;
    in >> id >> addr >> flags >> master >> ping >> pong >> epoch >> state;
    while (in >> range) {
      if (range.front() == '[') continue;  // a migration in progress
      auto dash = range.find('-');
      const int lo = std::stoi(range.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(range.substr(dash + 1));
      if (slot < lo || slot > hi) continue;
      const std::string port = addr.substr(addr.find(':') + 1, addr.find('@') - addr.find(':') - 1);
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (std::to_string(nodes_[i]->port()) == port) return i;
      }
    }
  }
  ADD_FAILURE() << "no owner for slot " << slot;
  return 0;
}

void ClusterSet::migrate(int slot, std::size_t to, const std::function<void()>& between) {
  const std::size_t from = owner_of(slot);
  const std::string s = std::to_string(slot);
  const std::string from_id = id_of(from), to_id = id_of(to);
  auto expect_ok = [](const std::string& what, const std::string& reply) {
    if (reply != "OK") ADD_FAILURE() << what << ": " << reply;
  };
  expect_ok("IMPORTING", nodes_[to]->cli({"CLUSTER", "SETSLOT", s, "IMPORTING", from_id}));
  expect_ok("MIGRATING", nodes_[from]->cli({"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}));
  auto keys = lines_of(nodes_[from]->cli({"CLUSTER", "GETKEYSINSLOT", s, "100"}));
  if (!keys.empty()) {
    std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(nodes_[to]->port()), "", "0", "5000", "KEYS"};
    migrate.insert(migrate.end(), keys.begin(), keys.end());
    expect_ok("MIGRATE", nodes_[from]->cli(migrate));
  }
  if (between) between();
  // The target first, then the source (else the source would send clients to a target
  // that still thinks it is importing), then the others.
  std::vector<std::size_t> order{to, from};
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (i != to && i != from) order.push_back(i);
  }
  for (std::size_t i : order) expect_ok("SETSLOT NODE", nodes_[i]->cli({"CLUSTER", "SETSLOT", s, "NODE", to_id}));
}

}  // namespace redisgo::testing
