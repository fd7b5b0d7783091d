// Synthetic data set for throughput runs that still has something to learn.
//
// Terms: a prototype P_k is one smooth C x H x W image per class k; a sample of class k is P_k plus
// pixel noise. Each prototype channel is a mid-grey level plus three plane waves
//     P_k(c, y, x) = 128 + sum_j a_j cos(2 pi (fx_j x / W + fy_j y / H) + phi_j),
// with integer frequencies fx_j, fy_j in {0, 1, 2} (low frequency, so random crops and flips keep most
// of the class signal), amplitudes a_j in [30, 60) and phases phi_j in [0, 2 pi), all drawn from
// Rng(seed, {stream::synthetic_proto, k, c}). The noise is sigma * z with sigma = 48 and z approximately
// standard normal: the centred sum of four 16-bit uniforms from one Rng draw (Irwin-Hall, n = 4), which
// costs one draw per pixel instead of Box-Muller's logarithm and sine, so even ImageNet-sized synthetic
// sets build in seconds. Samples are rounded and clamped to [0, 255]; sample i has label i mod classes
// and its noise comes from Rng(seed, {stream::synthetic_noise, split, i}).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data {

namespace {
constexpr int kWaves = 3;
constexpr double kNoiseSigma = 48.0;

// Approximately N(0, 1): four 16-bit uniforms, summed, centred and scaled to unit variance.
double irwin_hall4(uint64_t bits) {
  const double sum = static_cast<double>((bits & 0xffff) + (bits >> 16 & 0xffff) + (bits >> 32 & 0xffff) + (bits >> 48));
  // Each 16-bit uniform has mean 65535/2 and variance (65536^2 - 1)/12.
  constexpr double kMean = 4 * 65535.0 / 2;
  const double kStd = std::sqrt(4 * (65536.0 * 65536.0 - 1) / 12);
  return (sum - kMean) / kStd;
}

void make_prototype(int c, int h, int w, int klass, uint64_t seed, std::vector<float>& proto) {
  for (int ch = 0; ch < c; ++ch) {
    Rng rng(seed, {stream::synthetic_proto, static_cast<uint64_t>(klass), static_cast<uint64_t>(ch)});
    double fx[kWaves], fy[kWaves], amp[kWaves], phase[kWaves];
    for (int j = 0; j < kWaves; ++j) {
      fx[j] = static_cast<double>(rng.below(3));
      fy[j] = static_cast<double>(rng.below(3));
      amp[j] = 30.0 + 30.0 * rng.uniform();
      phase[j] = 2.0 * M_PI * rng.uniform();
    }
    float* plane = proto.data() + static_cast<size_t>(ch) * h * w;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        double v = 128.0;
        for (int j = 0; j < kWaves; ++j)
          v += amp[j] * std::cos(2.0 * M_PI * (fx[j] * x / w + fy[j] * y / h) + phase[j]);
        plane[static_cast<size_t>(y) * w + x] = static_cast<float>(v);
      }
  }
}
}  // namespace

Dataset make_synthetic(int c, int h, int w, int classes, size_t n, uint64_t seed, bool test_split) {
  if (c < 1 || h < 1 || w < 1 || classes < 1)
    throw BadInput("synthetic data set: channels, height, width and classes must be >= 1 (got " + std::to_string(c) +
                   ", " + std::to_string(h) + ", " + std::to_string(w) + ", " + std::to_string(classes) + ")");
  Dataset ds;
  ds.name = "synthetic";
  ds.channels = c;
  ds.height = h;
  ds.width = w;
  ds.classes = classes;
  const size_t bytes = ds.image_bytes();
  ds.images.resize(n * bytes);
  ds.labels.resize(n);
  std::vector<float> proto(bytes);
  // One prototype at a time (memory O(C*H*W) even with many classes), then every sample of its class.
  for (int k = 0; k < classes && static_cast<size_t>(k) < n; ++k) {
    make_prototype(c, h, w, k, seed, proto);
    for (size_t i = static_cast<size_t>(k); i < n; i += static_cast<size_t>(classes)) {
      ds.labels[i] = k;
      Rng rng(seed, {stream::synthetic_noise, test_split ? 1u : 0u, i});
      uint8_t* img = ds.images.data() + i * bytes;
      for (size_t p = 0; p < bytes; ++p) {
        const double v = proto[p] + kNoiseSigma * irwin_hall4(rng.next_u64());
        img[p] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return ds;
}

}  // namespace dtbench::data
