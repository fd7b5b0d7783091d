// A plan with its own flat buffers, for testing one layer at a time.
#pragma once

#include <memory>
#include <vector>

#include "core/rng.hpp"
#include "tests/workloads/reference.hpp"
#include "workloads/cpu/plan.hpp"

namespace dtbench::test {

struct Harness {
  cpu::Context ctx;
  std::vector<float> params, grads, buffers;
  std::unique_ptr<cpu::Plan> plan;

  Harness(int batch, bool training, size_t n_params, size_t n_buffers = 0,
          cpu::Precision precision = cpu::Precision::fp32)
      : params(std::max<size_t>(n_params, 1)), grads(std::max<size_t>(n_params, 1), 0.0f),
        buffers(std::max<size_t>(n_buffers, 1)) {
    plan = std::make_unique<cpu::Plan>(ctx, batch, training, precision, params.data(), grads.data(), buffers.data());
  }

  // A plan memory in a chosen layout, e.g. nchw (plain) or nChw16c (blocked).
  dnnl::memory tensor(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag,
                      dnnl::memory::data_type dt = dnnl::memory::data_type::f32) {
    return plan->alloc(dnnl::memory::desc(dims, dt, tag));
  }
  void set(const dnnl::memory& m, const Vec& v) {
    std::vector<float> f(v.begin(), v.end());
    cpu::write_plain(ctx, m, f.data());
  }
  Vec get(const dnnl::memory& m) {
    std::vector<float> f = cpu::read_plain(ctx, m);
    return Vec(f.begin(), f.end());
  }
};

// n values uniform in [lo, hi), rounded to fp32 so that the double reference sees exactly what oneDNN sees.
inline Vec random_vec(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed);
  Vec v(n);
  for (double& x : v) x = double(float(lo + (hi - lo) * rng.uniform()));
  return v;
}

// Batch-norm inputs whose normalised values keep away from 0 (so a fused ReLU's kink is never within a
// finite difference): per channel, values at offset +-(0.2 .. 1.2) with alternating signs; the batch mean is
// within about 0.05 of the offset, so |x - mean| > 0.15 and |xhat| > 0.1. image_step > 0 widens image n's
// spread by image_step * (n mod 3), so that shards of the batch have different statistics.
inline Vec bn_input(Dims4 d, uint64_t seed, double image_step = 0.0) {
  Rng rng(seed);
  Vec x(d.size());
  for (int c = 0; c < d.c; ++c) {
    const double offset = 2.0 * rng.uniform() - 1.0;
    for (int n = 0; n < d.n; ++n)
      for (int i = 0; i < d.h; ++i)
        for (int j = 0; j < d.w; ++j) {
          const double mag = 0.2 + rng.uniform() + image_step * (n % 3);
          const size_t k = d.at(n, c, i, j);
          x[k] = double(float(offset + ((k % 2) ? mag : -mag)));
        }
  }
  return x;
}

inline void copy_into(std::vector<float>& dst, size_t offset, const Vec& v) {
  for (size_t i = 0; i < v.size(); ++i) dst[offset + i] = float(v[i]);
}

inline Vec slice(const std::vector<float>& src, size_t offset, size_t n) {
  return Vec(src.begin() + long(offset), src.begin() + long(offset + n));
}

}  // namespace dtbench::test
