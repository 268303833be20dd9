#pragma once
/// Fencing tokens (docs/DESIGN.md, invariant 4; issue 4 "Fencing across quorums").
///
/// On one node the acquire script (lock/scripts.h kAcquire) issues
/// token = max(counter + 1, server TIME in µs) atomically with SET NX PX, so tokens on
/// that node strictly increase, also across a restart that lost the counter (as long as
/// the server clock does not step back).
///
/// With N nodes each node keeps its own counter, and the maximum of one quorum's tokens
/// is not enough: a quorum that does not contain the node with the highest counter can
/// hand out a lower token than the previous holder got (lock_redlock_test shows it).
/// So after a quorum acquisition the holder takes T = max of the granting nodes' tokens
/// and raises the counter of every granting node to at least T (kRaiseFence, which does
/// so only while the key on that node is still ours), before the child starts. The
/// acquisition counts only if a quorum of nodes has its counter at >= T.
///
/// Why successive tokens then strictly increase. Let holder 1 acquire with token T1 and
/// let R1 be the quorum whose counters it raised to >= T1 while it held the key on each
/// of them. Holder 2 acquires later on a quorum Q2. Any two majorities of the same N
/// nodes share a node: some n is in both R1 and Q2. Holder 2's SET NX on n succeeded, so
/// holder 1's key on n was gone by then, and holder 1 raised n while its key was there:
/// the raise on n happened before holder 2's acquire script on n. That script INCRs n's
/// counter, so n grants holder 2 a token >= T1 + 1, and T2 = max over Q2 >= that > T1.
///
/// Limits, stated rather than hidden: a node in R1 that restarts without its data loses
/// the raise; its counter restarts from its TIME floor. Tokens are dominated by that
/// floor (counters move by one per acquisition, TIME by a million per second), so the
/// order still holds as long as the nodes' clocks agree to better than the time between
/// two acquisitions — the same assumption as the delayed restart Redlock already asks
/// operators for (a node comes back no sooner than one TTL later).

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace redisgo::lock {

/// Parses a decimal token as the scripts return it ("1795308875124417"). nullopt for
/// anything else (empty, sign, exponent, overflow).
std::optional<std::uint64_t> parse_token(std::string_view text);

/// The fence counter as the acquire scripts accept it (bad_fence, lock/scripts.h): a decimal
/// integer of at most 16 digits, below kFenceLimit. nullopt for anything else: a counter
/// that no acquisition can raise (each refuses until it is fixed or deleted), so not a token.
std::optional<std::uint64_t> parse_fence(std::string_view text);
/// 2^53 - 1: Lua numbers are doubles, exact below it.
inline constexpr std::uint64_t kFenceLimit = 9007199254740991;

/// A count or a time (ms since the epoch) that a script wrote as decimal digits, below
/// kFenceLimit; 0 for anything else (absent, garbage, a sign).
std::int64_t parse_count(std::string_view text);

/// The quorum's token: the maximum over the granting nodes (0 = did not grant).
std::uint64_t quorum_token(const std::vector<std::uint64_t>& node_tokens);

/// Nodes whose counter must be raised to `token`: those that granted (non-zero) with a
/// lower token. A node that returned `token` itself already stores it.
std::vector<bool> nodes_to_raise(const std::vector<std::uint64_t>& node_tokens, std::uint64_t token);

}  // namespace redisgo::lock
