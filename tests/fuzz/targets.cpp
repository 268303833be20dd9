#include "fuzz/targets.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>
#include <climits>
#include <cstdint>

#include "config/config.h"
#include "lock/lease.h"
#include "lock/replies.h"
#include "lock/replies_admin.h"
#include "lock/replies_line.h"
#include "lock/replies_once.h"
#include "redis/connection.h"
#include "redis/poller.h"
#include "redis/reply.h"
#include "lock/scripts.h"
#include "util/duration.h"

namespace redisgo::fuzz {
namespace {

/// A broken property is a finding: abort, so libFuzzer saves the input.
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz property broken: %s\n", what);
    std::abort();
  }
}

config::EnvLookup fixed_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (name == "REDIS_PASSWORD") return std::string("fuzz-secret");
    return std::nullopt;
  };
}

/// What the rendering cannot carry: the inline secret is written masked.
config::Config comparable(config::Config c) {
  if (c.redis.password_source == config::PasswordSource::kInline) c.redis.password.clear();
  return c;
}

}  // namespace

int config(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto env = fixed_env();
  auto first = config::load_string(text, "fuzz.toml", env);
  check(first.config.has_value() == first.errors.empty(), "a config exactly when there is no error");
  // The secret comes from the environment (password_env = "REDIS_PASSWORD"); a text that
  // spells it out itself (in a host, say) may well be quoted back.
  const bool secret_in_text = text.find("fuzz-secret") != std::string::npos;
  for (const auto& e : first.errors) {
    check(!e.message.empty(), "every error says something");
    check(secret_in_text || e.str().find("fuzz-secret") == std::string::npos, "the secret never appears in an error");
  }
  if (!first.config) return 0;
  const std::string rendered = config::render_effective(*first.config);
  check(secret_in_text || rendered.find("fuzz-secret") == std::string::npos,
        "the secret never appears in the rendering");
  auto second = config::load_string(rendered, "fuzz.toml", env);
  check(second.config.has_value(), "the effective configuration loads again");
  if (first.config->redis.password_source == config::PasswordSource::kInline) return 0;  // masked on purpose
  check(comparable(*second.config) == comparable(*first.config), "the effective configuration is the same one");
  return 0;
}

int duration(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string why;
  auto d = parse_duration(text, &why);
  check(d.has_value() || !why.empty(), "a refusal says why");
  if (!d) return 0;
  check(d->count() >= 0, "never negative");
  auto again = parse_duration(format_duration(*d));
  check(again.has_value() && *again == *d, "format_duration reads back as the same duration");
  return 0;
}

namespace {

/// Every script's parser (lock/replies*.h) on one reply: none may crash, and what each
/// understands must hold together.
void lease_replies(const redisReply* r) {
  auto acq = lock::parse_acquire_reply(r);
  if (acq.kind == lock::AcquireReply::Kind::kGranted) check(acq.token > 0, "a grant carries a token");
  if (acq.kind == lock::AcquireReply::Kind::kInvalid) check(!acq.why.empty(), "not understood says why");
  for (const auto& [key, type] : acq.other_type_slots) check(!key.empty() && type.size() < 200, "slots shown cut");
  (void)lock::parse_flag_reply(r);
  (void)lock::parse_renew_reply(r);
  (void)lock::parse_raise_fence_reply(r);
  if (auto rel = lock::parse_release_reply(r); rel && rel->released) {
    check(rel->holder.empty() && rel->other_type.empty(), "a release names no other holder");
  }
  if (auto v = lock::parse_inspect_reply(r)) check(v->holder.size() < 300, "inspect's holder shown cut");
}

void line_replies(const redisReply* r) {
  if (auto l = lock::parse_read_line_reply(r)) {
    for (const auto& e : l->entries) check(e.holder.size() < 1000, "a line's member shown cut");
  }
  (void)lock::parse_pass_turn_reply(r);
  (void)lock::parse_pause_reply(r);
  (void)lock::parse_resume_reply(r);
  if (auto p = lock::parse_read_pause_reply(r)) {
    check(p->since_ms >= 0 && p->until_ms >= 0, "a pause's times are counts");
    check(p->by.size() < 1000 && p->reason.size() < 1000, "a pause's words shown cut");
  }
  if (auto p = lock::parse_publish_reply(r)) check(p->receivers >= 0, "receivers are a count");
}

void admin_replies(const redisReply* r) {
  (void)lock::parse_probe_rights_reply(r);
  (void)lock::parse_check_rights_reply(r);
  (void)lock::parse_read_refusal_reply(r);
  if (auto b = lock::parse_slots_beyond_reply(r)) check(b->held >= -1 && b->held <= lock::kMaxSlots, "slots beyond: a count");
  if (auto k = lock::parse_list_key_reply(r)) {
    check(k->holder.size() < 300, "list's holder shown cut");
    for (const auto& s : k->slots) check(s.slot >= 1 && s.slot < lock::kMaxSlots && s.holder.size() < 300, "a slot reads");
  }
}

void once_replies(const redisReply* r) {
  auto claim = lock::parse_claim_reply(r);
  if (claim.kind != lock::ClaimReply::Kind::kTaken) check(claim.holder.empty(), "only a taken claim names a holder");
  if (auto a = lock::parse_adopt_reply(r)) {
    check(a->kind == lock::AdoptReply::Kind::kTaken || a->adopted_ms > 0, "an adoption carries its time");
  }
  for (std::size_t keys = 0; keys < 4; ++keys) {
    if (auto claims = lock::parse_read_claims_reply(r, keys)) check(claims->claims.size() == keys, "one per key");
    if (auto once = lock::parse_read_once_reply(r, keys)) check(once->claims.size() == keys, "one per claim key");
  }
  lock::OnceNode state;
  if (lock::parse_once_state(r, state)) check(state.aof >= -1 && state.aof <= 1, "aof is -1, 0 or 1");
}

void replies(const redisReply* r) {
  lease_replies(r);
  line_replies(r);
  admin_replies(r);
  once_replies(r);
}

}  // namespace

int resp(const std::uint8_t* data, std::size_t size) {
  // The first byte picks the chunk size, so replies split at every boundary get tried.
  if (size == 0) return 0;
  const std::size_t chunk = 1 + data[0] % 17;
  redis::ReplyReader reader;
  for (std::size_t off = 1; off < size; off += chunk) {
    const std::size_t n = std::min(chunk, size - off);
    if (!reader.feed(reinterpret_cast<const char*>(data + off), n)) break;
    for (;;) {
      auto r = reader.next();
      if (!r) break;
      const redis::Reply reply(std::move(r));
      // Every interpretation of it must hold together, whatever it is.
      replies(reply.get());
      (void)redis::type_name(reply.get());
      (void)redis::as_string(reply.get());
      for (std::size_t i = 0; i < reply.size(); ++i) (void)redis::as_string(reply.element(i));
    }
    if (!reader.error().empty()) break;
  }
  return 0;
}

namespace {

/// Hands the connection one end of a socketpair instead of the socket it connected.
class PairFactory final : public redis::TransportFactory {
 public:
  mutable UniqueFd ours;
  std::unique_ptr<redis::Transport> make(UniqueFd, const redis::Endpoint&) const override {
    return std::make_unique<redis::Transport>(std::move(ours));
  }
};

constexpr const char* kSecret = "Fz-Secret-7";

/// A unix socket that connections can complete against (accepted and dropped).
struct Listener {
  std::string path;
  UniqueFd fd;
  Listener() {
    path = "/tmp/redisgo-fuzz-" + std::to_string(::getpid()) + ".sock";
    ::unlink(path.c_str());
    fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path.copy(a.sun_path, sizeof a.sun_path - 1);
    ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd.get(), 64);
  }
  ~Listener() { ::unlink(path.c_str()); }
  void drain() const {
    for (;;) {
      int c = ::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      ::close(c);
    }
  }
};

}  // namespace

int connection(const std::uint8_t* data, std::size_t size) {
  static const Listener listener;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) return 0;
  UniqueFd server(pair[1]);
  auto factory = std::make_shared<PairFactory>();
  factory->ours.reset(pair[0]);
  redis::ConnectionOptions o;
  o.endpoint.kind = redis::Endpoint::Kind::kUnix;
  o.endpoint.path = listener.path;
  o.password = kSecret;
  o.username = "user";
  o.db = 3;
  o.transport = factory;
  o.io_timeout = std::chrono::milliseconds(200);
  o.connect_timeout = std::chrono::milliseconds(200);
  redis::AsyncConnection conn(o);
  std::vector<redis::CallPtr> calls;
  calls.push_back(conn.eval(lock::kAcquireFair, {"k", "{k}:fence", "{k}:line", "{k}:pause"},
                            {"h", "1000", "100000", "0", "", "", "100000", "1000", ""}));
  calls.push_back(conn.send({"SUBSCRIBE", "chan"}));
  calls.push_back(conn.eval(lock::kRenew, {"k", "f"}, {"h", "1000", "", "1000"}));
  listener.drain();
  // The whole "server" answer, then EOF: every call must end, by a reply or a failure.
  std::size_t off = 0;
  while (off < size) {
    ssize_t n = ::send(server.get(), data + off, size - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  ::shutdown(server.get(), SHUT_WR);
  redis::DriveOptions d;
  d.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  redis::drive({&conn}, [&] {
    for (const auto& c : calls) {
      if (!c->done()) return false;
    }
    return true;
  }, d);
  for (const auto& c : calls) {
    check(c->done(), "every call ends once the server has closed");
    if (c->state() == redis::Call::State::kFailed) check(!c->error().empty(), "a failure says why");
    check(c->error().find(kSecret) == std::string::npos, "the password is never in a message");
  }
  (void)conn.take_messages();
  return 0;
}

}  // namespace redisgo::fuzz
