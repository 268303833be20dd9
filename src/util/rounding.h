#pragma once
/// The few floating-point roundings the daemon needs, without libm: `std::ceil`,
/// `std::llround` and `std::pow` were the binary's only imports from libm.so.6, and a
/// library fewer for the loader is ~0.4 MiB less resident and one fewer object to map and
/// search at every start (docs/BENCHMARKS.md, "Where `task -- true` goes").

#include <cstdint>

namespace redisgo {

/// Beyond 2^52 in magnitude every double is an integer.
inline constexpr double kIntegralFrom = 4503599627370496.0;

/// ceil(x), as an integer, for a finite x within int64's range.
constexpr std::int64_t ceil_to_int(double x) {
  if (!(x > -kIntegralFrom && x < kIntegralFrom)) return static_cast<std::int64_t>(x);
  const auto i = static_cast<std::int64_t>(x);  // towards zero
  return static_cast<double>(i) < x ? i + 1 : i;
}

/// llround(x): to the nearest integer, halves away from zero, for a finite x within
/// int64's range.
constexpr std::int64_t round_to_int(double x) {
  if (!(x > -kIntegralFrom && x < kIntegralFrom)) return static_cast<std::int64_t>(x);
  auto i = static_cast<std::int64_t>(x);
  const double frac = x - static_cast<double>(i);  // exact below 2^52
  if (frac >= 0.5) ++i;
  if (frac <= -0.5) --i;
  return i;
}

/// base^n by squaring (at most 64 steps): exact while the result fits a double's
/// mantissa (2^n, 1.5^n up to n = 33), a few ulps otherwise, and inf once it overflows,
/// as pow() does.
constexpr double power(double base, std::uint64_t n) {
  double result = 1.0;
  while (n > 0) {
    if (n & 1U) result *= base;
    n >>= 1U;
    if (n > 0) base *= base;
  }
  return result;
}

}  // namespace redisgo
