// Seeded random numbers that give the same sequence on every machine and compiler.
//
// std::uniform_*_distribution and std::normal_distribution are implementation-defined, so a run would
// not be a function of its seed across standard libraries. We use SplitMix64 (Steele, Lea and Flood
// 2014) for the raw stream and derive the distributions ourselves. Independent streams (per epoch,
// per rank, per purpose) come from hashing (seed, stream ids) into the initial state.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace dtbench {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(mix(seed)) {}
  // A stream derived from a seed and any number of ids, e.g. Rng(seed, {epoch, rank}).
  Rng(uint64_t seed, std::initializer_list<uint64_t> ids) : state_(mix(seed)) {
    for (uint64_t id : ids) state_ = mix(state_ ^ mix(id + 0x632be59bd9b4e019ULL));
  }

  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), unbiased (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n) {
    if (n == 0) return 0;
    for (;;) {
      __uint128_t m = static_cast<__uint128_t>(next_u64()) * n;
      uint64_t low = static_cast<uint64_t>(m);
      if (low >= n || low >= (-n) % n) return static_cast<uint64_t>(m >> 64);
    }
  }
  // Standard normal by Box-Muller (both values used).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = 0.0;
    while (u1 <= 0.0) u1 = uniform();
    double u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }

 private:
  static uint64_t mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace dtbench
