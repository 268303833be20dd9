// The simulated node as a table backend.

#include <map>

#include "lua/backend.h"
#include "sim/node.h"

namespace redisgo::luatable {

std::string Acl::user() const {
  std::string name = "no";
  for (const auto& d : denied) name += "_" + d;
  if (!channels) name += "_channels";
  for (const auto& c : only_channels) name += "_but_" + c;
  for (char& c : name) {
    if (c == '|' || c == ':') c = '.';
  }
  return name;
}

namespace {

/// 2026-01-01T00:00:00.250Z: not on a whole second, as a real clock rarely is.
constexpr std::int64_t kEpochUs = 1'767'225'600'250'000;

class SimBackend final : public Backend {
 public:
  SimBackend() : node_(kEpochUs) { admin_ = node_.connect(); }
  std::string name() const override { return "sim"; }

  void age(Age age) override {
    if (age == Age::kYoung) {
      node_.crash();
      users_.clear();
      admin_ = node_.connect();
    } else if (age == Age::kOld && node_.now_us() - node_.started_us() < 3'000'000) {
      node_.set_now(node_.now_us() + 3'000'000);
    }
  }

  void reset() override {
    node_.call(admin_, {"FLUSHALL"});
    for (auto& [channel, id] : listeners_) node_.disconnect(id);
    listeners_.clear();
  }

  Resp command(const std::vector<std::string>& argv, const Acl& acl) override {
    return node_.call(acl.empty() ? admin_ : user(acl), argv);
  }

  void listen(const std::string& channel) override {
    const auto id = node_.connect();
    node_.call(id, {"SUBSCRIBE", channel});
    listeners_.emplace_back(channel, id);
  }

  std::vector<std::string> heard(const std::string& channel) override {
    for (auto& [ch, id] : listeners_) {
      if (ch != channel) continue;
      std::vector<std::string> out;
      for (const Resp& p : node_.take_pushes(id)) {
        if (p.items.size() == 3 && p.items[0].text == "message") out.push_back(p.items[2].text);
      }
      return out;
    }
    return {};
  }

 private:
  sim::Node::ClientId user(const Acl& acl) {
    const std::string name = acl.user();
    auto it = users_.find(name);
    if (it != users_.end()) return it->second;
    sim::User u;
    u.name = name;
    u.password = "pw";
    u.denied.insert(acl.denied.begin(), acl.denied.end());
    u.all_channels = acl.channels;
    u.channels = acl.only_channels;
    node_.set_user(u);
    const auto id = node_.connect();
    node_.call(id, {"AUTH", name, "pw"});
    users_[name] = id;
    return id;
  }

  sim::Node node_;
  sim::Node::ClientId admin_ = 0;
  std::map<std::string, sim::Node::ClientId> users_;
  std::vector<std::pair<std::string, sim::Node::ClientId>> listeners_;
};

}  // namespace

std::unique_ptr<Backend> make_sim_backend() { return std::make_unique<SimBackend>(); }

}  // namespace redisgo::luatable
