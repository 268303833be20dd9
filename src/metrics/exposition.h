#pragma once
/// The text exposition format 0.0.4, as the metrics module writes it (internal to metrics/):
/// escaped label values, numbers that read back exactly, and the # HELP / # TYPE lines.

#include <string>
#include <string_view>

namespace redisgo::metrics::detail {

/// A histogram bucket: its upper bound, and that bound as `le` shows it (spelled out, so
/// that it reads as written: to_chars would give "5e-04").
struct Bucket {
  double upper;
  const char* le;
};

/// A label value: backslash, double quote and newline escaped.
void append_escaped(std::string& out, std::string_view value);
/// Shortest text that reads back as the same double; Prometheus' spelling of the
/// non-finite values.
void append_double(std::string& out, double v);
/// Unix seconds to the millisecond, in plain decimals ("1795805107.934", not
/// "1.795805107934e+09"): both parse, this one reads.
void append_timestamp(std::string& out, double v);
/// "# HELP name help\n# TYPE name type\n".
void append_header(std::string& out, const char* name, const char* type, const char* help);

}  // namespace redisgo::metrics::detail
