#include "redis/connection.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "redis/acl.h"
#include "redis/credentials.h"
#include "redis/topology.h"
#include "util/error.h"
#include "util/sha1.h"
#include "util/text.h"

namespace redisgo::redis {
namespace {

/// Reads per on_ready(): enough to drain any realistic burst, bounded so that a peer
/// that floods us cannot starve the other nodes of the same poll loop.
constexpr int kMaxReadsPerWakeup = 64;

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool element_is(const redisReply* e, std::string_view text) {
  auto s = as_string(e);
  return s && *s == text;
}

/// ["message", channel, payload]
bool is_message_push(const redisReply* r) {
  return r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 && element_is(r->element[0], "message");
}

std::string format_command(const std::vector<std::string>& argv) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  char* raw = nullptr;
  int len = redisFormatCommandArgv(&raw, static_cast<int>(argv.size()), ptrs.data(), lens.data());
  if (len < 0 || !raw) throw std::bad_alloc();
  std::string out(raw, static_cast<std::size_t>(len));
  redisFreeCommand(raw);
  return out;
}

std::string ms_text(Millis d) { return std::to_string(d.count()) + " ms"; }

/// `text` with every occurrence of `secret` masked. Redis never echoes a password, but a
/// proxy or an impostor on the port could, and its words end up in our logs.
std::string redact(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 8)) {
    text.replace(at, secret.size(), "********");
  }
  return text;
}

}  // namespace

const char* to_string(Fault fault) {
  switch (fault) {
    case Fault::kNone: return "none";
    case Fault::kResolve: return "resolve";
    case Fault::kConnect: return "connect";
    case Fault::kTimeout: return "timeout";
    case Fault::kClosed: return "closed";
    case Fault::kProtocol: return "protocol";
    case Fault::kAuth: return "auth";
    case Fault::kTls: return "tls";
    case Fault::kReply: return "reply";
    case Fault::kCancelled: return "cancelled";
  }
  return "unknown";
}

Fault classify_error_reply(std::string_view text) {
  if (starts_with(text, "NOAUTH") || starts_with(text, "WRONGPASS") || starts_with(text, "NOPERM")) return Fault::kAuth;
  // An ACL refusal inside a script comes as a plain ERR ("The user executing the script can't
  // run this command" in 7.0, "ACL failure in script: ..." in 7.2 and 8): still our
  // credentials' rights, not a broken node. So is "Protocol error: unauthenticated": a client
  // that has not authenticated may send at most 10 arguments (and 16 KB per argument), and
  // with no password sent to a server that needs one that is a refusal of our credentials (a
  // lease script with `limit` sends 1 + limit keys).
  if (refusal_of(text) != Refusal::kNone) return Fault::kAuth;
  return Fault::kReply;
}

const std::string& Script::sha() const {
  std::call_once(sha_once_, [this] { sha_ = sha1_hex(source); });
  return sha_;
}

AsyncConnection::AsyncConnection(ConnectionOptions options)
    : options_(std::move(options)), reader_(std::make_unique<ReplyReader>()) {
  options_.connect_timeout = std::max(options_.connect_timeout, Millis(1));
  options_.io_timeout = std::max(options_.io_timeout, Millis(1));
}

AsyncConnection::~AsyncConnection() = default;
AsyncConnection::AsyncConnection(AsyncConnection&&) noexcept = default;
AsyncConnection& AsyncConnection::operator=(AsyncConnection&&) noexcept = default;

std::string AsyncConnection::describe() const {
  if (!options_.locator) return "redis " + options_.endpoint.str();
  if (current_.kind == Endpoint::Kind::kTcp && current_.host.empty()) return "redis " + options_.locator->name();
  return "redis " + current_.str() + " (" + options_.locator->name() + ")";
}

bool AsyncConnection::stale() const noexcept {
  return options_.locator && state_ != State::kIdle && generation_ != options_.locator->generation();
}

void AsyncConnection::report_wrong(Fault fault, const std::string& why) noexcept {
  if (!options_.locator || current_.host.empty()) return;
  switch (fault) {
    case Fault::kConnect:
    case Fault::kTimeout:
    case Fault::kClosed:
    case Fault::kResolve:
    case Fault::kReply: options_.locator->wrong(current_, why); return;
    default: return;  // credentials, TLS, protocol: asking elsewhere would not help
  }
}

std::string AsyncConnection::peer_info() const {
  return state_ == State::kOpen && transport_ ? transport_->peer_info() : std::string();
}

int AsyncConnection::fd() const noexcept {
  switch (state_) {
    case State::kIdle: return -1;
    case State::kResolving: return resolution_ ? resolution_->fd() : -1;
    case State::kConnecting: return connecting_.get();
    case State::kHandshake:
    case State::kOpen: return transport_ ? transport_->fd() : -1;
  }
  return -1;
}

short AsyncConnection::events() const noexcept {
  switch (state_) {
    case State::kIdle: return 0;
    case State::kResolving: return POLLIN;
    case State::kConnecting: return POLLOUT;
    case State::kHandshake: return transport_wants_;
    case State::kOpen: {
      short ev = POLLIN | transport_wants_;
      if (out_offset_ < out_.size()) ev |= POLLOUT;
      return ev;
    }
  }
  return 0;
}

bool AsyncConnection::buffered() const noexcept {
  return state_ == State::kOpen && transport_ && transport_->has_buffered();
}

SteadyClock::time_point AsyncConnection::next_deadline() const noexcept {
  if (buffered()) return SteadyClock::time_point{};  // past: check_deadlines() reads them
  auto t = SteadyClock::time_point::max();
  if (state_ == State::kResolving || state_ == State::kConnecting || state_ == State::kHandshake) t = connect_deadline_;
  for (const auto& p : pending_) t = std::min(t, p.deadline);
  return t;
}

bool AsyncConnection::busy() const noexcept {
  return !pending_.empty() || (state_ != State::kIdle && state_ != State::kOpen);
}

std::vector<AsyncConnection::Message> AsyncConnection::take_messages() { return std::exchange(messages_, {}); }

void AsyncConnection::report(Fault fault) noexcept {
  if (fault == Fault::kNone || fault == Fault::kCancelled || !options_.on_fault) return;
  try {
    options_.on_fault(fault);
  } catch (...) {
    // A counter that could not count (an allocation): the failure itself goes on as it would.
  }
}

void AsyncConnection::close(Fault fault, const std::string& why) noexcept {
  report(fault);
  reset(fault, why);
}

void AsyncConnection::reset(Fault fault, const std::string& why) noexcept {
  try {
    last_fault_ = fault;
    const std::string message = describe() + ": " + why;
    if (state_ != State::kIdle && fault != Fault::kReply) report_wrong(fault, why);
    // Taken out first: a caller woken by a failed call may send again, on a fresh state.
    auto dropped = std::exchange(pending_, {});
    transport_.reset();
    connecting_.reset();
    resolution_.reset();
    addresses_.clear();
    next_address_ = 0;
    out_.clear();
    out_offset_ = 0;
    held_.clear();
    auth_gate_ = false;
    transport_wants_ = 0;
    reader_ = std::make_unique<ReplyReader>();
    subscribed_ = false;
    loaded_.clear();
    state_ = State::kIdle;
    for (auto& p : dropped) Link::failed(*p.call, fault, message);
  } catch (...) {
    // Only allocation can fail above; the state is already reset as far as it got.
    state_ = State::kIdle;
  }
}

void AsyncConnection::fail_with(const std::exception& e, Fault during) {
  if (dynamic_cast<const ClosedError*>(&e)) return close(Fault::kClosed, e.what());
  if (dynamic_cast<const TimeoutError*>(&e)) return close(Fault::kTimeout, e.what());
  if (dynamic_cast<const TlsError*>(&e)) return close(Fault::kTls, e.what());
  if (dynamic_cast<const AuthError*>(&e)) return close(Fault::kAuth, e.what());
  close(during, e.what());
}

bool AsyncConnection::retry_auth() {
  if (auth_retried_ || !options_.credentials || !options_.credentials->refused(auth_generation_)) return false;
  // Every command of the caller's is still held behind AUTH (held_), none has run: they go
  // to the new connection as they are, in order (with the scripts they EVAL first).
  std::deque<Pending> callers;
  for (auto& p : pending_) {
    if (p.kind == Kind::kUser) callers.push_back(std::move(p));
  }
  pending_.clear();
  std::string held = std::move(held_);
  const Fault before = last_fault_;
  // Fails nothing (all taken out), and is no failure yet: only a refusal of the password read
  // again is told.
  reset(Fault::kAuth, "AUTH refused; reconnecting with the password read again");
  last_fault_ = before;
  auth_retried_ = true;
  begin_connect();
  if (state_ == State::kIdle) {  // failed at once (it said why in last_connect_error_)
    for (auto& p : callers) Link::failed(*p.call, last_fault_, describe() + ": " + last_connect_error_);
    return true;
  }
  const auto deadline = SteadyClock::now() + options_.connect_timeout + options_.io_timeout;
  for (auto& p : callers) {
    p.deadline = deadline;
    pending_.push_back(std::move(p));
  }
  held_ += held;  // behind the new AUTH (auth_gate_ is set again)
  return true;
}

CallPtr AsyncConnection::send(std::vector<std::string> argv) { return submit(std::move(argv), nullptr); }

CallPtr AsyncConnection::send(std::vector<std::string> argv, Millis blocks) {
  return submit(std::move(argv), nullptr, std::max(Millis(0), blocks));
}

CallPtr AsyncConnection::submit(std::vector<std::string> argv, const Script* script, Millis blocks) {
  auto call = std::make_shared<Call>();
  try {
    if (stale()) {
      // The locator names another server now (failover, MOVED): what is still pending
      // here belongs to earlier rounds and is superseded, not a failure of the node.
      close(Fault::kCancelled, "superseded: " + options_.locator->name() + " moved; reconnecting");
    }
    const auto now = SteadyClock::now();
    const bool was_idle = state_ == State::kIdle;
    // Redis answers in order: behind a command that blocks, a call is answered only once that
    // one is. Counted from now, its deadline closed the connection under a WAIT, and what was
    // queued behind (the drop of a claim) was lost unrun.
    auto starts = now;
    for (const auto& p : pending_) starts = std::max(starts, p.blocked_until);
    const auto blocked_until = blocks > Millis(0) ? starts + blocks : SteadyClock::time_point{};
    auto deadline = starts + options_.io_timeout + blocks;
    if (state_ != State::kOpen) deadline += options_.connect_timeout;
    if (was_idle) {
      auth_retried_ = false;
      begin_connect();  // queues AUTH/SELECT/SCRIPT LOAD first
    }
    if (state_ == State::kIdle) {
      // begin_connect() failed at once (e.g. a unix path that is too long): reported.
      Link::failed(*call, last_fault_, describe() + ": " + last_connect_error_);
      return call;
    }
    // By SHA only once an EVAL of it has been answered here (dispatch): an EVAL that the
    // server refused before running it (an ACL key pattern, a full memory) cached nothing,
    // and an EVALSHA pipelined behind it would meet NOSCRIPT.
    const bool by_sha = script && std::find(loaded_.begin(), loaded_.end(), script->source) != loaded_.end();
    if (script) {
      argv[0] = by_sha ? "EVALSHA" : "EVAL";
      argv[1] = by_sha ? script->sha() : std::string(script->source);
    }
    std::vector<std::string> kept = by_sha ? argv : std::vector<std::string>();
    enqueue(std::move(argv), Kind::kUser, call, deadline, blocked_until);
    pending_.back().script = script;
    pending_.back().by_sha = std::move(kept);
    if (state_ == State::kOpen) flush();
  } catch (const std::exception& e) {
    fail_with(e, Fault::kClosed);
  }
  return call;
}

CallPtr AsyncConnection::eval(const Script& script, const std::vector<std::string>& keys,
                              const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.emplace_back("EVALSHA");
  argv.emplace_back();  // the SHA-1, or the source when this connection has not sent it yet (submit)
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return submit(std::move(argv), &script);
}

void AsyncConnection::enqueue(std::vector<std::string> argv, Kind kind, CallPtr call,
                              SteadyClock::time_point deadline, SteadyClock::time_point blocked_until) {
  if (out_offset_ == out_.size()) {
    out_.clear();
    out_offset_ = 0;
  }
  (auth_gate_ && kind == Kind::kUser ? held_ : out_) += format_command(argv);
  pending_.push_back(Pending{std::move(call), deadline, kind, blocked_until, nullptr, {}});
}

void AsyncConnection::flush() {
  while (out_offset_ < out_.size()) {
    short want = 0;
    std::size_t n = transport_->write(out_.data() + out_offset_, out_.size() - out_offset_, &want);
    if (n == 0) {
      transport_wants_ = want == POLLOUT ? 0 : want;  // POLLOUT is implied by pending output
      return;
    }
    out_offset_ += n;
  }
  out_.clear();
  out_offset_ = 0;
}

void AsyncConnection::on_ready(short revents) noexcept {
  try {
    switch (state_) {
      case State::kIdle: return;
      case State::kResolving:
        if (resolution_ && resolution_->done()) after_resolution();
        return;
      case State::kConnecting:
        if (revents == 0) return;
        try {
          connect_finished(connecting_.get(), "connect to " + addresses_[next_address_ - 1].str());
        } catch (const Error& e) {
          last_connect_error_ = e.what();
          connecting_.reset();
          connect_next_address();
          return;
        }
        socket_connected();
        return;
      case State::kHandshake:
        if (revents != 0) continue_handshake();
        return;
      case State::kOpen:
        if ((revents & POLLOUT) || (transport_wants_ & POLLOUT)) flush();
        if (state_ == State::kOpen && ((revents & (POLLIN | POLLERR | POLLHUP)) || transport_->has_buffered())) {
          read_available();
        }
        return;
    }
  } catch (const std::exception& e) {
    fail_with(e, state_ == State::kOpen ? Fault::kClosed : Fault::kConnect);
  }
}

void AsyncConnection::read_available() {
  char buf[16 * 1024];
  for (int i = 0; i < kMaxReadsPerWakeup && state_ == State::kOpen; ++i) {
    short want = 0;
    std::size_t n = transport_->read(buf, sizeof buf, &want);
    if (n == 0) {
      transport_wants_ = want == POLLIN ? 0 : want;  // POLLIN is always polled
      break;
    }
    if (!reader_->feed(buf, n)) {
      close(Fault::kProtocol, redact(reader_->error(), auth_password_));
      return;
    }
    while (state_ == State::kOpen) {
      ReplyPtr r = reader_->next();
      if (!r) {
        if (!reader_->error().empty()) close(Fault::kProtocol, redact(reader_->error(), auth_password_));
        break;
      }
      dispatch(std::move(r));
    }
    if (state_ != State::kOpen || (n < sizeof buf && !transport_->has_buffered())) break;  // drained for now
  }
}

void AsyncConnection::setup_answered(Kind kind, const Reply& reply, bool error, const std::string& text,
                                     const std::string& shown) {
  switch (kind) {
    case Kind::kAuth:
      // Redis's message (WRONGPASS ...) never echoes the password; neither do we. A server
      // without a password ("AUTH <password> called without any password configured") is
      // refused credentials too: the config names a password that this server does not
      // have, which no retry will fix.
      if (error) {
        const bool refused =
            classify_error_reply(text) == Fault::kAuth || text.find("without any password") != std::string::npos;
        // A rotated password: the file may have the new one (redis/credentials.h).
        if (refused && retry_auth()) return;
        close(refused ? Fault::kAuth : Fault::kReply,
              "AUTH failed" + (options_.username.empty() ? std::string() : " as user " + options_.username) + ": " +
                  shown);
        return;
      }
      // Authenticated: what the caller queued meanwhile goes out now.
      auth_gate_ = false;
      auth_retried_ = false;
      if (!held_.empty()) {
        out_ += held_;
        held_.clear();
        flush();
      }
      return;
    case Kind::kSelect:
      if (error) close(classify_error_reply(text), "SELECT " + std::to_string(options_.db) + " failed: " + shown);
      return;
    case Kind::kScriptLoad:
      if (error) close(classify_error_reply(text), "SCRIPT LOAD failed: " + shown);
      return;
    case Kind::kRole: {
      // Sentinel: the server the sentinels named must say it is the master; a demoted
      // one (a replica now) would refuse writes or, worse, hold a stale lease.
      const auto role = reply.is_array() && reply.size() > 0 ? as_string(reply.element(0)) : std::nullopt;
      if (error || !role || *role != "master") {
        const std::string why = error ? "ROLE failed: " + shown
                                      : "is not the master (ROLE says '" + shown_text(role.value_or("?")) +
                                            "'); asking the sentinels again";
        if (options_.locator) options_.locator->wrong(current_, why);
        close(Fault::kReply, why);
      }
      return;
    }
    case Kind::kUser: return;
  }
}

void AsyncConnection::dispatch(ReplyPtr raw) {
  if (subscribed_ && is_message_push(raw.get())) {
    messages_.push_back({as_string(raw->element[1]).value_or(""), as_string(raw->element[2]).value_or("")});
    return;
  }
  if (pending_.empty()) {
    close(Fault::kProtocol, std::string("unexpected ") + type_name(raw.get()) + " reply: nothing was asked");
    return;
  }
  Pending p = std::move(pending_.front());
  pending_.pop_front();
  Reply reply(std::move(raw));
  const bool error = reply.is_error();
  // `text` decides (a prefix, a redirect's address); `shown` is what messages and logs carry:
  // escaped and bounded here, where a reply becomes a message (util/text.h).
  const std::string text = error ? redact(reply.str(), auth_password_) : std::string();
  const std::string shown = error ? shown_text(text) : std::string();
  if (p.kind != Kind::kUser) {
    setup_answered(p.kind, reply, error, text, shown);
    return;
  }
  if (p.script && script_answered(p, error, text)) return;
  const Fault fault = error ? classify_error_reply(text) : Fault::kNone;
  if (error) {
    // A redirect is followed by the caller (Cluster): the call is not lost.
    if (!starts_with(text, "MOVED ") && !starts_with(text, "ASK ")) report(fault);
  } else if (reply.is_array() && reply.size() == 3 && element_is(reply.element(0), "subscribe")) {
    subscribed_ = true;
  }
  replied(*p.call, std::move(reply), fault, error ? describe() + ": " + shown : std::string());
  if (error && options_.locator) {
    if (starts_with(text, "MOVED ")) {
      // "MOVED <slot> <host:port>": the slot's owner changed. The locator learns it (a new
      // generation), and this connection reconnects there before its next command.
      auto at = text.rfind(' ');
      if (auto to = Endpoint::parse(text.substr(at + 1))) options_.locator->moved(*to);
    } else if (starts_with(text, "READONLY")) {
      options_.locator->wrong(current_, shown);
    }
  }
  if (error && starts_with(text, "NOSCRIPT")) {
    // SCRIPT FLUSH since we loaded it, with calls pipelined behind this one: they fail and
    // the connection starts over (EVAL again), never a retry that would run out of order.
    reset(Fault::kReply, "the server lost the scripts loaded on this connection (SCRIPT FLUSH?); reconnecting");
  }
}

bool AsyncConnection::script_answered(Pending& p, bool error, const std::string& text) {
  if (!error) {
    // It ran, so the server has it cached: later calls go by SHA.
    if (p.by_sha.empty() && std::find(loaded_.begin(), loaded_.end(), p.script->source) == loaded_.end()) {
      loaded_.push_back(p.script->source);
    }
    return false;
  }
  if (p.by_sha.empty() || !starts_with(text, "NOSCRIPT") || !pending_.empty()) return false;
  // The server lost the script (SCRIPT FLUSH, a restart behind a proxy) and this EVALSHA did
  // not run. Nothing was sent behind it, so sending it again as EVAL keeps the order the
  // caller gave; with commands behind it (they ran) it fails instead, below.
  loaded_.erase(std::remove(loaded_.begin(), loaded_.end(), p.script->source), loaded_.end());
  std::vector<std::string> argv = std::move(p.by_sha);
  argv[0] = "EVAL";
  argv[1] = std::string(p.script->source);
  enqueue(std::move(argv), Kind::kUser, std::move(p.call), SteadyClock::now() + options_.io_timeout);
  pending_.back().script = p.script;
  flush();
  return true;
}

void AsyncConnection::check_deadlines(SteadyClock::time_point now) noexcept {
  if (state_ == State::kIdle) return;
  if (buffered()) {
    // Bytes the TLS layer decrypted but poll() cannot see (next_deadline() said "now").
    try {
      read_available();
    } catch (const std::exception& e) {
      fail_with(e, Fault::kClosed);
      return;
    }
    if (state_ == State::kIdle) return;
  }
  if (state_ != State::kOpen && now >= connect_deadline_) {
    std::string what = state_ == State::kResolving ? "name lookup" : state_ == State::kConnecting ? "connect" : "handshake";
    if (state_ == State::kResolving && options_.locator && current_.host.empty()) {
      // Still waiting for the sentinels or the cluster seeds to name the server.
      what = "finding " + options_.locator->name() + " (no answer from the sentinels or seeds)";
    }
    close(Fault::kTimeout, what + " timed out after " + ms_text(options_.connect_timeout));
    return;
  }
  for (const auto& p : pending_) {
    if (p.deadline <= now) {
      close(Fault::kTimeout, "no reply within " + ms_text(options_.io_timeout));
      return;
    }
  }
}

}  // namespace redisgo::redis
