#pragma once
/// Shared by status and handover only (not part of the module's interface; that is
/// commands/status.h): what the nodes say together about one key, or one slot of it.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "lock/lease.h"

namespace redisgo::commands {

/// What the nodes say together: held (a holder has a quorum of nodes), free (no holder
/// could have one, even counting every unreachable node as its own) or unknown.
enum class State { kHeld, kFree, kUnknown };

/// "held", "free", "unknown".
const char* to_string(State s);

struct QuorumView {
  State state = State::kUnknown;
  std::string holder;        ///< kHeld only
  int votes = 0;             ///< nodes that agree on the holder
  std::int64_t ttl_ms = 0;   ///< kHeld only: the smallest TTL among the agreeing nodes
  std::uint64_t token = 0;   ///< the highest counter any reachable node has
  /// Reachable nodes whose fence counter is unreadable (NodeView::bad_fence): then the
  /// highest counter is not known, and `token` means nothing.
  int bad_fences = 0;
  int reachable = 0;
  /// kUnknown: why the first node that could not be read could not (a key of another type
  /// there, a refusal, a timeout), as its error says; "" when every node was read.
  std::string why;
};

QuorumView quorum_view(const std::vector<lock::NodeView>& nodes, int quorum);

/// Flushes `out`: false when the report could not be written (exit 74).
bool output_ok(std::ostream& out);

/// The token as `status` and `handover` say it: the number, or "unreadable" (bad_fences).
std::string token_text(const QuorumView& q);

}  // namespace redisgo::commands
