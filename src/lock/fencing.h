#pragma once
/// Fencing tokens (docs/DESIGN.md, invariant 4).
///
/// On one node the acquire script (lock/scripts.h kAcquireFair) issues
/// token = max(counter + 1, server TIME in µs) atomically with SET NX PX, so tokens on
/// that node strictly increase, also across a restart that lost the counter (as long as
/// the server clock does not step back).
///
/// With N nodes each node keeps its own counter, and the maximum of one quorum's tokens
/// is not enough: a quorum that does not contain the node with the highest counter can
/// hand out a lower token than the previous holder got.
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
/// The raise costs a round trip, and with the TIME floor alone nearly every multi-node
/// acquisition needed it: each node floors the token at its own clock, so the nodes hand
/// out different tokens (1,977 of 2,000 cycles on 3 nodes). So the holder proposes a token,
/// its own wall clock plus a lead, and a node issues it where it is above
/// both max(counter + 1, TIME) and at most 25 ms ahead of that node's TIME (the scripts'
/// issue()). Nodes whose counters agree then issue the same token and nothing needs
/// raising; the rule above is unchanged, the raise is only needed less often. A proposal
/// that lost (some node's clock or counter was ahead) makes the next lead long enough to
/// win, up to kMaxLeadUs (next_lead_us): nodes further than that (one-way latency plus
/// clock offset) get raised as before. The price, stated: tokens run up to 25 ms ahead of
/// the servers' clocks, so the TIME floor protects a counter lost (deleted by hand, or a
/// node restarted empty with the restart guard off) only from 25 ms after the last grant;
/// with the guard on, a restarted node grants nothing for `expire`, far longer.
///
/// A semaphore's holders run at once and share the counter, so their tokens must also
/// differ from each other's. Where nodes agree, they do (a node never issues a number
/// twice). Where they disagree, two holders that two nodes served in opposite orders can
/// each take the other's number as their maximum. Any two holders' quorums
/// share a node that issued both of them a number, at most one of them the common maximum
/// T, so at least one of the two raises that node: the raise of a semaphore's slot
/// therefore answers 2 when the counter is at or above T already, the acquisition is given
/// up and tried again (every raise is waited for, and one not answered counts as such).
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

/// The proposal's lead over the holder's wall clock: 5 ms at first (loopback and LAN
/// round trips, NTP-synced clocks), at most 15 ms (the scripts accept a proposal at most
/// 25 ms ahead of a node's own TIME).
inline constexpr std::uint64_t kInitialLeadUs = 5'000;
inline constexpr std::uint64_t kMaxLeadUs = 15'000;

/// The lead for the next proposal, after an acquisition that proposed `sent_wall_us` +
/// `lead_us` and got `node_tokens` (0 = did not grant). Unchanged unless the granting nodes
/// disagreed because one issued more than the proposal: then 1.5 x what that node was ahead
/// of our clock, if that stays within kMaxLeadUs (a counter far ahead, set by hand or by a
/// fast clock, is raised once and teaches nothing).
std::uint64_t next_lead_us(std::uint64_t lead_us, std::uint64_t sent_wall_us,
                           const std::vector<std::uint64_t>& node_tokens);

}  // namespace redisgo::lock
