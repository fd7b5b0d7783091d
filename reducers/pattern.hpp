// The input data of the allreduce checks (nccl-tests style: wrong placement must be visible).
//
// Element i on rank r holds (r + 1) * (1 + i mod P): it differs by rank and by index (within a period
// P), so a chunk summed twice, a rank left out or a block copied to the wrong offset changes the
// result. The expected sum is p(p+1)/2 * (1 + i mod P). P is the largest prime with
// p(p+1)/2 * P <= 2^24, so every partial sum, in any order, is an integer below 2^24 and exact in
// float32: the check compares bits, with no tolerance. Prime, so a misplacement by a block length
// goes unnoticed only when that length is a multiple of P.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtbench {

class CheckPattern {
 public:
  explicit CheckPattern(int nranks) {
    const uint64_t tri = static_cast<uint64_t>(nranks) * static_cast<uint64_t>(nranks + 1) / 2;
    uint64_t bound = (uint64_t{1} << 24) / tri;
    period_ = 1;
    for (uint64_t q = bound; q >= 2; --q) {
      if (is_prime(q)) {
        period_ = q;
        break;
      }
    }
    tri_ = static_cast<float>(tri);
  }
  size_t period() const { return period_; }
  float value(int rank, size_t i) const { return static_cast<float>(rank + 1) * static_cast<float>(1 + i % period_); }
  float expected(size_t i) const { return tri_ * static_cast<float>(1 + i % period_); }

  void fill(int rank, float* data, size_t count) const {
    for (size_t i = 0; i < count; ++i) data[i] = value(rank, i);
  }
  // Elements whose bits differ from the expected sum.
  size_t count_wrong(const float* data, size_t count) const {
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += data[i] != expected(i);
    return wrong;
  }

 private:
  static bool is_prime(uint64_t q) {
    if (q < 2) return false;
    for (uint64_t d = 2; d * d <= q; ++d)
      if (q % d == 0) return false;
    return true;
  }
  size_t period_;
  float tri_;
};

}  // namespace dtbench
