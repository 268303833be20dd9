#pragma once
/// Doubles as text, the way std::to_chars writes them, without libstdc++'s
/// floating_to_chars: that object referenced libm's fesetround, and the reference alone made
/// the binary load libm.so.6 (a library fewer to map at every start; docs/BENCHMARKS.md).
/// Exact: the unit tests compare both on millions of values.

#include <string>

namespace redisgo {

enum class FloatStyle {
  kShortest,  ///< std::to_chars(first, last, v): the shorter of fixed and scientific
  kGeneral,   ///< std::to_chars(first, last, v, std::chars_format::general)
};

/// Appends a finite `v` in the shortest form that reads back as the same double.
void append_shortest(std::string& out, double v, FloatStyle style);

/// Appends a finite `v` with `decimals` digits after the point, as
/// std::to_chars(first, last, v, std::chars_format::fixed, decimals).
void append_fixed(std::string& out, double v, int decimals);

}  // namespace redisgo
