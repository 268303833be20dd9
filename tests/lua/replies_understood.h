#pragma once
/// The parsers of lock/replies*.h against the scripts' own replies: every reply a table row
/// gets that is not an error must be understood by the parser of its script, so that a parser
/// stricter than the script it reads fails here, on a real server and on the simulated node.

#include <cstddef>
#include <optional>
#include <string>

#include "sim/resp.h"

namespace redisgo::luatable {

/// Whether the parser of the script whose text is `source` understands `reply`, given with
/// `keys` KEYS; nullopt when `source` is no script of lock::kLeaseScripts.
std::optional<bool> understood(const std::string& source, const sim::Resp& reply, std::size_t keys);

}  // namespace redisgo::luatable
