#pragma once
/// Fuzz targets (issue 9): each takes arbitrary bytes and must neither crash, hang nor
/// break its property. Linked into the libFuzzer binaries (scripts/fuzz) and into the
/// test suite, which replays every corpus and regression input (fuzz_replay_test).
///
///   config      TOML text -> load_string -> (if valid) render_effective -> load_string
///               again: the same configuration (a round trip)
///   duration    parse_duration -> (if valid) format_duration -> parse_duration: same value
///   resp        bytes split into chunks -> ReplyReader -> every reply through the lease
///               scripts' reply parsers
///   connection  bytes as a server's whole answer to an AsyncConnection that sent AUTH,
///               SELECT, SCRIPT LOADs, a SUBSCRIBE and scripts: every call ends, nothing
///               is misattributed, nothing crashes

#include <cstddef>
#include <cstdint>

namespace redisgo::fuzz {

int config(const std::uint8_t* data, std::size_t size);
int duration(const std::uint8_t* data, std::size_t size);
int resp(const std::uint8_t* data, std::size_t size);
int connection(const std::uint8_t* data, std::size_t size);

}  // namespace redisgo::fuzz
