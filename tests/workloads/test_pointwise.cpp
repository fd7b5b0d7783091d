// ReLU, residual addition (with and without its ReLU, with inputs in different layouts), gradient
// accumulation, and dropout: forwards vs double references, backwards vs central finite differences.
//
// Tolerances: these layers do at most one fp32 addition per element, so the forward is within one rounding
// (6e-8 relative) of the reference, and the backward copies or masks dy exactly: 1e-6 relative to the largest
// entry leaves room for one rounding and catches any wrong mask or missing term (errors of O(1)). Finite
// differences: h = 1e-4 in double on piecewise-linear functions whose kinks are kept more than 1e-2 away
// (inputs with |x| >= 0.05 and |a + b| >= 0.05), so they are exact up to rounding (~1e-12).
#include <gtest/gtest.h>

#include "tests/workloads/harness.hpp"
#include "workloads/cpu/dropout.hpp"
#include "workloads/cpu/relu.hpp"
#include "workloads/cpu/residual_add.hpp"

namespace dtbench::test {
namespace {

using tag = dnnl::memory::format_tag;

// Values with |x| in [0.05, 1] and random sign: no kink of max(x, 0) within a finite difference.
Vec away_from_zero(size_t n, uint64_t seed) {
  Rng rng(seed);
  Vec v(n);
  for (double& x : v) x = double(float((0.05 + 0.95 * rng.uniform()) * (rng.uniform() < 0.5 ? -1.0 : 1.0)));
  return v;
}

TEST(Relu, ForwardAndBackward) {
  const Dims4 d{2, 16, 3, 3};
  Harness h(2, true, 0);
  dnnl::memory x = h.tensor({2, 16, 3, 3}, tag::nChw16c);
  auto& relu = h.plan->keep<cpu::Relu>(*h.plan, "relu", x);
  dnnl::memory dy = h.plan->alloc(relu.y().get_desc());
  dnnl::memory dx = relu.backward(*h.plan, dy);
  const Vec xv = away_from_zero(d.size(), 1), dyv = random_vec(d.size(), 2);
  h.set(x, xv);
  h.plan->run_forward();
  EXPECT_LE(rel_max_err(h.get(relu.y()), test::relu(xv)), 1e-6);
  h.set(dy, dyv);
  h.plan->run_backward({});
  const Vec fd = fd_gradient([&](const Vec& v) { return dot(dyv, test::relu(v)); }, xv, 1e-4);
  EXPECT_LE(rel_max_err(h.get(dx), fd), 1e-6);
}

class ResidualAddTest : public ::testing::TestWithParam<bool> {};

TEST_P(ResidualAddTest, BothInputsGetTheGradientOfTheSum) {
  const bool with_relu = GetParam();
  const Dims4 d{2, 16, 3, 3};
  Harness h(2, true, 0);
  dnnl::memory a = h.tensor({2, 16, 3, 3}, tag::nChw16c);
  dnnl::memory b = h.tensor({2, 16, 3, 3}, tag::nchw);  // a different layout: the layer reorders it
  auto& add = h.plan->keep<cpu::ResidualAdd>(*h.plan, "add", a, b, with_relu, false);
  dnnl::memory dy = h.plan->alloc(add.y().get_desc());
  dnnl::memory ds = add.backward(*h.plan, dy);

  // a + b kept away from 0: b = s - a with |s| >= 0.05.
  const Vec av = random_vec(d.size(), 1), sv = away_from_zero(d.size(), 2);
  Vec bv(d.size());
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = double(float(sv[i] - av[i]));
  auto f = [&](const Vec& aa, const Vec& bb) {
    Vec y(aa.size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = aa[i] + bb[i];
    return with_relu ? test::relu(y) : y;
  };
  h.set(a, av);
  h.set(b, bv);
  h.plan->run_forward();
  EXPECT_LE(rel_max_err(h.get(add.y()), f(av, bv)), 1e-6);

  const Vec dyv = random_vec(d.size(), 3);
  h.set(dy, dyv);
  h.plan->run_backward({});
  const Vec grad = h.get(ds);
  EXPECT_LE(rel_max_err(grad, fd_gradient([&](const Vec& v) { return dot(dyv, f(v, bv)); }, av, 1e-4)), 1e-6);
  EXPECT_LE(rel_max_err(grad, fd_gradient([&](const Vec& v) { return dot(dyv, f(av, v)); }, bv, 1e-4)), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Relu, ResidualAddTest, ::testing::Values(false, true));

TEST(ResidualAdd, InPlaceWritesOverTheFirstInput) {
  Harness h(1, false, 0);
  dnnl::memory a = h.tensor({1, 16, 2, 2}, tag::nChw16c), b = h.tensor({1, 16, 2, 2}, tag::nChw16c);
  auto& add = h.plan->keep<cpu::ResidualAdd>(*h.plan, "add", a, b, true, true);
  EXPECT_EQ(add.y().get_data_handle(), a.get_data_handle());
  const Vec av = random_vec(64, 1), bv = random_vec(64, 2);
  h.set(a, av);
  h.set(b, bv);
  h.plan->run_forward();
  Vec expect(64);
  for (size_t i = 0; i < 64; ++i) expect[i] = std::max(double(float(av[i] + bv[i])), 0.0);
  EXPECT_EQ(h.get(a), expect);
}

TEST(AccumulateBackward, AddsAcrossLayouts) {
  Harness h(2, true, 0);
  dnnl::memory into = h.tensor({2, 16, 3, 3}, tag::nChw16c), other = h.tensor({2, 16, 3, 3}, tag::nchw);
  cpu::accumulate_backward(*h.plan, "sum", into, other);
  const Vec a = random_vec(288, 1), b = random_vec(288, 2);
  h.set(into, a);
  h.set(other, b);
  h.plan->run_backward({});
  Vec expect(288);
  for (size_t i = 0; i < 288; ++i) expect[i] = double(float(a[i] + b[i]));  // one fp32 rounding, exactly
  EXPECT_EQ(h.get(into), expect);
}

// Dropout with p: the kept fraction is binomial(n, 1 - p): within 5 standard deviations of its mean (a false
// failure has probability below 1e-6); kept values are x / (1 - p), exactly as the float product; the
// backward applies the same mask and scale; a new step draws a new mask, the same step the same mask.
TEST(Dropout, MaskScaleAndBackward) {
  const float p = 0.3f;
  const int n = 64, c = 32;
  Harness h(n, true, 0);
  models::BatchPosition at{1, 0};
  dnnl::memory x = h.tensor({n, c}, tag::nc);
  auto& drop = h.plan->keep<cpu::Dropout>(*h.plan, "dropout", p, 42, &at, x);
  dnnl::memory dy = h.plan->alloc(drop.y().get_desc());
  dnnl::memory dx = drop.backward(*h.plan, dy);
  const size_t total = size_t(n) * size_t(c);
  const Vec xv = random_vec(total, 1), dyv = random_vec(total, 2);
  h.set(x, xv);
  h.plan->run_forward();
  const std::vector<uint8_t> mask1 = drop.mask();
  size_t kept = 0;
  for (uint8_t m : mask1) kept += m;
  const double mean = total * (1.0 - p), sd = std::sqrt(total * p * (1.0 - p));
  EXPECT_NEAR(double(kept), mean, 5.0 * sd);

  const float scale = 1.0f / (1.0f - p);
  const Vec y = h.get(drop.y());
  for (size_t i = 0; i < total; ++i) {
    ASSERT_EQ(float(y[i]), mask1[i] ? float(xv[i]) * scale : 0.0f) << i;
  }
  h.set(dy, dyv);
  h.plan->run_backward({});
  auto f = [&](const Vec& v) {
    Vec out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = mask1[i] ? v[i] * double(scale) : 0.0;
    return out;
  };
  EXPECT_LE(rel_max_err(h.get(dx), fd_gradient([&](const Vec& v) { return dot(dyv, f(v)); }, xv, 1e-4)), 1e-6);

  h.plan->run_forward();
  EXPECT_EQ(drop.mask(), mask1);  // same step, same mask
  at.step = 2;
  h.plan->run_forward();
  EXPECT_NE(drop.mask(), mask1);
}

// Each sample's mask depends on its position in the global batch, not on the forward's size: two forwards of
// n/2 samples at positions 0 and n/2 draw exactly the masks of one forward of n (K ranks x b = 1 rank x K*b),
// also in a blocked layout (nChw16c, 24 channels: padded to 32), where the mask covers each sample's stored block.
TEST(Dropout, MaskFollowsTheSamplePosition) {
  const int n = 8;
  for (auto [c, layout] : {std::pair{24, tag::nChw16c}, std::pair{24, tag::nchw}}) {
    std::vector<std::vector<uint8_t>> masks;
    for (int part : {n, n / 2}) {
      Harness h(part, true, 0);
      models::BatchPosition at{5, 0};
      dnnl::memory x = h.tensor({part, c, 1, 1}, layout);
      auto& drop = h.plan->keep<cpu::Dropout>(*h.plan, "dropout", 0.5f, 42, &at, x);
      h.set(x, random_vec(size_t(part) * size_t(c), 1));
      std::vector<uint8_t> all;
      for (int first = 0; first < n; first += part) {
        at.first_sample = uint64_t(first);
        h.plan->run_forward();
        all.insert(all.end(), drop.mask().begin(), drop.mask().end());
      }
      masks.push_back(all);
    }
    EXPECT_EQ(masks[0], masks[1]) << c;
    std::vector<uint8_t> direct(masks[0].size());
    const size_t per_sample = direct.size() / n;
    models::dropout_keep_mask(42, {5, 0}, 0.5f, n, per_sample, direct.data());
    EXPECT_EQ(masks[0], direct);
  }
}

TEST(Dropout, Bf16Tensor) {
  Harness h(4, true, 0, 0, cpu::Precision::bf16);
  models::BatchPosition at{3, 0};
  dnnl::memory x = h.tensor({4, 16}, tag::nc, dnnl::memory::data_type::bf16);
  auto& drop = h.plan->keep<cpu::Dropout>(*h.plan, "dropout", 0.5f, 1, &at, x);
  // Values exactly representable in bf16 and doubled exactly by the scale 2.
  Vec xv(64);
  for (size_t i = 0; i < 64; ++i) xv[i] = double(int(i) - 32) / 8.0;
  h.set(x, xv);
  h.plan->run_forward();
  const Vec y = h.get(drop.y());
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(y[i], drop.mask()[i] ? 2.0 * xv[i] : 0.0) << i;
}

}  // namespace
}  // namespace dtbench::test
