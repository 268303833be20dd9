#include "commands/check_probe.h"

#include "lock/scripts.h"
#include "redis/poller.h"
#include "redis/reply.h"
#include "util/clock.h"
#include "util/text.h"

namespace redisgo::commands::check {
namespace {

using redis::Call;
using redis::CallPtr;
using redis::Fault;
using redis::SteadyClock;

/// TIME round trips per node; the shortest bounds the offset best.
constexpr int kTimeSamples = 3;

/// This host's wall clock in µs since the epoch: what the servers' TIME is compared to.
std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The pause read again, once its EVAL has run: a connection goes by EVALSHA only then,
/// as the daemon's does.
void ask_by_sha(std::vector<std::unique_ptr<Probe>>& probes, const lock::LeaseKeys& keys, const config::RedisConfig& r) {
  std::vector<redis::AsyncConnection*> live;
  for (auto& p : probes) {
    if (!p->usable || !p->conn.connected() || !p->pause->ok()) continue;
    p->by_sha = p->conn.eval(lock::kReadPause, {keys.pause()}, {});
    live.push_back(&p->conn);
  }
  if (live.empty()) return;
  redis::DriveOptions o;
  o.deadline = SteadyClock::now() + r.io_timeout + std::chrono::seconds(1);
  redis::drive(live, [&] { return false; }, o);
  for (auto* c : live) {
    if (c->busy()) c->close(Fault::kTimeout, "no answer in time");
  }
}

/// The server's facts, the lease scripts' views and rights, once_per's state: every question
/// but the clocks' and the subscriptions', queued on `p`'s connection.
void send_questions(Probe& p, const lock::LeaseKeys& keys, const config::RedisConfig& r, int limit,
                    std::optional<std::chrono::milliseconds> once_per) {
  p.sent = SteadyClock::now();
  p.info = p.conn.send({"INFO"});
  p.role = p.conn.send({"ROLE"});
  p.policy = p.conn.send({"CONFIG", "GET", "maxmemory-policy"});
  p.maxmemory = p.conn.send({"CONFIG", "GET", "maxmemory"});
  p.save = p.conn.send({"CONFIG", "GET", "save"});
  p.appendfsync = p.conn.send({"CONFIG", "GET", "appendfsync"});
  p.inspect = p.conn.eval(lock::kInspect, {keys.key, keys.fence}, {});
  p.line = p.conn.eval(lock::kReadLine, {keys.line}, {"1", keys.channel});
  p.rights = p.conn.eval(lock::kCheckRights, {keys.base + ":check", keys.base + ":check:line"},
                         {"1", once_per ? "1" : "", publish_channel(r.fair, keys)});
  p.pause = p.conn.eval(lock::kReadPause, {keys.pause()}, {});
  if (limit < lock::kMaxSlots) p.beyond = p.conn.eval(lock::kSlotsBeyond, keys.slots_from(limit), {});
  if (once_per) {
    const auto current = lock::nearest_slot(wall_ms(), *once_per);
    const auto next = current + once_per->count() / 1000;
    const bool located = r.topology == config::Topology::kSentinel || r.topology == config::Topology::kCluster;
    p.once = p.conn.eval(lock::kReadOnce, {keys.witness(), keys.claim(current), keys.claim(next)},
                         {located ? "1" : ""});
    // Both return at once with nothing to wait for; refused (NOPERM) is what they tell.
    if (r.restart_guard) p.waitaof = p.conn.send({"WAITAOF", "0", "0", "0"});
    if (located) p.wait = p.conn.send({"WAIT", "0", "0"});
  }
}

/// Drives what send_questions queued, noting each probe's first reply and its TLS peer, then
/// which probes are usable (answered, credentials accepted).
void drive_questions(std::vector<std::unique_ptr<Probe>>& probes, const config::RedisConfig& r) {
  std::vector<redis::AsyncConnection*> conns;
  for (auto& p : probes) conns.push_back(&p->conn);
  redis::DriveOptions o;
  // The calls carry their own deadlines; this only guards against a bug keeping us here.
  o.deadline = SteadyClock::now() + 2 * (r.connect_timeout + r.io_timeout) + std::chrono::seconds(1);
  auto note_replies = [&] {
    for (auto& p : probes) {
      if (!p->first_reply && p->info->done()) p->first_reply = SteadyClock::now() - p->sent;
      if (!p->peer.empty() || !p->conn.connected()) continue;
      p->peer = p->conn.peer_info();
    }
    return false;
  };
  redis::drive(conns, note_replies, o);
  for (auto& p : probes) {
    if (p->conn.busy()) p->conn.close(Fault::kTimeout, "no answer in time");
    const Call& c = *p->info;
    p->usable = c.state() == Call::State::kReplied &&
                !(c.reply().is_error() && c.fault() == Fault::kAuth && c.error().find("NOAUTH") != std::string::npos);
  }
}

/// One round of TIME on the open connections, all nodes at once: a sample per node that answered.
void sample_clocks_once(std::vector<std::unique_ptr<Probe>>& probes, const config::RedisConfig& r) {
  std::vector<CallPtr> calls(probes.size());
  std::vector<std::int64_t> sent(probes.size(), 0), received(probes.size(), 0);
  std::vector<redis::AsyncConnection*> live;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    auto& p = *probes[i];
    if (!p.usable || !p.conn.connected()) continue;
    sent[i] = wall_us();
    calls[i] = p.conn.send({"TIME"});
    live.push_back(&p.conn);
  }
  if (live.empty()) return;
  auto note_times = [&] {
    bool all = true;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (!calls[i]) continue;
      if (calls[i]->done()) {
        if (received[i] == 0) received[i] = wall_us();
      } else {
        all = false;
      }
    }
    return all;
  };
  redis::DriveOptions o;
  o.deadline = SteadyClock::now() + r.io_timeout + std::chrono::seconds(1);
  redis::drive(live, note_times, o);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (!calls[i]) continue;
    auto& p = *probes[i];
    if (p.conn.busy()) p.conn.close(Fault::kTimeout, "no answer to TIME in time");
    const Call& c = *calls[i];
    if (!c.ok() || !c.reply().is_array() || c.reply().size() != 2 || received[i] == 0) continue;
    auto secs = redis::as_string(c.reply().element(0));
    auto micros = redis::as_string(c.reply().element(1));
    if (!secs || !micros) continue;
    if (auto server = parse_time_reply(*secs, *micros)) p.samples.push_back({sent[i], received[i], *server});
  }
}

/// Last: a subscribed connection takes no other command (it is closed after the check).
void ask_subscribe(std::vector<std::unique_ptr<Probe>>& probes, const lock::LeaseKeys& keys,
                   const config::RedisConfig& r) {
  std::vector<redis::AsyncConnection*> live;
  for (auto& p : probes) {
    if (!p->usable || !p->conn.connected()) continue;
    p->subscribe = p->conn.send({"SUBSCRIBE", subscribe_channel(r.fair, keys)});
    p->subscribe_control = p->conn.send({"SUBSCRIBE", keys.control});
    live.push_back(&p->conn);
  }
  if (live.empty()) return;
  redis::DriveOptions o;
  o.deadline = SteadyClock::now() + r.io_timeout + std::chrono::seconds(1);
  redis::drive(live, [&] {
    for (auto& p : probes) {
      if (p->subscribe && !p->subscribe->done()) return false;
      if (p->subscribe_control && !p->subscribe_control->done()) return false;
    }
    return true;
  }, o);
}

}  // namespace

/// A call's error without the "redis <node>: " prefix (the finding names the node).
std::string why(const Probe& p, const CallPtr& c) {
  if (!c) return "not asked";
  if (!c->done()) return "no answer";
  std::string e = c->error();
  if (e.empty()) return "unexpected " + std::string(redis::type_name(c->reply().get())) + " reply";
  const std::string prefix = p.conn.describe() + ": ";
  if (e.rfind(prefix, 0) == 0) e.erase(0, prefix.size());
  return e;
}

/// CONFIG GET <name> -> its value; nullopt when refused (ACL, renamed CONFIG) or unknown.
std::optional<std::string> config_value(const CallPtr& c) {
  if (!c || !c->ok() || !c->reply().is_array() || c->reply().size() < 2) return std::nullopt;
  auto v = redis::as_string(c->reply().element(1));
  return v ? std::optional<std::string>(shown_text(*v)) : std::nullopt;  // a server's words, into findings
}

std::string publish_channel(bool fair, const lock::LeaseKeys& keys) { return fair ? keys.wake("check") : keys.control; }
std::string subscribe_channel(bool fair, const lock::LeaseKeys& keys) { return fair ? keys.wake("check") : keys.channel; }


void ask(std::vector<std::unique_ptr<Probe>>& probes, const lock::LeaseKeys& keys, const config::RedisConfig& r,
         int limit, std::optional<std::chrono::milliseconds> once_per) {
  for (auto& p : probes) send_questions(*p, keys, r, limit, once_per);
  drive_questions(probes, r);
  ask_by_sha(probes, keys, r);
  // The clocks: a few TIME round trips on the open connections, all nodes at once.
  for (int round = 0; round < kTimeSamples; ++round) sample_clocks_once(probes, r);
  ask_subscribe(probes, keys, r);
}

}  // namespace redisgo::commands::check
