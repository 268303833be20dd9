#pragma once
/// spdlog to stderr (journald picks it up under systemd), text or JSON lines.

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "config/config.h"

namespace redisgo::log {

/// Installs the default logger: stderr, the given level and format. Safe to call again
/// (replaces it). Text lines: "2026-11-22T10:00:00.123Z info  [daemon] message".
/// JSON lines: {"ts":"...","level":"info","logger":"daemon","msg":"..."} with escaping.
void setup(config::LogLevel level, config::LogFormat format);

/// A named logger sharing the default sinks ("daemon", "lock", "child", ...).
std::shared_ptr<spdlog::logger> get(const std::string& name);

/// For tests: routes every logger to `sink` (e.g. an in-memory ringbuffer sink).
void set_sink_for_tests(spdlog::sink_ptr sink, config::LogLevel level = config::LogLevel::kTrace);

}  // namespace redisgo::log
