#include "metrics/exposition.h"

#include <cmath>

#include "util/float_text.h"

namespace redisgo::metrics::detail {

void append_escaped(std::string& out, std::string_view value) {
  // Runs between special characters are appended whole: label values are mostly plain.
  for (;;) {
    auto special = value.find_first_of("\\\"\n");
    out.append(value.substr(0, special));
    if (special == std::string_view::npos) return;
    out += value[special] == '\n' ? "\\n" : value[special] == '"' ? "\\\"" : "\\\\";
    value.remove_prefix(special + 1);
  }
}

void append_double(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    append_shortest(out, v, FloatStyle::kGeneral);
  }
}

void append_timestamp(std::string& out, double v) {
  if (!std::isfinite(v)) return append_double(out, v);
  std::string text;
  append_fixed(text, v, 3);
  // Trailing zeros (and a bare point) go: 0 stays "0", 1700000000.5 reads as written.
  std::size_t end = text.size();
  while (end > 0 && text[end - 1] == '0') --end;
  if (end > 0 && text[end - 1] == '.') --end;
  out.append(text, 0, end);
}

void append_header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

}  // namespace redisgo::metrics::detail
