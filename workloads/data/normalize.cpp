// Per-channel normalisation statistics of a uint8 data set.
//
// With S = sum of pixels p and Q = sum of p^2 over the M = N*H*W pixels of a channel (exact in 64-bit
// integers: Q <= 255^2 * M < 2^64 for M < 2^48), the population variance of p is (M*Q - S^2) / M^2,
// computed exactly in 128-bit integers, so there is no cancellation. Values are reported for p / 255.
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "workloads/data/batch.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data {

Normalization channel_stats(const Dataset& ds) {
  const size_t c = static_cast<size_t>(ds.channels), plane = static_cast<size_t>(ds.height) * ds.width;
  if (ds.size() == 0) throw BadInput("cannot compute normalisation statistics of the empty data set " + ds.name);
  std::vector<uint64_t> sum(c, 0), sum_sq(c, 0);
  for (size_t i = 0; i < ds.size(); ++i) {
    const uint8_t* img = ds.image(i);
    for (size_t ch = 0; ch < c; ++ch) {
      const uint8_t* p = img + ch * plane;
      uint64_t s = 0, q = 0;  // per image plane: the inner loop vectorises
      for (size_t j = 0; j < plane; ++j) {
        s += p[j];
        q += uint32_t{p[j]} * p[j];
      }
      sum[ch] += s;
      sum_sq[ch] += q;
    }
  }
  Normalization norm;
  const unsigned __int128 m = static_cast<unsigned __int128>(ds.size()) * plane;
  for (size_t ch = 0; ch < c; ++ch) {
    const unsigned __int128 var_m2 = m * sum_sq[ch] - static_cast<unsigned __int128>(sum[ch]) * sum[ch];
    const double md = static_cast<double>(m);
    norm.mean.push_back(static_cast<float>(static_cast<double>(sum[ch]) / md / 255.0));
    norm.std.push_back(static_cast<float>(std::sqrt(static_cast<double>(var_m2)) / md / 255.0));
  }
  return norm;
}

Normalization identity_normalization(int channels) {
  return Normalization{std::vector<float>(static_cast<size_t>(channels), 0.0f),
                       std::vector<float>(static_cast<size_t>(channels), 1.0f)};
}

}  // namespace dtbench::data
