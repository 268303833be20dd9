#pragma once
/// The exporter's listening socket (internal to the metrics module; metrics.h is its
/// interface).

#include <string>

#include "util/unique_fd.h"

namespace redisgo::metrics::detail {

/// A listening socket on `listen` ("a.b.c.d:port", "[v6]:port", "localhost:port" or
/// "name:port", every resolved address tried in turn), CLOEXEC and non-blocking from
/// birth; `port` is set to the port bound (useful with ":0"). Throws Error
/// "metrics listen <addr>: <why>".
UniqueFd bind_listen(const std::string& listen, int& port);

}  // namespace redisgo::metrics::detail
