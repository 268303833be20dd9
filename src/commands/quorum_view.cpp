// What the nodes say together about one key: status prints it, handover waits for it to
// change hands.
#include "commands/quorum_view.h"

#include <algorithm>
#include <map>

namespace redisgo::commands {

const char* to_string(State s) {
  switch (s) {
    case State::kHeld: return "held";
    case State::kFree: return "free";
    case State::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string token_text(const QuorumView& q) {
  return q.bad_fences > 0 ? "unreadable" : std::to_string(q.token);
}

QuorumView quorum_view(const std::vector<lock::NodeView>& nodes, int quorum) {
  std::map<std::string, int> votes;
  QuorumView q;
  for (const auto& n : nodes) {
    if (!n.reachable && q.why.empty()) q.why = n.error;
    if (!n.reachable) continue;
    ++q.reachable;
    q.token = std::max(q.token, n.token);
    if (!n.bad_fence.empty()) ++q.bad_fences;
    if (n.held) ++votes[n.holder];
  }
  int held_nodes = 0;
  for (const auto& [holder, count] : votes) {
    held_nodes += count;
    if (count >= quorum) {
      q.holder = holder;
      q.votes = count;
    }
  }
  if (q.votes > 0) {
    q.state = State::kHeld;
    q.ttl_ms = -1;
    for (const auto& n : nodes) {
      if (n.reachable && n.held && n.holder == q.holder && (q.ttl_ms < 0 || n.pttl_ms < q.ttl_ms)) q.ttl_ms = n.pttl_ms;
    }
  } else if (q.reachable - held_nodes >= quorum) {
    // Free only when a quorum of nodes have no key: a split between would-be holders
    // (A on one node, B on another) is held by nobody but cannot be taken either.
    q.state = State::kFree;
  }
  if (q.state != State::kUnknown) q.why.clear();
  return q;
}

bool output_ok(std::ostream& out) {
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace redisgo::commands
