// Stochastic Gradient Langevin Dynamics (Welling and Teh 2011), in MXNet's form with a temperature T:
//     w = w - eta / 2 (g + lambda w) + sqrt(eta T) xi,      xi ~ N(0, 1) per element
// i.e. a gradient step of half the learning rate plus Gaussian noise of variance eta T (T = 1 samples
// the posterior; T < 1 sharpens it).
//
// The noise comes from a NoiseSource so that tests can feed a fixed sequence. The default, RngNoise,
// draws from dtbench::Rng: flat element i at step t takes the (i mod B)-th value of a Box-Muller
// stream (float, one 64-bit draw per pair) of Rng(seed, {t, i / B}), B = RngNoise::kBlock. So the
// noise depends only on (seed, t, i): not on the number of threads, and a restored optimizer (which
// restores t) draws the same noise.
#pragma once

#include <cstdint>
#include <memory>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

class NoiseSource {
 public:
  virtual ~NoiseSource() = default;
  // Standard normal values for flat elements [offset, offset + n) at step t (1-based). Called
  // concurrently from several threads for disjoint ranges.
  virtual void fill(int64_t t, size_t offset, float* out, size_t n) const = 0;
};

class RngNoise final : public NoiseSource {
 public:
  static constexpr size_t kBlock = 1024;
  explicit RngNoise(uint64_t seed) : seed_(seed) {}
  void fill(int64_t t, size_t offset, float* out, size_t n) const override;

 private:
  uint64_t seed_;
};

struct SgldOptions {
  double temperature = 1.0;  // >= 0
};

class Sgld final : public Optimizer {
 public:
  // noise may be null: then RngNoise(seed).
  Sgld(ParamTable table, CommonOptions common, SgldOptions options = {}, uint64_t seed = 0,
       std::shared_ptr<const NoiseSource> noise = nullptr);
  size_t bytes_per_param() const override { return 12; }  // w rw, g r (the noise is computed)

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter&) const override {}  // stateless apart from the step count
  void load_extra(StateReader&) override {}

  SgldOptions options_;
  std::shared_ptr<const NoiseSource> noise_;
};

}  // namespace dtbench::optim
