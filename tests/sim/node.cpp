// The simulated node: clients, the command pipeline (lookup, arity, ACL, subscribed context),
// pub/sub delivery, EVAL and restarts. The commands themselves: commands_*.cpp.

#include <cctype>
#include <cstdio>

#include "sim/state.h"

namespace redisgo::sim {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string to_string(const Resp& r) {
  switch (r.kind) {
    case Resp::Kind::kNil: return "(nil)";
    case Resp::Kind::kInt: return std::to_string(r.integer);
    case Resp::Kind::kStatus: return r.text;
    case Resp::Kind::kError: return "(error) " + r.text;
    case Resp::Kind::kBulk: {
      std::string out = "\"";
      for (unsigned char c : r.text) {
        if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
      }
      return out + "\"";
    }
    case Resp::Kind::kArray: {
      std::string out = "[";
      for (std::size_t i = 0; i < r.items.size(); ++i) out += (i ? ", " : "") + to_string(r.items[i]);
      return out + "]";
    }
  }
  return "?";
}

Resp Resp::strings(const std::vector<std::string>& v) {
  Resp r = array();
  for (const auto& s : v) r.items.push_back(bulk(s));
  return r;
}

const std::map<std::string, Command>& command_table() {
  static const std::map<std::string, Command> table = [] {
    std::map<std::string, Command> t;
    add_key_commands(t);
    add_type_commands(t);
    add_server_commands(t);
    return t;
  }();
  return table;
}

const Command* Node::State::lookup(const Argv& argv) const {
  const auto& table = command_table();
  auto it = table.find(lower(argv[0]));
  if (it == table.end()) return nullptr;
  if (!it->second.container || argv.size() < 2) return &it->second;
  auto sub = table.find(it->first + "|" + lower(argv[1]));
  return sub == table.end() ? nullptr : &sub->second;
}

namespace {

bool arity_ok(const Command& cmd, std::size_t argc) {
  const auto n = static_cast<std::int64_t>(argc);
  return cmd.arity > 0 ? n == cmd.arity : n >= -cmd.arity;
}

std::string base_name(const std::string& fullname) { return fullname.substr(0, fullname.find('|')); }

bool channel_allowed(const User& u, const std::string& channel) {
  if (u.all_channels) return true;
  for (const auto& p : u.channels) {
    if (glob_match(p, channel)) return true;
  }
  return false;
}

}  // namespace

std::string Node::State::acl_denial(const std::string& user, const Command& cmd, const Argv& argv) const {
  auto it = users.find(user);
  if (it == users.end()) return "cmd";
  const User& u = it->second;
  if (u.denied.count(cmd.fullname) || u.denied.count(base_name(cmd.fullname))) return "cmd";
  if (cmd.flags & kPublish) {
    if (!channel_allowed(u, argv[1])) return "channel";
  } else if (cmd.flags & kChannels) {
    for (std::size_t i = 1; i < argv.size(); ++i) {
      if (!channel_allowed(u, argv[i])) return "channel";
    }
  }
  return "";
}

bool Node::State::redis72() const {
  int major = 0, minor = 0;
  std::sscanf(options.version.c_str(), "%d.%d", &major, &minor);
  return major > 7 || (major == 7 && minor >= 2);
}

std::string Node::State::acl_text(const std::string& denial, const std::string& user, const Command& cmd,
                                  bool from_script) const {
  if (redis72()) {
    const std::string msg = denial == "cmd" ? "User " + user + " has no permissions to run the '" + cmd.fullname + "' command"
                                            : "No permissions to access a channel";
    return from_script ? "ACL failure in script: " + msg : "NOPERM " + msg;
  }
  if (from_script) {
    return denial == "cmd" ? "The user executing the script can't run this command or subcommand"
                           : "The user executing the script can't publish to the channel mentioned in the command";
  }
  return denial == "cmd" ? "NOPERM this user has no permissions to run the '" + cmd.fullname + "' command"
                         : "NOPERM this user has no permissions to access one of the channels used as arguments";
}

Resp Node::State::dispatch(Client& c, const Argv& argv) {
  if (argv.empty()) return Resp::error("ERR empty command");
  const Command* cmd = lookup(argv);
  if (!cmd) {
    const auto& table = command_table();
    auto top = table.find(lower(argv[0]));
    if (top != table.end() && top->second.container) {
      std::string name = argv[0];
      for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      return Resp::error("ERR unknown subcommand '" + argv[1].substr(0, 128) + "'. Try " + name + " HELP.");
    }
    std::string args;
    for (std::size_t i = 1; i < argv.size() && args.size() < 128; ++i) {
      args += "'" + argv[i].substr(0, 128 - args.size()) + "' ";
    }
    return Resp::error("ERR unknown command '" + argv[0].substr(0, 128) + "', with args beginning with: " + args);
  }
  if (!arity_ok(*cmd, argv.size())) {
    return Resp::error("ERR wrong number of arguments for '" + cmd->fullname + "' command");
  }
  const std::string denial = acl_denial(c.user, *cmd, argv);
  if (!denial.empty()) return Resp::error(acl_text(denial, c.user, *cmd, false));
  if (!c.channels.empty() && !(cmd->flags & kSubscribed)) {
    return Resp::error("ERR Can't execute '" + cmd->fullname +
                       "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context");
  }
  ++calls[cmd->fullname];
  return cmd->handler(*this, c, argv);
}

Resp Node::State::script_call(Client& caller, const Argv& argv, std::string* refused) {
  const Command* cmd = lookup(argv);
  if (!cmd || cmd->container || !arity_ok(*cmd, argv.size())) {
    *refused = cmd ? "Wrong number of args calling Redis command from script" : "Unknown Redis command called from script";
    return {};
  }
  if (cmd->flags & kNoScript) {
    *refused = "This Redis command is not allowed from script";
    return {};
  }
  const std::string denial = acl_denial(caller.user, *cmd, argv);
  if (!denial.empty()) {
    *refused = acl_text(denial, caller.user, *cmd, true);
    return {};
  }
  ++calls[cmd->fullname];
  return cmd->handler(*this, caller, argv);
}

std::int64_t Node::State::publish(const std::string& channel, const std::string& message) {
  auto it = channels.find(channel);
  if (it == channels.end()) return 0;
  std::int64_t n = 0;
  for (auto id : it->second) {
    auto c = clients.find(id);
    if (c == clients.end() || !c->second.open) continue;
    c->second.pushes.push_back(Resp::strings({"message", channel, message}));
    ++n;
  }
  return n;
}

void Node::State::unsubscribe_all(Client& c) {
  for (const auto& ch : c.channels) {
    auto it = channels.find(ch);
    if (it == channels.end()) continue;
    it->second.erase(c.id);
    if (it->second.empty()) channels.erase(it);
  }
  c.channels.clear();
}

Resp Node::State::eval(Client& c, const Argv& argv, bool by_sha) {
  const auto numkeys = parse_int(argv[2]);
  if (!numkeys) return Resp::error(errors::kNotInteger);
  if (*numkeys > static_cast<std::int64_t>(argv.size()) - 3) {
    return Resp::error("ERR Number of keys can't be greater than number of args");
  }
  if (*numkeys < 0) return Resp::error("ERR Number of keys can't be negative");
  std::string sha;
  if (by_sha) {
    sha = lower(argv[1]);
    if (!lua->exists(sha)) return Resp::error(errors::kNoScript);
  } else {
    std::string error;
    auto loaded = lua->load(argv[1], &error);
    if (!loaded) return Resp::error(error);
    sha = *loaded;
  }
  const auto first_arg = argv.begin() + 3 + *numkeys;
  const Argv script_keys(argv.begin() + 3, first_arg), args(first_arg, argv.end());
  ++script_calls;
  const LuaEngine::Call call = [this, &c](const Argv& a, std::string* refused) { return script_call(c, a, refused); };
  return lua->run(sha, script_keys, args, call);
}

Node::Node(std::int64_t now_us, NodeOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  state_->now_us = now_us;
  state_->started_us = now_us;
  state_->lua = std::make_unique<LuaEngine>();
  state_->users["default"] = User{"default", "", {}, true, {}};
}

Node::~Node() = default;

void Node::set_now(std::int64_t now_us) { state_->now_us = now_us; }
std::int64_t Node::now_us() const { return state_->now_us; }
std::int64_t Node::started_us() const { return state_->started_us; }
std::uint64_t Node::script_calls() const { return state_->script_calls; }

void Node::crash() {
  State& s = *state_;
  s.keys.clear();
  s.channels.clear();
  for (auto& [id, c] : s.clients) c.open = false;
  s.lua->flush();
  s.calls.clear();
  s.script_calls = 0;
  s.started_us = s.now_us;
  ++s.restarts;
}

void Node::set_user(User user) {
  std::string name = user.name;
  state_->users[name] = std::move(user);
}

Node::ClientId Node::connect() {
  const ClientId id = state_->next_client++;
  state_->clients[id].id = id;
  return id;
}

void Node::disconnect(ClientId id) {
  auto it = state_->clients.find(id);
  if (it == state_->clients.end()) return;
  if (it->second.open) state_->unsubscribe_all(it->second);
  state_->clients.erase(it);
}

bool Node::connected(ClientId id) const {
  auto it = state_->clients.find(id);
  return it != state_->clients.end() && it->second.open;
}

Resp Node::call(ClientId id, const std::vector<std::string>& argv) {
  auto it = state_->clients.find(id);
  if (it == state_->clients.end() || !it->second.open) {
    return Resp::error("SIMCLOSED the connection is closed (the node restarted, or it was disconnected)");
  }
  return state_->dispatch(it->second, argv);
}

std::vector<Resp> Node::take_pushes(ClientId id) {
  auto it = state_->clients.find(id);
  if (it == state_->clients.end()) return {};
  std::vector<Resp> out;
  out.swap(it->second.pushes);
  return out;
}

}  // namespace redisgo::sim
