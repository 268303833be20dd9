#pragma once
/// fmt's formatting engine, compiled once (REDISGO_SELF_CONTAINED, where fmt is header-only).
///
/// Every spdlog call and fmt::format comes down to fmt::detail::vformat_to<char>: the parser of
/// the format string and the writer of every type, some 800 functions. Header-only, each file
/// that logs compiled all of them again, most of its compile time at -O0 under the sanitizers
/// (~4 s of ~9 s for daemon/runner.cpp). Declared here as instantiated elsewhere, it is compiled
/// in log/spdlog_build.cpp alone; the code is the same. (Built against Debian's libfmt, that
/// library holds it and nothing changes.)

#include <fmt/format.h>

#ifdef FMT_HEADER_ONLY
extern template void fmt::detail::vformat_to<char>(fmt::detail::buffer<char>&, fmt::basic_string_view<char>,
                                                   fmt::basic_format_args<fmt::basic_format_context<fmt::appender, char>>,
                                                   fmt::detail::locale_ref);
#endif
