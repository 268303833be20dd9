#include "util/float_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

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

/// The shortest digits that read back as `v` (finite, above 0), without trailing zeros, and
/// the power of ten of the first: fmt's "{}" writes exactly those digits (Dragonbox, as
/// std::to_chars uses Ryu), in the fixed form ("0.00125", "1500") or the exponent form
/// ("1.5e+16"), which are read back here.
std::string shortest_digits(double v, int& exp10) {
  char text[64];
  const auto written = fmt::format_to_n(text, sizeof text, "{}", v);
  const std::string_view s(text, std::min(written.size, sizeof text));
  const auto e = s.find('e');
  const std::string_view mantissa = s.substr(0, e);
  const auto point = mantissa.find('.');
  const int before_point = static_cast<int>(point == std::string_view::npos ? mantissa.size() : point);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  const auto first = digits.find_first_not_of('0');  // "0.00125": the zeros are not digits
  digits.erase(0, first);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  exp10 = before_point - 1 - static_cast<int>(first);
  if (e != std::string_view::npos) exp10 += std::atoi(std::string(s.substr(e + 1)).c_str());
  return digits;
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
  int exp10 = 0;
  std::string digits = shortest_digits(v, exp10);
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
