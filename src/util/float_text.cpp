#include "util/float_text.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace redisgo {
namespace {

// std::to_chars with chars_format::general and no precision: printf's %g rule at its
// default precision (scientific below 1e-4 and from 1e6 on), with the shortest digits.
constexpr int kGeneralPrecision = 6;

void append_scientific(std::string& out, const std::string& digits, int exp10) {
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1, std::string::npos);
  }
  out += 'e';
  out += exp10 < 0 ? '-' : '+';
  const int e = exp10 < 0 ? -exp10 : exp10;
  if (e < 10) out += '0';
  out += std::to_string(e);
}

void append_plain(std::string& out, const std::string& digits, int exp10, double v) {
  const int n = static_cast<int>(digits.size());
  if (exp10 < 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-exp10 - 1), '0');
    out += digits;
  } else if (exp10 + 1 >= n) {
    // An integer wider than its shortest digits is written exactly, as %.0f does.
    char buf[400];
    const int len = std::snprintf(buf, sizeof buf, "%.0f", v);
    if (len > 0) out.append(buf, static_cast<std::size_t>(len));
  } else {
    out.append(digits, 0, static_cast<std::size_t>(exp10 + 1));
    out += '.';
    out.append(digits, static_cast<std::size_t>(exp10 + 1), std::string::npos);
  }
}

}  // namespace

void append_shortest(std::string& out, double v, FloatStyle style) {
  if (std::signbit(v)) {
    out += '-';
    v = -v;
  }
  if (v == 0) {
    out += '0';
    return;
  }
  // The shortest digits that read back as v (Dragonbox, as std::to_chars uses Ryu).
  const auto dec = fmt::detail::dragonbox::to_decimal(v);
  std::string digits = std::to_string(dec.significand);
  const int exp10 = dec.exponent + static_cast<int>(digits.size()) - 1;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (style == FloatStyle::kGeneral) {
    if (exp10 < -4 || exp10 >= kGeneralPrecision) {
      append_scientific(out, digits, exp10);
    } else {
      append_plain(out, digits, exp10, v);
    }
    return;
  }
  std::string plain;
  std::string scientific;
  append_plain(plain, digits, exp10, v);
  append_scientific(scientific, digits, exp10);
  out += scientific.size() < plain.size() ? scientific : plain;  // a tie goes to the plain form
}

void append_fixed(std::string& out, double v, int decimals) {
  char buf[400];
  const int len = std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  if (len > 0 && static_cast<std::size_t>(len) < sizeof buf) out.append(buf, static_cast<std::size_t>(len));
}

}  // namespace redisgo
