#pragma once
/// The run's one source of randomness: xoshiro256** seeded through splitmix64. Every random
/// choice of a run is drawn from one Rng, in the order the run makes them, so a seed names the
/// run. No std::uniform_*_distribution: their algorithms differ between standard libraries, and
/// a seed must replay the same run wherever the simulator is built.

#include <cstdint>

namespace redisgo::simulator {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto& s : s_) s = splitmix(x);
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, n) (n > 0), by Lemire's multiply-shift: the bias (below 2^-32 for the
  /// ranges a run uses) does not matter here; determinism does.
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  /// Uniform in [lo, hi] (lo <= hi).
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }
  /// True with probability `percent` / 100.
  bool percent(int percent) { return below(100) < static_cast<std::uint64_t>(percent); }
  /// True with probability 1 / n.
  bool one_in(std::uint64_t n) { return below(n) == 0; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t s_[4];
};

}  // namespace redisgo::simulator
