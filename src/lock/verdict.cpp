#include "lock/verdict.h"

#include <set>

namespace redisgo::lock {

bool server_answered(redis::Fault fault) { return fault == redis::Fault::kReply || fault == redis::Fault::kAuth; }

std::vector<std::string> down_nodes(const std::vector<NodeError>& errors) {
  std::vector<std::string> down;
  std::set<std::string> seen;
  for (const auto& e : errors) {
    if (!e.node.empty() && !server_answered(e.fault) && seen.insert(e.node).second) down.push_back(e.node);
  }
  return down;
}

NodeError round_failure(std::string message) { return {"", redis::Fault::kNone, std::move(message)}; }

const char* to_string(NoQuorum cause) {
  switch (cause) {
    case NoQuorum::kUnreachable: return "unreachable";
    case NoQuorum::kCredentials: return "credentials";
    case NoQuorum::kTls: return "tls";
    case NoQuorum::kErrorReply: return "error";
  }
  return "unreachable";
}

NoQuorum cause_of(const NodeError& e) {
  switch (e.fault) {
    case redis::Fault::kAuth: return NoQuorum::kCredentials;
    case redis::Fault::kTls: return NoQuorum::kTls;
    case redis::Fault::kReply: return NoQuorum::kErrorReply;
    default: return NoQuorum::kUnreachable;
  }
}

namespace {

/// The no-quorum cause of `acq`'s errors, and the error that shows it.
void blame(const Acquisition& acq, Verdict& v) {
  const NodeError* refusal = nullptr;
  const NodeError* reply = nullptr;
  const NodeError* other = nullptr;
  for (const auto& e : acq.errors) {
    if (redis::is_refusal(e.fault)) {
      if (!refusal) refusal = &e;
    } else if (e.fault == redis::Fault::kReply) {
      if (!reply) reply = &e;
    } else if (!other) {
      other = &e;
    }
  }
  if (refusal) {
    v.cause = cause_of(*refusal);
    v.blame = *refusal;
  } else if (reply) {
    v.cause = NoQuorum::kErrorReply;
    v.blame = *reply;
  } else {
    v.cause = NoQuorum::kUnreachable;
    if (other) v.blame = *other;
  }
}

}  // namespace

Verdict classify(const Acquisition& acq, std::size_t nodes, std::size_t quorum) {
  Verdict v;
  v.answered = static_cast<int>(acq.answered.size());
  v.busy = acq.busy;
  v.pause = pause_of(acq.holder);
  v.turn = turn_of(acq.holder).has_value();
  std::set<std::string> failed;
  for (const auto& e : acq.errors) {
    if (e.node.empty()) {
      v.round_failed = true;
      continue;
    }
    if (!failed.insert(e.node).second) continue;
    if (v.example.empty()) v.example = e.message;
    if (!server_answered(e.fault)) ++v.down;
    if (redis::is_refusal(e.fault)) {
      ++v.refusals;
      if (!v.refusal) v.refusal = e;
    }
  }
  v.failed = static_cast<int>(failed.size());
  if (v.refusal) {
    const std::string& why = v.refusal->message;
    v.wants_password = why.find("NOAUTH") != std::string::npos || why.find("unauthenticated") != std::string::npos;
  }
  v.refused_out = static_cast<std::size_t>(v.refusals) + quorum > nodes;
  const std::size_t failing = failed.size() + (v.round_failed ? 1 : 0);
  if (acq.acquired) {
    v.kind = Verdict::Kind::kGranted;
  } else if (acq.answered.size() < quorum && failing + quorum > nodes) {
    v.kind = Verdict::Kind::kNoQuorum;
    blame(acq, v);
  } else if (v.pause) {
    v.kind = Verdict::Kind::kPaused;
  } else if (v.turn) {
    v.kind = Verdict::Kind::kTurn;
  } else if (!acq.holder.empty() && acq.holder_node.empty()) {
    v.kind = Verdict::Kind::kBusy;
  } else if (acq.guard_wait_ms >= 0) {
    v.kind = Verdict::Kind::kGuarded;
  } else {
    v.kind = Verdict::Kind::kSplit;
  }
  return v;
}

}  // namespace redisgo::lock
