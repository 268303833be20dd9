#pragma once
/// One poll() loop over many AsyncConnections (ninja's SubprocessSet shape): every node
/// advances on its own readiness and its own deadlines, so a slow node never delays
/// reading the others (docs/DESIGN.md, invariant 8), and a stop fd ends the wait at once.
/// It is what sockets() (redis/link.h) drives the lock layer's links with.

#include <functional>
#include <vector>

#include "redis/connection.h"
#include "redis/link.h"

namespace redisgo::redis {

/// Drives `conns` until `done()` (checked after every step; may be empty), until none of
/// them is busy, until the deadline, or until cancel_fd is readable. Null entries are
/// skipped. Never throws for a node's failure (its calls fail instead).
DriveEnd drive(const std::vector<AsyncConnection*>& conns, const std::function<bool()>& done,
               const DriveOptions& options = {});

/// One look at every connection, busy or idle, without waiting: reads what arrived (an
/// idle connection that the server closed meanwhile — its `timeout`, CLIENT KILL, a load
/// balancer — is noticed and closed quietly, so the next request opens a fresh one instead
/// of failing on the dead one) and enforces the deadlines. Never throws.
void poll_once(const std::vector<AsyncConnection*>& conns) noexcept;

/// Blocking convenience for tools (status, check) and tests: sends each argv on `conn`
/// and drives it until every reply is in or has failed, or cancel. Returns the calls.
std::vector<CallPtr> run_commands(AsyncConnection& conn, const std::vector<std::vector<std::string>>& argvs,
                                  int cancel_fd = -1);

}  // namespace redisgo::redis
