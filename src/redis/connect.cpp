// AsyncConnection: the way to a ready connection (connection.h), from the locator's answer
// through the TCP connect, one address after another, to the TLS handshake. The set-up
// commands (AUTH, SELECT, ROLE where a locator asks for it) are queued first, in begin_connect().
#include <string>

#include "redis/connection.h"
#include "redis/credentials.h"
#include "redis/topology.h"
#include "util/error.h"

namespace redisgo::redis {

void AsyncConnection::begin_connect() {
  const auto now = SteadyClock::now();
  connect_deadline_ = now + options_.connect_timeout;
  last_connect_error_.clear();
  // The set-up commands go first, in one write with whatever the caller queues next (after
  // AUTH's answer when there is a password).
  const auto deadline = connect_deadline_ + options_.io_timeout;
  state_ = State::kResolving;
  if (options_.credentials) {
    auto now_valid = options_.credentials->current();
    auth_password_ = std::move(now_valid.password);
    auth_generation_ = now_valid.generation;
  } else {
    auth_password_ = options_.password;
  }
  if (!auth_password_.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!options_.username.empty()) auth.push_back(options_.username);
    auth.push_back(auth_password_);
    enqueue(std::move(auth), Kind::kAuth, std::make_shared<Call>(), deadline);
    auth_gate_ = true;  // the caller's commands wait for its answer (connection.h, held_)
  }
  if (options_.db != 0) enqueue({"SELECT", std::to_string(options_.db)}, Kind::kSelect, std::make_shared<Call>(), deadline);
  if (options_.locator && options_.locator->confirm_master()) {
    enqueue({"ROLE"}, Kind::kRole, std::make_shared<Call>(), deadline);
  }
  try {
    if (options_.locator) {
      generation_ = options_.locator->generation();
      current_ = {};
      resolution_ = options_.locator->locate();
    } else {
      current_ = options_.endpoint;
      resolution_ = Resolution::start(options_.endpoint);
    }
  } catch (const std::exception& e) {
    last_connect_error_ = e.what();
    close(Fault::kResolve, e.what());
    return;
  }
  if (resolution_->done()) after_resolution();
}

void AsyncConnection::after_resolution() {
  addresses_ = resolution_->addresses();
  const std::string error = resolution_->error();
  if (options_.locator) {
    current_ = resolution_->endpoint();
    if (addresses_.empty() && error.empty()) {
      // The locator named the server; its address is looked up like any other.
      try {
        resolution_ = Resolution::start(current_);
      } catch (const std::exception& e) {
        last_connect_error_ = e.what();
        close(Fault::kResolve, e.what());
        return;
      }
      if (resolution_->done()) after_resolution();
      return;
    }
  }
  const auto kind = resolution_->failure();
  resolution_.reset();
  if (addresses_.empty()) {
    last_connect_error_ = error;
    close(kind == ResolveFailure::kAuth ? Fault::kAuth : kind == ResolveFailure::kTls ? Fault::kTls : Fault::kResolve, error);
    return;
  }
  next_address_ = 0;
  connect_next_address();
}

void AsyncConnection::connect_next_address() {
  // Each address in turn (a name may resolve to IPv6 and IPv4), within connect_timeout.
  while (next_address_ < addresses_.size()) {
    const SocketAddress& address = addresses_[next_address_++];
    try {
      bool in_progress = false;
      connecting_ = start_connect(address, options_.keepalive, &in_progress, "connect to " + address.str());
      state_ = State::kConnecting;
      if (!in_progress) socket_connected();
      return;
    } catch (const Error& e) {
      last_connect_error_ = e.what();
    }
  }
  close(Fault::kConnect, last_connect_error_.empty() ? "cannot connect" : last_connect_error_);
}

void AsyncConnection::socket_connected() {
  UniqueFd fd = std::move(connecting_);
  transport_ = options_.transport ? options_.transport->make(std::move(fd), current_)
                                  : std::make_unique<Transport>(std::move(fd));
  state_ = State::kHandshake;
  continue_handshake();
}

void AsyncConnection::continue_handshake() {
  try {
    transport_wants_ = transport_->handshake();
  } catch (const std::exception& e) {
    fail_with(e, Fault::kProtocol);  // TlsError (verification) maps to kTls
    return;
  }
  if (transport_wants_ != 0) return;
  state_ = State::kOpen;
  // Everything queued goes out now: each reply is due io_timeout from here, however
  // quickly or slowly the connection came up.
  const auto due = SteadyClock::now() + options_.io_timeout;
  for (auto& p : pending_) p.deadline = due;
  flush();
}

}  // namespace redisgo::redis
