// Server, connection, pub/sub and scripting commands, with Redis 7.0's replies: TIME, INFO
// (the fields the daemon and `check` read, with the simulated clock's uptime), CONFIG GET,
// ROLE, WAIT, AUTH, SELECT, SUBSCRIBE/PUBLISH/PUBSUB, EVAL/EVALSHA/SCRIPT.

#include <cstdio>

#include "sim/state.h"
#include "util/sha1.h"

namespace redisgo::sim {
namespace {

using State = Node::State;

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

Resp cmd_time(State& s, Client&, const Argv&) {
  const std::int64_t sec = floor_div(s.now_us, 1000000);
  return Resp::strings({std::to_string(sec), std::to_string(s.now_us - sec * 1000000)});
}

Resp cmd_ping(State&, Client& c, const Argv& a) {
  if (a.size() > 2) return Resp::error("ERR wrong number of arguments for 'ping' command");
  if (!c.channels.empty()) return Resp::strings({"pong", a.size() == 2 ? a[1] : ""});
  return a.size() == 2 ? Resp::bulk(a[1]) : Resp::status("PONG");
}

Resp cmd_echo(State&, Client&, const Argv& a) { return Resp::bulk(a[1]); }

Resp cmd_info(State& s, Client&, const Argv& a) {
  return Resp::bulk(s.info(std::vector<std::string>(a.begin() + 1, a.end())));
}

Resp cmd_config_get(State&, Client&, const Argv& a) {
  static const std::vector<std::pair<std::string, std::string>> params{
      {"appendfsync", "everysec"}, {"appendonly", "no"}, {"databases", "16"}, {"maxmemory", "0"},
      {"maxmemory-policy", "noeviction"}, {"save", ""}};
  Resp out = Resp::array();
  for (const auto& [name, value] : params) {
    for (std::size_t i = 2; i < a.size(); ++i) {
      if (glob_match(lower(a[i]), name)) {
        out.items.push_back(Resp::bulk(name));
        out.items.push_back(Resp::bulk(value));
        break;
      }
    }
  }
  return out;
}

Resp cmd_role(State&, Client&, const Argv&) { return Resp::array({Resp::bulk("master"), Resp::num(0), Resp::array()}); }

/// No replicas are modelled: WAIT answers 0 at once (a real master with none would wait for
/// its timeout when asked for one or more).
Resp cmd_wait(State&, Client&, const Argv& a) {
  if (!parse_int(a[1]) || !parse_int(a[2])) return Resp::error(errors::kNotInteger);
  return Resp::num(0);
}

Resp cmd_select(State&, Client&, const Argv& a) {
  auto db = parse_int(a[1]);
  if (!db) return Resp::error(errors::kNotInteger);
  if (*db < 0 || *db >= 16) return Resp::error("ERR DB index is out of range");
  if (*db != 0) return Resp::error("ERR sim: only database 0 is modelled");
  return Resp::ok();
}

Resp cmd_auth(State& s, Client& c, const Argv& a) {
  if (a.size() > 3) return Resp::error(errors::kSyntax);
  const std::string user = a.size() == 3 ? a[1] : "default";
  const std::string& pass = a.back();
  auto it = s.users.find(user);
  if (a.size() == 2 && it != s.users.end() && it->second.password.empty()) {
    return Resp::error(
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your "
        "configuration is correct?");
  }
  if (it == s.users.end() || (!it->second.password.empty() && it->second.password != pass)) {
    return Resp::error("WRONGPASS invalid username-password pair or user is disabled.");
  }
  c.user = user;
  return Resp::ok();
}

Resp cmd_quit(State& s, Client& c, const Argv&) {
  s.unsubscribe_all(c);
  c.open = false;
  return Resp::ok();
}

Resp cmd_subscribe(State& s, Client& c, const Argv& a) {
  Resp first;
  for (std::size_t i = 1; i < a.size(); ++i) {
    c.channels.insert(a[i]);
    s.channels[a[i]].insert(c.id);
    Resp r = Resp::array({Resp::bulk("subscribe"), Resp::bulk(a[i]), Resp::num(static_cast<std::int64_t>(c.channels.size()))});
    if (i == 1) {
      first = std::move(r);
    } else {
      c.pushes.push_back(std::move(r));
    }
  }
  return first;
}

Resp cmd_unsubscribe(State& s, Client& c, const Argv& a) {
  std::vector<std::string> which(a.begin() + 1, a.end());
  if (which.empty()) which.assign(c.channels.begin(), c.channels.end());
  if (which.empty()) return Resp::array({Resp::bulk("unsubscribe"), Resp::nil(), Resp::num(0)});
  Resp first;
  for (std::size_t i = 0; i < which.size(); ++i) {
    const std::string& ch = which[i];
    c.channels.erase(ch);
    if (auto it = s.channels.find(ch); it != s.channels.end()) {
      it->second.erase(c.id);
      if (it->second.empty()) s.channels.erase(it);
    }
    Resp r = Resp::array({Resp::bulk("unsubscribe"), Resp::bulk(ch), Resp::num(static_cast<std::int64_t>(c.channels.size()))});
    if (i == 0) {
      first = std::move(r);
    } else {
      c.pushes.push_back(std::move(r));
    }
  }
  return first;
}

Resp cmd_publish(State& s, Client&, const Argv& a) { return Resp::num(s.publish(a[1], a[2])); }

Resp cmd_pubsub_numsub(State& s, Client&, const Argv& a) {
  Resp out = Resp::array();
  for (std::size_t i = 2; i < a.size(); ++i) {
    auto it = s.channels.find(a[i]);
    out.items.push_back(Resp::bulk(a[i]));
    out.items.push_back(Resp::num(it == s.channels.end() ? 0 : static_cast<std::int64_t>(it->second.size())));
  }
  return out;
}

Resp cmd_pubsub_channels(State& s, Client&, const Argv& a) {
  Resp out = Resp::array();
  for (const auto& [ch, subs] : s.channels) {
    if (a.size() < 3 || glob_match(a[2], ch)) out.items.push_back(Resp::bulk(ch));
  }
  return out;
}

Resp cmd_eval(State& s, Client& c, const Argv& a) { return s.eval(c, a, false); }
Resp cmd_evalsha(State& s, Client& c, const Argv& a) { return s.eval(c, a, true); }

Resp cmd_script_load(State& s, Client&, const Argv& a) {
  std::string error;
  auto sha = s.lua->load(a[2], &error);
  return sha ? Resp::bulk(*sha) : Resp::error(error);
}

Resp cmd_script_exists(State& s, Client&, const Argv& a) {
  Resp out = Resp::array();
  for (std::size_t i = 2; i < a.size(); ++i) out.items.push_back(Resp::num(s.lua->exists(lower(a[i])) ? 1 : 0));
  return out;
}

Resp cmd_script_flush(State& s, Client&, const Argv& a) {
  if (a.size() > 3 || (a.size() == 3 && lower(a[2]) != "async" && lower(a[2]) != "sync")) {
    return Resp::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
  }
  s.lua->flush();
  return Resp::ok();
}

void line(std::string& out, const std::string& name, const std::string& value) { out += name + ":" + value + "\r\n"; }

}  // namespace

std::string Node::State::info(const std::vector<std::string>& asked) const {
  std::vector<std::string> sections;
  for (const auto& a : asked) sections.push_back(lower(a));
  const bool everything = sections.empty() || sections[0] == "default" || sections[0] == "all" || sections[0] == "everything";
  const bool stats = !sections.empty() && (sections[0] == "all" || sections[0] == "everything");
  auto want = [&](const char* name) {
    if (everything) return true;
    for (const auto& s : sections) {
      if (s == name) return true;
    }
    return false;
  };
  std::string out;
  auto header = [&](const char* title) {
    if (!out.empty()) out += "\r\n";
    out += std::string("# ") + title + "\r\n";
  };
  const std::int64_t uptime = floor_div(now_us, 1000000) - floor_div(started_us, 1000000);
  const std::string run_id = sha1_hex("sim:" + std::to_string(options.seed) + ":" + std::to_string(restarts));
  if (want("server")) {
    header("Server");
    line(out, "redis_version", options.version);
    line(out, "redis_mode", "standalone");
    line(out, "os", "Linux redisgo-sim x86_64");
    line(out, "arch_bits", "64");
    line(out, "process_id", std::to_string(1000 + restarts));
    line(out, "run_id", run_id);
    line(out, "tcp_port", std::to_string(options.port));
    line(out, "server_time_usec", std::to_string(now_us));
    line(out, "uptime_in_seconds", std::to_string(uptime));
    line(out, "uptime_in_days", std::to_string(uptime / 86400));
    line(out, "hz", "10");
    line(out, "executable", "/usr/bin/redis-server");
  }
  if (want("clients")) {
    header("Clients");
    std::int64_t open = 0;
    for (const auto& [id, c] : clients) open += c.open ? 1 : 0;
    line(out, "connected_clients", std::to_string(open));
    line(out, "blocked_clients", "0");
  }
  if (want("memory")) {
    header("Memory");
    line(out, "maxmemory", "0");
    line(out, "maxmemory_policy", "noeviction");
  }
  if (want("persistence")) {
    header("Persistence");
    line(out, "loading", "0");
    line(out, "rdb_last_save_time", std::to_string(floor_div(started_us, 1000000)));
    line(out, "aof_enabled", "0");
  }
  if (want("stats")) {
    header("Stats");
    line(out, "pubsub_channels", std::to_string(channels.size()));
  }
  if (want("replication")) {
    header("Replication");
    line(out, "role", "master");
    line(out, "connected_slaves", "0");
    line(out, "master_replid", run_id);
    line(out, "master_repl_offset", "0");
  }
  if (want("cluster")) {
    header("Cluster");
    line(out, "cluster_enabled", "0");
  }
  if (want("keyspace")) header("Keyspace");
  if (stats || want("commandstats")) {
    header("Commandstats");
    for (const auto& [name, n] : calls) {
      std::string key = name;
      for (char& ch : key) {
        if (ch == '|') ch = '_';
      }
      line(out, "cmdstat_" + key,
           "calls=" + std::to_string(n) + ",usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0");
    }
  }
  return out;
}

void add_server_commands(std::map<std::string, Command>& t) {
  t["time"] = {"time", 1, 0, cmd_time};
  t["ping"] = {"ping", -1, kSubscribed, cmd_ping};
  t["echo"] = {"echo", 2, 0, cmd_echo};
  t["info"] = {"info", -1, 0, cmd_info};
  t["config"] = {"config", -2, 0, nullptr, true};
  t["config|get"] = {"config|get", -3, kNoScript, cmd_config_get};
  t["role"] = {"role", 1, kNoScript, cmd_role};
  t["wait"] = {"wait", 3, kNoScript, cmd_wait};
  t["select"] = {"select", 2, 0, cmd_select};
  t["auth"] = {"auth", -2, kNoScript, cmd_auth};
  t["quit"] = {"quit", -1, kNoScript | kSubscribed, cmd_quit};
  t["subscribe"] = {"subscribe", -2, kNoScript | kSubscribed | kChannels, cmd_subscribe};
  t["unsubscribe"] = {"unsubscribe", -1, kNoScript | kSubscribed, cmd_unsubscribe};
  t["publish"] = {"publish", 3, kPublish, cmd_publish};
  t["pubsub"] = {"pubsub", -2, 0, nullptr, true};
  t["pubsub|numsub"] = {"pubsub|numsub", -2, 0, cmd_pubsub_numsub};
  t["pubsub|channels"] = {"pubsub|channels", -2, 0, cmd_pubsub_channels};
  t["eval"] = {"eval", -3, kNoScript, cmd_eval};
  t["evalsha"] = {"evalsha", -3, kNoScript, cmd_evalsha};
  t["script"] = {"script", -2, kNoScript, nullptr, true};
  t["script|load"] = {"script|load", 3, kNoScript, cmd_script_load};
  t["script|exists"] = {"script|exists", -3, kNoScript, cmd_script_exists};
  t["script|flush"] = {"script|flush", -2, kNoScript, cmd_script_flush};
}

}  // namespace redisgo::sim
