// spdlog's implementation, compiled once for the whole program (REDISGO_SELF_CONTAINED).
//
// Debian ships spdlog's headers for both ways of using it. Header-only, every file that
// includes <spdlog/spdlog.h> compiles the whole library again: about 10 s of compiler
// time per file on the CI machine, most of a clean build. Here it is compiled as a library
// (SPDLOG_COMPILED_LIB, set for every target that links redisgo_log): this file holds its
// definitions (the -inl.h headers) and the instantiations of the sink templates we use;
// every other file sees declarations only. The binary's code is the same.
#ifndef SPDLOG_COMPILED_LIB
#error "spdlog_build.cpp is for SPDLOG_COMPILED_LIB builds (REDISGO_SELF_CONTAINED)"
#endif

#include <mutex>

#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

// fmt's engine, which log/fmt_engine.h declares instantiated here for every other file.
template void fmt::detail::vformat_to<char>(fmt::detail::buffer<char>&, fmt::basic_string_view<char>,
                                            fmt::basic_format_args<fmt::basic_format_context<fmt::appender, char>>,
                                            fmt::detail::locale_ref);
template class spdlog::sinks::base_sink<std::mutex>;
template class spdlog::sinks::base_sink<spdlog::details::null_mutex>;
// The registry's default logger (a colour sink on stdout) and our stderr sink.
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::stdout_sink_base<spdlog::details::console_mutex>;
template class spdlog::sinks::stdout_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::stderr_sink<spdlog::details::console_mutex>;
