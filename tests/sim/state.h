#pragma once
/// The simulated node's insides, shared by node.cpp (dispatch, ACL, clients) and the command
/// files (commands_*.cpp). Not part of the library's interface.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/keyspace.h"
#include "sim/lua_engine.h"
#include "sim/node.h"
#include "sim/resp.h"

namespace redisgo::sim {

using Argv = std::vector<std::string>;

struct Client {
  Node::ClientId id = 0;
  std::string user = "default";
  bool open = true;
  std::set<std::string> channels;
  std::vector<Resp> pushes;
};

using Handler = Resp (*)(Node::State&, Client&, const Argv&);

/// Command flags, as Redis's command table has them (those the simulation acts on).
enum : unsigned {
  kNoScript = 1u << 0,    ///< refused inside a script
  kSubscribed = 1u << 1,  ///< allowed in a RESP2 subscribed context
  kChannels = 1u << 2,    ///< every argument from 1 is a channel (ACL &patterns)
  kPublish = 1u << 3,     ///< argument 1 is a channel (ACL &patterns)
};

struct Command {
  std::string fullname;  ///< "get", "config|get"
  int arity = 0;         ///< Redis's: n exactly, -n at least n
  unsigned flags = 0;
  Handler handler = nullptr;
  bool container = false;  ///< has subcommands ("config", "pubsub", "script")
};

/// The command table: top-level names and "container|sub" entries.
const std::map<std::string, Command>& command_table();
/// The pieces of it each file defines.
void add_key_commands(std::map<std::string, Command>& table);
void add_type_commands(std::map<std::string, Command>& table);
void add_server_commands(std::map<std::string, Command>& table);

struct Node::State {
  NodeOptions options;
  std::int64_t now_us = 0;
  std::int64_t started_us = 0;
  std::uint64_t restarts = 0;
  Keyspace keys;
  std::map<Node::ClientId, Client> clients;
  Node::ClientId next_client = 1;
  std::map<std::string, User> users;
  std::map<std::string, std::set<Node::ClientId>> channels;
  std::unique_ptr<LuaEngine> lua;
  std::uint64_t script_calls = 0;
  std::map<std::string, std::uint64_t> calls;  ///< per command fullname (INFO commandstats)

  std::int64_t now_ms() const { return now_us >= 0 ? now_us / 1000 : -((-now_us + 999) / 1000); }
  /// A direct command from a client: lookup, arity, ACL, subscribed context, then the handler.
  Resp dispatch(Client& c, const Argv& argv);
  /// redis.call/pcall from a script run by `caller`: the reply, or the script-level refusal
  /// (unknown command, arity, not allowed from scripts, ACL) in *refused.
  Resp script_call(Client& caller, const Argv& argv, std::string* refused);
  /// The command entry for argv (a container resolved to its subcommand), or nullptr.
  const Command* lookup(const Argv& argv) const;
  /// Empty when `user` may run `cmd` with these arguments; else what ACL denies: "cmd" or
  /// "channel".
  std::string acl_denial(const std::string& user, const Command& cmd, const Argv& argv) const;
  /// The refusal's text: Redis 7.0's, or 7.2's and later's (options.version), for a direct call
  /// (NOPERM ...) or inside a script (before redis.call adds "ERR ").
  std::string acl_text(const std::string& denial, const std::string& user, const Command& cmd, bool from_script) const;
  bool redis72() const;
  /// Delivers a message to the channel's subscribers; returns how many got it.
  std::int64_t publish(const std::string& channel, const std::string& message);
  void unsubscribe_all(Client& c);
  /// INFO's text for the sections asked (none: the default ones).
  std::string info(const std::vector<std::string>& sections) const;
  /// Runs EVAL / EVALSHA (argv as sent) for client c.
  Resp eval(Client& c, const Argv& argv, bool by_sha);
};

/// Parsing helpers with Redis's rules and error texts.
std::optional<std::int64_t> parse_int(const std::string& s);
std::optional<double> parse_score(const std::string& s);
/// "%.17g", Redis 7.0's reply for a double.
std::string format_double(double d);
std::string lower(std::string s);

}  // namespace redisgo::sim
