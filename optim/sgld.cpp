#include "optim/sgld.hpp"

#include <cmath>

#include "core/rng.hpp"

namespace dtbench::optim {

namespace {

// Two N(0, 1) values from one 64-bit draw (Box-Muller in float): u1 = (hi + 1) 2^-32 in (0, 1] and
// u2 = lo 2^-32 in [0, 1); r = sqrt(-2 ln u1); (r cos 2 pi u2, r sin 2 pi u2). Float math is ~4x
// faster than Rng::normal's double log/sin/cos and plenty for Langevin noise; the smallest u1 caps
// |xi| at sqrt(2 ln 2^32) = 6.7 (a tail of probability 2e-11 per draw is cut).
inline void normal_pair(uint64_t bits, float& a, float& b) {
  const float u1 = static_cast<float>((bits >> 32) + 1) * 0x1.0p-32f;
  const float u2 = static_cast<float>(bits & 0xffffffffu) * 0x1.0p-32f;
  const float r = std::sqrt(-2.0f * std::log(u1));
  const float theta = 6.2831853071795865f * u2;
  a = r * std::cos(theta);
  b = r * std::sin(theta);
}

}  // namespace

void RngNoise::fill(int64_t t, size_t offset, float* out, size_t n) const {
  size_t done = 0;
  while (done < n) {
    const size_t i = offset + done;
    const size_t block = i / kBlock;
    Rng rng(seed_, {static_cast<uint64_t>(t), static_cast<uint64_t>(block)});
    // Element k of a block comes from draw k / 2: skipping whole pairs costs one draw each.
    size_t k = i - block * kBlock;
    for (size_t skip = 0; skip < k / 2; ++skip) rng.next_u64();
    const size_t take = std::min(n - done, (block + 1) * kBlock - i);
    float a, b;
    size_t produced = 0;
    if (k % 2 == 1) {
      normal_pair(rng.next_u64(), a, b);
      out[done + produced++] = b;
      ++k;
    }
    while (produced < take) {
      normal_pair(rng.next_u64(), a, b);
      out[done + produced++] = a;
      if (produced < take) out[done + produced++] = b;
    }
    done += take;
  }
}

Sgld::Sgld(ParamTable table, CommonOptions common, SgldOptions options, uint64_t seed,
           std::shared_ptr<const NoiseSource> noise)
    : Optimizer("sgld", std::move(table), common), options_(options), noise_(std::move(noise)) {
  require_nonnegative(options_.temperature, "/optimizer/temperature");
  if (!noise_) noise_ = std::make_shared<RngNoise>(seed);
}

void Sgld::update(float* w, const float* g, const StepContext& ctx) {
  const float half_lr = static_cast<float>(ctx.lr / 2.0);
  const float sigma = static_cast<float>(std::sqrt(ctx.lr * options_.temperature));
  for_each_chunk([&](const Chunk& c) {
    float xi[kChunkElements];
    const size_t n = c.end - c.begin;
    noise_->fill(ctx.t, c.begin, xi, n);
    const float wd = decay_f(c.tensor);
    float* __restrict wp = w + c.begin;
    const float* __restrict gp = g + c.begin;
    const GradTransform clip = ctx.clip;
    for (size_t i = 0; i < n; ++i) wp[i] = wp[i] - half_lr * (clip(gp[i]) + wd * wp[i]) + sigma * xi[i];
  });
}

}  // namespace dtbench::optim
