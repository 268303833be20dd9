// A real redis-server as a table backend, over hiredis's blocking API (every read bounded by
// a timeout). One server for the rows at large, a second one (re)started for the rows that
// need a young server.

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <regex>
#include <stdexcept>
#include <thread>

#include "lua/backend.h"
#include "support/redis_server.h"

namespace redisgo::luatable {
namespace {

using testing::RedisServer;

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

/// A refusal in the texts of Redis 7.2 and later, written as Redis 7.0 words it (the texts the
/// tables hold, tables.h): which command or channel was refused is what a row checks, and the
/// words are the server's. Anywhere in an error or a string: a script may quote the refusal in
/// its own error, or answer it as a string (kCheckRights). No change on 7.0.
std::string as_redis_70(std::string text) {
  static const std::regex kInScript(R"(ERR ACL failure in script: User \S+ has no permissions to run the '[^']+' command)");
  static const std::regex kChannelInScript(R"(ERR ACL failure in script: No permissions to access a channel)");
  static const std::regex kCommand(R"(NOPERM User \S+ has no permissions to run the ('[^']+') command)");
  text = std::regex_replace(text, kInScript, "ERR The user executing the script can't run this command or subcommand");
  text = std::regex_replace(text, kChannelInScript,
                            "ERR The user executing the script can't publish to the channel mentioned in the command");
  text = std::regex_replace(text, kCommand, "NOPERM this user has no permissions to run the $1 command");
  const std::string channel = "NOPERM No permissions to access a channel";
  if (text == channel) text = "NOPERM this user has no permissions to access one of the channels used as arguments";
  return text;
}

Resp convert(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_INTEGER: return Resp::num(r->integer);
    case REDIS_REPLY_STRING: return Resp::bulk(as_redis_70(std::string(r->str, r->len)));
    case REDIS_REPLY_STATUS: return Resp::status(std::string(r->str, r->len));
    case REDIS_REPLY_ERROR: return Resp::error(as_redis_70(std::string(r->str, r->len)));
    case REDIS_REPLY_ARRAY: {
      Resp out = Resp::array();
      for (std::size_t i = 0; i < r->elements; ++i) out.items.push_back(convert(r->element[i]));
      return out;
    }
    default: return Resp::nil();
  }
}

Context connect(int port) {
  const timeval tv{5, 0};
  Context c(redisConnectWithTimeout("127.0.0.1", port, tv));
  if (!c || c->err) throw std::runtime_error("cannot connect to redis-server on port " + std::to_string(port));
  redisSetTimeout(c.get(), tv);
  return c;
}

Resp send(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  ReplyPtr r(static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data())));
  if (!r) throw std::runtime_error(std::string("redis-server did not answer: ") + c->errstr);
  return convert(r.get());
}

/// The server the rows run on: the host's, or the one REDISGO_LUA_REDIS_SERVER names (a path
/// to a redis-server, or "waitaof": redis_server_with_waitaof(), Redis 8 on a host of 7.0), to
/// run the same tables on another version of Redis.
testing::RedisServerOptions server_options() {
  testing::RedisServerOptions o;
  const char* env = std::getenv("REDISGO_LUA_REDIS_SERVER");
  if (!env || !*env) return o;
  if (std::string(env) == "waitaof") {
    o.program = testing::redis_server_with_waitaof();
    if (o.program.empty()) throw std::runtime_error("REDISGO_LUA_REDIS_SERVER=waitaof: no redis-server of 7.2 or later");
  } else {
    o.program = {env};
  }
  return o;
}

/// One server and its connections.
struct Target {
  std::unique_ptr<RedisServer> server;
  Context admin;
  std::map<std::string, Context> users;

  void start() {
    users.clear();
    admin.reset();
    if (server) {
      server->restart();
    } else {
      server = std::make_unique<RedisServer>(server_options());
    }
    admin = connect(server->port());
  }

  std::int64_t uptime_s() {
    const std::string info = send(admin.get(), {"INFO", "server"}).text;
    const auto at = info.find("uptime_in_seconds:");
    return at == std::string::npos ? -1 : std::stoll(info.substr(at + 18));
  }

  redisContext* user(const Acl& acl) {
    const std::string name = acl.user();
    auto it = users.find(name);
    if (it != users.end()) return it->second.get();
    std::vector<std::string> setuser{"ACL", "SETUSER", name, "reset", "on", ">pw", "~*", acl.channels ? "&*" : "resetchannels",
                                     "+@all"};
    for (const auto& c : acl.only_channels) setuser.push_back("&" + c);
    for (const auto& d : acl.denied) setuser.push_back("-" + d);
    const Resp made = send(admin.get(), setuser);
    if (made.is_error()) throw std::runtime_error("ACL SETUSER " + name + ": " + made.text);
    Context c = connect(server->port());
    const Resp auth = send(c.get(), {"AUTH", name, "pw"});
    if (auth.is_error()) throw std::runtime_error("AUTH " + name + ": " + auth.text);
    return (users[name] = std::move(c)).get();
  }
};

class RealBackend final : public Backend {
 public:
  RealBackend() { main_.start(); }
  std::string name() const override { return "redis-server"; }

  void age(Age age) override {
    if (age == Age::kYoung) {
      // Young: up 0 or 1 whole seconds of the clock. A server older than that starts again.
      if (!young_.server || young_.uptime_s() > 1) young_.start();
      current_ = &young_;
      return;
    }
    current_ = &main_;
    if (age == Age::kOld) {
      const bool old = testing::wait_until([&] { return main_.uptime_s() >= 2; }, std::chrono::seconds(5),
                                           std::chrono::milliseconds(50));
      if (!old) throw std::runtime_error("the main redis-server did not reach an uptime of 2 s");
    }
  }

  void reset() override {
    send(current_->admin.get(), {"FLUSHALL"});
    listeners_.clear();
  }

  Resp command(const std::vector<std::string>& argv, const Acl& acl) override {
    return send(acl.empty() ? current_->admin.get() : current_->user(acl), argv);
  }

  void listen(const std::string& channel) override {
    Context c = connect(current_->server->port());
    const Resp r = send(c.get(), {"SUBSCRIBE", channel});
    if (!r.is_array()) throw std::runtime_error("SUBSCRIBE " + channel + ": " + to_string(r));
    listeners_.emplace_back(channel, std::move(c));
  }

  /// A PING through the subscriber: its answer comes after every message published before it.
  std::vector<std::string> heard(const std::string& channel) override {
    for (auto& [ch, c] : listeners_) {
      if (ch != channel) continue;
      std::vector<std::string> out;
      redisAppendCommand(c.get(), "PING");
      for (;;) {
        void* raw = nullptr;
        if (redisGetReply(c.get(), &raw) != REDIS_OK) throw std::runtime_error("subscriber of " + ch + " lost");
        ReplyPtr r(static_cast<redisReply*>(raw));
        const Resp msg = convert(r.get());
        if (msg.items.size() == 3 && msg.items[0].text == "message") {
          out.push_back(msg.items[2].text);
        } else if (!msg.items.empty() && msg.items[0].text == "pong") {
          return out;
        }
      }
    }
    return {};
  }

 private:
  Target main_, young_;
  Target* current_ = &main_;
  std::vector<std::pair<std::string, Context>> listeners_;
};

}  // namespace

std::unique_ptr<Backend> make_real_backend() { return std::make_unique<RealBackend>(); }

}  // namespace redisgo::luatable
