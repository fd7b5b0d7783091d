// The gradient noise scale estimator against its closed form (McCandlish et al. 2018, A.1): with
// per-example gradients G + e_i, E|e|^2 = tr(Sigma), the mean over a batch of B has expected squared
// norm |G|^2 + tr(Sigma)/B. Feeding exact expectations must return B_simple = tr(Sigma)/|G|^2 exactly;
// feeding sampled batch gradients must converge to it.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "workloads/train/noise_scale.hpp"

using dtbench::NoiseScaleEstimator;

TEST(NoiseScale, ExactExpectationsGiveTheClosedForm) {
  const double g2 = 0.25, trace = 40.0;  // B_simple = 160
  for (auto [bs, bb] : {std::pair{32.0, 64.0}, {16.0, 256.0}, {1.0, 2.0}}) {
    NoiseScaleEstimator est(bs, bb);
    EXPECT_FALSE(est.b_simple().has_value());
    for (int i = 0; i < 10; ++i) est.observe(g2 + trace / bs, g2 + trace / bb);
    ASSERT_TRUE(est.b_simple().has_value());
    EXPECT_NEAR(*est.b_simple(), trace / g2, 1e-9 * trace / g2);
  }
}

// An fp16 step whose gradients overflowed (the loss scaler skips it, the run goes on) gives Inf or NaN norms: the
// estimate leaves it out, instead of turning NaN for the rest of the run.
TEST(NoiseScale, NonFiniteStepsAreLeftOut) {
  const double g2 = 0.25, trace = 40.0, bs = 32.0, bb = 64.0;
  NoiseScaleEstimator est(bs, bb);
  est.observe(INFINITY, INFINITY);
  EXPECT_FALSE(est.b_simple().has_value());
  for (int i = 0; i < 10; ++i) {
    est.observe(g2 + trace / bs, g2 + trace / bb);
    est.observe(g2 + trace / bs, NAN);
  }
  ASSERT_TRUE(est.b_simple().has_value());
  EXPECT_NEAR(*est.b_simple(), trace / g2, 1e-9 * trace / g2);
}

TEST(NoiseScale, SampledGradientsConverge) {
  // d dimensions, true gradient G (|G|^2 = d * 0.01), per-example noise N(0, 1) per dimension
  // (tr Sigma = d): B_simple = 100. Per-rank batch 8, 4 ranks. After 2000 steps of EMA(0.99) the
  // estimate's relative error is a few percent; 15% bounds it with margin.
  const int d = 50, b = 8, K = 4;
  dtbench::Rng rng(11);
  NoiseScaleEstimator est(b, b * K, 0.99);
  std::vector<double> big(d), small(d);
  for (int step = 0; step < 2000; ++step) {
    std::fill(big.begin(), big.end(), 0.0);
    double small_sq = 0;
    for (int r = 0; r < K; ++r) {
      std::fill(small.begin(), small.end(), 0.0);
      for (int i = 0; i < b; ++i)
        for (int j = 0; j < d; ++j) small[j] += (0.1 + rng.normal()) / b;
      for (int j = 0; j < d; ++j) {
        small_sq += small[j] * small[j] / K;
        big[j] += small[j] / K;
      }
    }
    double big_sq = 0;
    for (double v : big) big_sq += v * v;
    est.observe(small_sq, big_sq);
  }
  ASSERT_TRUE(est.b_simple().has_value());
  EXPECT_NEAR(*est.b_simple(), 100.0, 15.0);
}

TEST(NoiseScale, StateRoundTrip) {
  NoiseScaleEstimator a(8, 32), b(8, 32);
  a.observe(1.3, 0.7);
  a.observe(1.1, 0.65);
  b.load_state(a.save_state());
  a.observe(1.2, 0.6);
  b.observe(1.2, 0.6);
  EXPECT_EQ(*a.b_simple(), *b.b_simple());
}
