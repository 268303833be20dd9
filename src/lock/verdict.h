#pragma once
/// What one acquisition attempt came to, decided once (docs/DESIGN.md "The phases"): the
/// standby machine decides its next step, its exit status and what it reports from this verdict
/// alone, so that no driver reads nodes' faults or reply values itself.
///
/// Two questions are asked of a node that failed, and they are different questions:
///  - did its server answer at all? An error reply or refused credentials come from a live
///    server; a timeout, a closed connection or a failed TLS handshake do not. This is what
///    redisgo_task_node_up shows, and what the "N unreachable, M refused" of a give-up counts.
///  - whose fix is it? Refused credentials, rights or certificates (TLS) are this host's; an
///    error reply is every host's (a broken key, a replica); the rest is the nodes'. This is
///    the cause STATUS=, redisgo_task_state and the exit status (77, 69) name.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "lock/lease.h"

namespace redisgo::lock {

/// Whether the server of a node that failed with `fault` answered (an error reply, refused
/// credentials): it is up, whatever it said.
bool server_answered(redis::Fault fault);
/// The nodes named in `errors` whose server did not answer, in order, each once.
std::vector<std::string> down_nodes(const std::vector<NodeError>& errors);
/// A failure of a whole attempt that names no node (the attempt could not be made).
NodeError round_failure(std::string message);

/// Why an attempt reached fewer nodes than a quorum, by whose fix it is.
enum class NoQuorum {
  kUnreachable,  ///< nodes did not answer
  kCredentials,  ///< this host's credentials or ACL rights were refused
  kTls,          ///< this host's TLS verification failed
  kErrorReply,   ///< a node answered with an error (every host of this config gets it)
};
/// "unreachable", "credentials", "tls", "error" (metrics::state_of_cause's names).
const char* to_string(NoQuorum cause);
/// Whose fix one node's failure is.
NoQuorum cause_of(const NodeError& e);

struct Verdict {
  enum class Kind {
    kGranted,   ///< the lease is ours
    kNoQuorum,  ///< too many nodes failed for a quorum to answer: `cause`
    kPaused,    ///< a pause holds the key (`pause`)
    kTurn,      ///< a woken waiter's turn holds the key (`turn`)
    kBusy,      ///< another holder has the key on a quorum
    kGuarded,   ///< the key is free, but the restart guard holds it back
    kSplit,     ///< no quorum decided either way (granted by some, undone; or nothing named)
  };
  Kind kind = Kind::kSplit;
  /// kNoQuorum: the cause an operator must fix first (a refusal before an error reply, an
  /// error reply before a timeout elsewhere), and the error that shows it.
  NoQuorum cause = NoQuorum::kUnreachable;
  std::optional<NodeError> blame;
  /// The first node that refused this host (credentials, ACL, TLS), whatever the kind.
  std::optional<NodeError> refusal;
  /// The refusal says the server wants a password (NOAUTH) rather than a right.
  bool wants_password = false;
  /// The value a node named in the key, read whatever the kind (a minority's too): a pause,
  /// or a woken waiter's turn.
  std::optional<PauseRecord> pause;
  bool turn = false;
  int answered = 0;       ///< nodes that answered (granted or busy)
  int busy = 0;           ///< nodes that named another holder
  int failed = 0;         ///< named nodes that failed
  bool round_failed = false;  ///< a failure of the whole round (it names no node)
  int down = 0;           ///< of `failed`, those whose server did not answer
  int refusals = 0;       ///< of `failed`, those that refused this host
  std::string example;    ///< the first named node's error
  /// So many nodes refused this host that no quorum can grant it, whoever they name.
  bool refused_out = false;

  bool no_quorum() const { return kind == Kind::kNoQuorum; }
};

/// The verdict on `acq` among `nodes` nodes of which `quorum` must answer. Only nodes that
/// failed prove a quorum missing: an attempt is decided as soon as its outcome is known, and
/// a node whose answer had not come by then is no fault.
Verdict classify(const Acquisition& acq, std::size_t nodes, std::size_t quorum);

}  // namespace redisgo::lock
