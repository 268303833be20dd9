// EVAL's engine (sim/lua_engine.h). The C functions registered in Lua never hold a C++ object
// with a destructor when they raise a Lua error (lua_error longjmps over C++ frames): each does
// its C++ work in a helper that returns first, then raises.

#include "sim/lua_engine.h"

#include <lua.hpp>

#include <climits>
#include <cmath>
#include <cstdio>
#include <string>

#include "util/sha1.h"

namespace redisgo::sim {
namespace {

constexpr const char* kEngineKey = "redisgo_sim_engine";
/// A script that runs away is stopped (Redis would answer BUSY to everyone else meanwhile; a
/// simulation must not hang): 100 million VM instructions, far beyond any lease script.
constexpr int kHookEvery = 1000000;
constexpr int kHookLimit = 100;
int g_hook_count = 0;

/// Redis's error table from a reply text: "-CODE msg" keeps CODE; a text without the dash is
/// given "ERR"; trailing and leading CR/LF are trimmed; {err = "CODE msg"}.
void push_error_table(lua_State* L, const std::string& text) {
  std::string code = "ERR", msg;
  if (!text.empty() && text[0] == '-') {
    const auto space = text.find(' ');
    if (space == std::string::npos) {
      msg = text.substr(1);
    } else {
      code = text.substr(1, space - 1);
      msg = text.substr(space + 1);
    }
  } else {
    msg = text;
  }
  const auto first = msg.find_first_not_of("\r\n");
  msg = first == std::string::npos ? std::string() : msg.substr(first, msg.find_last_not_of("\r\n") - first + 1);
  const std::string full = code + " " + msg;
  lua_newtable(L);
  lua_pushstring(L, "err");
  lua_pushlstring(L, full.data(), full.size());
  lua_settable(L, -3);
}

void push_resp(lua_State* L, const Resp& r) {
  switch (r.kind) {
    case Resp::Kind::kInt: lua_pushnumber(L, static_cast<lua_Number>(r.integer)); return;
    case Resp::Kind::kBulk: lua_pushlstring(L, r.text.data(), r.text.size()); return;
    case Resp::Kind::kNil: lua_pushboolean(L, 0); return;
    case Resp::Kind::kStatus:
      lua_newtable(L);
      lua_pushstring(L, "ok");
      lua_pushlstring(L, r.text.data(), r.text.size());
      lua_settable(L, -3);
      return;
    case Resp::Kind::kError:
      push_error_table(L, "-" + r.text);
      lua_pushstring(L, "ignore_error_stats_update");
      lua_pushboolean(L, 1);
      lua_settable(L, -3);
      return;
    case Resp::Kind::kArray:
      lua_checkstack(L, 4);
      lua_createtable(L, static_cast<int>(r.items.size()), 0);
      for (std::size_t i = 0; i < r.items.size(); ++i) {
        push_resp(L, r.items[i]);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
      }
      return;
  }
}

/// A double cast to long long as x86-64 does it (Redis's C cast): out of range or NaN is the
/// smallest integer.
std::int64_t truncate(lua_Number d) {
  if (std::isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0) return LLONG_MIN;
  return static_cast<std::int64_t>(d);
}

std::string field_string(lua_State* L, int idx, const char* name, bool* found) {
  lua_pushstring(L, name);
  lua_rawget(L, idx < 0 ? idx - 1 : idx);
  *found = lua_type(L, -1) == LUA_TSTRING;
  std::string s;
  if (*found) {
    std::size_t n = 0;
    const char* p = lua_tolstring(L, -1, &n);
    s.assign(p, n);
  }
  lua_pop(L, 1);
  return s;
}

Resp to_resp(lua_State* L, int idx) {
  switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
      std::size_t n = 0;
      const char* p = lua_tolstring(L, idx, &n);
      return Resp::bulk(std::string(p, n));
    }
    case LUA_TBOOLEAN: return lua_toboolean(L, idx) ? Resp::num(1) : Resp::nil();
    case LUA_TNUMBER: return Resp::num(truncate(lua_tonumber(L, idx)));
    case LUA_TTABLE: {
      bool found = false;
      std::string err = field_string(L, idx, "err", &found);
      if (found) return Resp::error(err);
      std::string ok = field_string(L, idx, "ok", &found);
      if (found) {
        for (char& c : ok) {
          if (c == '\r' || c == '\n') c = ' ';
        }
        return Resp::status(ok);
      }
      lua_checkstack(L, 4);
      std::vector<Resp> items;
      for (int j = 1;; ++j) {
        lua_rawgeti(L, idx, j);
        if (lua_isnil(L, -1)) {
          lua_pop(L, 1);
          break;
        }
        items.push_back(to_resp(L, lua_gettop(L)));
        lua_pop(L, 1);
      }
      return Resp::array(std::move(items));
    }
    default: return Resp::nil();
  }
}

/// The body of redis.call / redis.pcall: leaves its result on the stack and says whether it
/// is an error that redis.call must raise.
bool run_command(lua_State* L, bool raise) {
  const int argc = lua_gettop(L);
  if (argc == 0) {
    push_error_table(L, "Please specify at least one argument for this redis lib call");
    return raise;
  }
  std::vector<std::string> argv;
  argv.reserve(static_cast<std::size_t>(argc));
  for (int j = 1; j <= argc; ++j) {
    if (lua_type(L, j) == LUA_TNUMBER) {
      char buf[64];
      const int n = std::snprintf(buf, sizeof buf, "%.17g", lua_tonumber(L, j));
      argv.emplace_back(buf, static_cast<std::size_t>(n));
    } else if (lua_type(L, j) == LUA_TSTRING) {
      std::size_t n = 0;
      const char* p = lua_tolstring(L, j, &n);
      argv.emplace_back(p, n);
    } else {
      lua_pop(L, argc);
      push_error_table(L, "Lua redis lib command arguments must be strings or integers");
      return raise;
    }
  }
  lua_pop(L, argc);
  const LuaEngine::Call* call = LuaEngine::of(L).current_call();
  if (!call) {
    push_error_table(L, "redis.call/pcall can only be called inside a script invocation");
    return true;
  }
  std::string refused;
  const Resp reply = (*call)(argv, &refused);
  if (!refused.empty()) {
    push_error_table(L, refused);
    lua_pushstring(L, "ignore_error_stats_update");
    lua_pushboolean(L, 1);
    lua_settable(L, -3);
    return raise;
  }
  push_resp(L, reply);
  return raise && reply.is_error();
}

int redis_call(lua_State* L) { return run_command(L, true) ? lua_error(L) : 1; }
int redis_pcall(lua_State* L) {
  run_command(L, false);
  return 1;
}

/// redis.error_reply(text): {err = text}, "ERR" added when text has no code of its own.
int redis_error_reply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    push_error_table(L, "wrong number or type of arguments");
    return 1;
  }
  const std::string text = lua_tostring(L, -1);
  push_error_table(L, text[0] == '-' ? text : "-" + text);
  return 1;
}

int redis_status_reply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    push_error_table(L, "wrong number or type of arguments");
    return 1;
  }
  lua_newtable(L);
  lua_pushstring(L, "ok");
  lua_pushvalue(L, -3);
  lua_settable(L, -3);
  return 1;
}

void push_sha(lua_State* L, const char* p, std::size_t n) {
  const std::string sha = sha1_hex(std::string_view(p, n));
  lua_pushlstring(L, sha.data(), sha.size());
}

int redis_sha1hex(lua_State* L) {
  if (lua_gettop(L) != 1) return luaL_error(L, "wrong number of arguments");
  std::size_t n = 0;
  const char* p = lua_tolstring(L, 1, &n);
  if (!p) return luaL_error(L, "wrong number of arguments");
  push_sha(L, p, n);
  return 1;
}

int redis_log(lua_State* L) {
  if (lua_gettop(L) < 2) return luaL_error(L, "redis.log() requires two arguments or more.");
  return 0;  // the simulation keeps no server log
}

/// Redis's pcall: an error that is a table with an `err` text comes back as that text.
int redis_global_pcall(lua_State* L) {
  const int argc = lua_gettop(L);
  luaL_checkany(L, 1);
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  if (lua_pcall(L, argc - 1, LUA_MULTRET, 0) != 0) {
    lua_remove(L, 1);
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "err");
      if (lua_isstring(L, -1)) {
        lua_replace(L, -2);
      } else {
        lua_pop(L, 1);
      }
    }
    lua_pushboolean(L, 0);
    lua_insert(L, 1);
  }
  return lua_gettop(L);
}

int global_read_error(lua_State* L) {
  return luaL_error(L, "Script attempted to access nonexistent global variable '%s'", lua_tostring(L, 2));
}

int global_write_error(lua_State* L) {
  luaL_where(L, 1);
  lua_pushstring(L, "Attempt to modify a readonly table");
  lua_concat(L, 2);
  return lua_error(L);
}

void count_hook(lua_State* L, lua_Debug*) {
  if (++g_hook_count > kHookLimit) luaL_error(L, "sim: the script ran over 100,000,000 Lua instructions");
}

void open_lib(lua_State* L, lua_CFunction f, const char* name) {
  lua_pushcfunction(L, f);
  lua_pushstring(L, name);
  lua_call(L, 1, 0);
}

void set_function(lua_State* L, const char* name, lua_CFunction f) {
  lua_pushstring(L, name);
  lua_pushcfunction(L, f);
  lua_settable(L, -3);
}

// As Redis's error handler: the error gets the script position of the Lua line that raised it
// (for a C function such as redis.call, of its caller); a plain message becomes {err = "ERR ..."}.
constexpr const char* kErrorHandler = R"lua(
local getinfo = debug.getinfo
debug = nil
function __redis__err__handler(err)
  local at = getinfo(2, 'nSl')
  if at and at.what == 'C' then
    at = getinfo(3, 'nSl')
  end
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if at then
    err['source'] = at.source
    err['line'] = at.currentline
  end
  return err
end
)lua";

void set_array(lua_State* L, const char* name, const std::vector<std::string>& items) {
  lua_pushstring(L, name);
  lua_createtable(L, static_cast<int>(items.size()), 0);
  for (std::size_t i = 0; i < items.size(); ++i) {
    lua_pushlstring(L, items[i].data(), items[i].size());
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  lua_rawset(L, LUA_GLOBALSINDEX);
}

/// The reply for an error that ended the script (on top of the stack).
Resp script_error(lua_State* L, const std::string& sha) {
  if (!lua_istable(L, -1)) {
    const char* msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "execution failure";
    return Resp::error("ERR Error running script " + sha + ", " + std::string(msg).substr(0, 100));
  }
  bool found = false;
  std::string text = field_string(L, -1, "err", &found);
  lua_getfield(L, -1, "source");
  const bool has_source = lua_isstring(L, -1) != 0;
  const std::string source = has_source ? lua_tostring(L, -1) : "";
  lua_pop(L, 1);
  lua_getfield(L, -1, "line");
  const bool has_line = lua_isstring(L, -1) != 0;
  const std::string line = has_line ? lua_tostring(L, -1) : "";
  lua_pop(L, 1);
  if (has_source && has_line) text += " script: " + sha + ", on " + source + ":" + line + ".";
  return Resp::error(text);
}

}  // namespace

LuaEngine::LuaEngine() { open(); }
LuaEngine::~LuaEngine() { close(); }

LuaEngine& LuaEngine::of(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kEngineKey);
  auto* e = static_cast<LuaEngine*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return *e;
}

void LuaEngine::open() {
  L_ = luaL_newstate();
  open_lib(L_, luaopen_base, "");
  open_lib(L_, luaopen_table, LUA_TABLIBNAME);
  open_lib(L_, luaopen_string, LUA_STRLIBNAME);
  open_lib(L_, luaopen_math, LUA_MATHLIBNAME);
  open_lib(L_, luaopen_debug, LUA_DBLIBNAME);
  lua_pushlightuserdata(L_, this);
  lua_setfield(L_, LUA_REGISTRYINDEX, kEngineKey);
  for (const char* gone : {"loadfile", "dofile"}) {
    lua_pushnil(L_);
    lua_setglobal(L_, gone);
  }
  lua_pushcfunction(L_, redis_global_pcall);
  lua_setglobal(L_, "pcall");

  lua_newtable(L_);
  set_function(L_, "call", redis_call);
  set_function(L_, "pcall", redis_pcall);
  set_function(L_, "error_reply", redis_error_reply);
  set_function(L_, "status_reply", redis_status_reply);
  set_function(L_, "sha1hex", redis_sha1hex);
  set_function(L_, "log", redis_log);
  const char* levels[] = {"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"};
  for (int i = 0; i < 4; ++i) {
    lua_pushstring(L_, levels[i]);
    lua_pushnumber(L_, i);
    lua_settable(L_, -3);
  }
  lua_setglobal(L_, "redis");

  luaL_loadbuffer(L_, kErrorHandler, std::char_traits<char>::length(kErrorHandler), "@err_handler_def");
  lua_pcall(L_, 0, 0, 0);

  // The libraries' tables refuse new fields (Redis makes them read-only; existing fields can
  // still be replaced here), and the globals are read-only from here, an unknown one an error.
  for (const char* lib : {"redis", LUA_STRLIBNAME, LUA_MATHLIBNAME, LUA_TABLIBNAME}) {
    lua_getglobal(L_, lib);
    lua_newtable(L_);
    lua_pushcfunction(L_, global_write_error);
    lua_setfield(L_, -2, "__newindex");
    lua_setmetatable(L_, -2);
    lua_pop(L_, 1);
  }
  lua_pushvalue(L_, LUA_GLOBALSINDEX);
  lua_newtable(L_);
  lua_pushcfunction(L_, global_read_error);
  lua_setfield(L_, -2, "__index");
  lua_pushcfunction(L_, global_write_error);
  lua_setfield(L_, -2, "__newindex");
  lua_setmetatable(L_, -2);
  lua_pop(L_, 1);
  lua_sethook(L_, count_hook, LUA_MASKCOUNT, kHookEvery);
}

void LuaEngine::close() {
  if (L_) lua_close(L_);
  L_ = nullptr;
  shas_.clear();
  by_body_.clear();
}

void LuaEngine::flush() {
  close();
  open();
}

std::optional<std::string> LuaEngine::load(const std::string& body, std::string* error) {
  if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
  std::string sha = sha1_hex(body);
  if (shas_.count(sha)) return sha;
  if (luaL_loadbuffer(L_, body.data(), body.size(), "@user_script") != 0) {
    *error = std::string("ERR Error compiling script (new function): ") + lua_tostring(L_, -1);
    lua_pop(L_, 1);
    return std::nullopt;
  }
  lua_setfield(L_, LUA_REGISTRYINDEX, ("f_" + sha).c_str());
  shas_.insert(sha);
  by_body_.emplace(body, sha);
  return sha;
}

Resp LuaEngine::run(const std::string& sha, const std::vector<std::string>& keys, const std::vector<std::string>& args,
                    const Call& call) {
  call_ = &call;
  g_hook_count = 0;
  lua_pushstring(L_, "__redis__err__handler");
  lua_rawget(L_, LUA_GLOBALSINDEX);
  lua_getfield(L_, LUA_REGISTRYINDEX, ("f_" + sha).c_str());
  set_array(L_, "KEYS", keys);
  set_array(L_, "ARGV", args);
  const int failed = lua_pcall(L_, 0, 1, -2);
  Resp out = failed ? script_error(L_, sha) : to_resp(L_, -1);
  lua_pop(L_, 2);
  call_ = nullptr;
  return out;
}

}  // namespace redisgo::sim
