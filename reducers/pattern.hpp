// The input data of the allreduce checks (nccl-tests style: wrong placement must be visible).
//
// Element i on rank r holds 1 + ((i' + 1) * m_r + c_r mod P), where i' = i mod P, P is a prime, m_r a pseudo-random
// multiplier in 1..P-1 and c_r a pseudo-random offset, both fixed per rank: a residue sequence that differs by rank
// and by index (the offset where (i' + 1) * m_r is 0 for every rank). A rank left out, a rank
// or a chunk counted twice, a block copied to the wrong offset, and also mixes whose errors cancel in a total (rank
// 2's chunk twice where ranks 1 and 3 were due: a pattern of (r + 1) * f(i) gave the right sum for that) change the
// result: two different sets of ranks sum alike at an index only where their residues happen to agree (about one
// index in P for two pairs of ranks). The expected sum is one
// period's table. P is the largest prime with K * P <= 2^24 and P <= 65521 (the table stays 256 KiB and costs at
// most 2^24 steps to build): every value is at most P, so every partial sum, in any order, is an integer at most
// 2^24 and exact in float32; the check compares bits, with no tolerance. A misplacement by a block length goes
// unnoticed only when that length is a multiple of P. For up to 2^22 ranks (P >= 3; MPI jobs are far smaller).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtbench {

class CheckPattern {
 public:
  explicit CheckPattern(int nranks) {
    const uint64_t ranks = nranks > 0 ? static_cast<uint64_t>(nranks) : 1;
    uint64_t bound = (uint64_t{1} << 24) / ranks;
    if (bound > 65521) bound = 65521;
    period_ = 1;
    for (uint64_t q = bound; q >= 2; --q) {
      if (is_prime(q)) {
        period_ = q;
        break;
      }
    }
    // Multipliers drawn by splitmix64 in rank order, distinct and no two summing to P while the ranks are at most
    // (P - 1) / 2 (the residues of m and P - m sum to the same value mod P at every index, so two such pairs would
    // often sum alike).
    // Multipliers linear in r (r + 1 times a constant) left two sets of ranks with the same sum of r equal at five
    // indices in six.
    multiplier_.resize(ranks);
    offset_.resize(ranks);
    std::vector<bool> taken(period_, false);
    uint64_t state = 0x9e3779b97f4a7c15ULL, free_left = period_ > 1 ? period_ - 1 : 0;
    for (uint64_t r = 0; r < ranks; ++r) {
      uint64_t m = 0;
      if (period_ > 1) {
        m = 1 + splitmix64(state) % (period_ - 1);
        // A taken draw moves to the next free multiplier (no two ranks alike while any is free); none free, it stays.
        for (uint64_t step = 0; free_left > 0 && taken[m] && step < period_; ++step) m = m + 1 < period_ ? m + 1 : 1;
        if (!taken[m]) free_left -= (period_ - m != m && !taken[period_ - m]) ? 2 : 1;
        taken[m] = taken[period_ - m] = true;
      }
      multiplier_[r] = m;
      offset_[r] = period_ > 1 ? splitmix64(state) % period_ : 0;
    }
    expected_.assign(period_, 0.0f);
    for (uint64_t r = 0; r < ranks; ++r) {
      uint64_t residue = (multiplier_[r] + offset_[r]) % period_;  // at i' = 0, then one m_r more per index
      for (uint64_t i = 0; i < period_; ++i) {
        expected_[i] += static_cast<float>(1 + residue);
        residue += multiplier_[r];
        if (residue >= period_) residue -= period_;
      }
    }
  }
  size_t period() const { return period_; }
  float value(int rank, size_t i) const {
    const size_t k = static_cast<size_t>(rank);
    return static_cast<float>(1 + ((i % period_ + 1) * multiplier_[k] + offset_[k]) % period_);
  }
  float expected(size_t i) const { return expected_[i % period_]; }

  void fill(int rank, float* data, size_t count) const {
    const uint64_t m = multiplier_[static_cast<size_t>(rank)];
    uint64_t residue = (m + offset_[static_cast<size_t>(rank)]) % period_;
    for (size_t i = 0; i < count; ++i) {
      data[i] = static_cast<float>(1 + residue);
      residue += m;
      if (residue >= period_) residue -= period_;
    }
  }
  // Elements whose bits differ from the expected sum.
  size_t count_wrong(const float* data, size_t count) const {
    size_t wrong = 0;
    for (size_t i = 0, j = 0; i < count; ++i) {
      wrong += data[i] != expected_[j];
      if (++j == period_) j = 0;
    }
    return wrong;
  }

 private:
  static uint64_t splitmix64(uint64_t& state) {  // Steele, Lea and Flood 2014: a fixed sequence, no std::rand
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  static bool is_prime(uint64_t q) {
    if (q < 2) return false;
    for (uint64_t d = 2; d * d <= q; ++d)
      if (q % d == 0) return false;
    return true;
  }
  uint64_t period_;
  std::vector<uint64_t> multiplier_, offset_;
  std::vector<float> expected_;
};

}  // namespace dtbench
