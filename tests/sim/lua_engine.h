#pragma once
/// EVAL's engine for the simulated node: one Lua 5.1 state (the language version Redis
/// embeds), scripts cached by SHA-1 as Redis 7.0 caches them, and the part of Redis's scripting
/// API that the lease scripts use, with Redis's behaviour:
/// - redis.call raises a command's error reply (and a refusal: an unknown command, a command
///   not allowed from scripts, an ACL denial) as a table {err = "..."}; redis.pcall returns it.
///   An error that ends the script is answered as Redis answers it: the error's text, then
///   " script: <sha>, on @user_script:<line>." where the error came from a redis.call or a
///   Lua runtime error ("ERR user_script:<line>: ...").
/// - redis.error_reply / redis.status_reply, and the global pcall replaced by Redis's, which
///   hands back an error table's err text rather than the table.
/// - Conversions Lua -> RESP: a number is truncated to an integer, a string is a bulk, true is
///   1 and false nil, {err=...} an error, {ok=...} a status, any other table an array that
///   stops at its first nil; RESP -> Lua: an integer a number, a nil false, a status {ok=...},
///   an error {err=...}. Arguments to redis.call: strings, or numbers written as "%.17g".
/// - Globals are protected: reading an undefined global or writing any global is an error
///   (KEYS and ARGV are set for each run).

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/resp.h"

struct lua_State;

namespace redisgo::sim {

class LuaEngine {
 public:
  /// Runs one command for the running script: its reply, or Redis's script-level refusal in
  /// *refused (then the reply is ignored).
  using Call = std::function<Resp(const std::vector<std::string>& argv, std::string* refused)>;

  LuaEngine();
  ~LuaEngine();
  LuaEngine(const LuaEngine&) = delete;
  LuaEngine& operator=(const LuaEngine&) = delete;

  /// Compiles and caches `body` (a cached one is not compiled again); its SHA-1, or nullopt
  /// with the error reply's text in *error ("ERR Error compiling script ...").
  std::optional<std::string> load(const std::string& body, std::string* error);
  bool exists(const std::string& sha) const { return shas_.count(sha) != 0; }
  /// Runs a loaded script to completion with KEYS and ARGV, its commands through `call`.
  Resp run(const std::string& sha, const std::vector<std::string>& keys, const std::vector<std::string>& args,
           const Call& call);
  /// SCRIPT FLUSH: forgets every script (a new Lua state, as Redis makes one).
  void flush();

  /// The engine behind a lua_State (for the C functions registered in it).
  static LuaEngine& of(lua_State* L);
  const Call* current_call() const { return call_; }

 private:
  void open();
  void close();
  lua_State* L_ = nullptr;
  std::set<std::string> shas_;
  /// Bodies already loaded, by text: a simulation sends the same scripts millions of times,
  /// and hashing a 12 KB script with SHA-1 at every EVAL was most of a call's cost.
  std::unordered_map<std::string, std::string> by_body_;
  const Call* call_ = nullptr;
};

}  // namespace redisgo::sim
