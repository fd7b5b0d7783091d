// Max pooling, global average pooling, the fully connected layer and softmax cross-entropy: forwards vs
// double references, backwards vs central finite differences of those references.
//
// Tolerances (relative to the largest magnitude of the reference tensor):
//  - max pooling, 1e-6: the forward selects an input exactly and the backward routes dy exactly; the inputs
//    are distinct multiples of 1/64 (gaps >= 0.015 >> h = 1e-4), so no difference changes the argmax and the
//    finite differences are exact up to rounding.
//  - global average pooling, 1e-6: sums of at most 25 fp32 values (observed ~1e-7).
//  - fully connected, 2e-5: dot products of up to 64 fp32 products (as for the convolution, observed < 1e-6);
//    linear, so h = 1e-3 differences are exact up to rounding.
//  - softmax cross-entropy, 1e-6 on the loss (computed in double from fp32 logits) and 1e-5 on dz (p - q) / N,
//    stored in fp32 after exp/log in double; finite differences with h = 1e-5, truncation ~1e-10.
#include <gtest/gtest.h>

#include <numeric>

#include "tests/workloads/harness.hpp"
#include "workloads/cpu/global_avg_pool.hpp"
#include "workloads/cpu/linear.hpp"
#include "workloads/cpu/max_pool.hpp"
#include "workloads/cpu/softmax_cross_entropy.hpp"

namespace dtbench::test {
namespace {

using tag = dnnl::memory::format_tag;

struct PoolCase {
  int h;
  tag layout;
};

class MaxPoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(MaxPoolTest, ForwardAndBackward) {
  const PoolCase pc = GetParam();
  const Dims4 d{2, 16, pc.h, pc.h};
  Harness h(2, true, 0);
  dnnl::memory x = h.tensor({2, 16, pc.h, pc.h}, pc.layout);
  auto& pool = h.plan->keep<cpu::MaxPool>(*h.plan, "pool", cpu::PoolShape{3, 2, 1}, x);
  dnnl::memory dy = h.plan->alloc(pool.y().get_desc());
  dnnl::memory dx = pool.backward(*h.plan, dy);
  // A random permutation of distinct values (k - size/2) / 64.
  std::vector<size_t> order(d.size());
  std::iota(order.begin(), order.end(), size_t(0));
  Rng rng(5);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  Vec xv(d.size());
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = (double(order[i]) - double(xv.size()) / 2) / 64.0;
  h.set(x, xv);
  h.plan->run_forward();
  Dims4 yd{};
  const Vec y_ref = max_pool(xv, d, 3, 2, 1, &yd);
  EXPECT_LE(rel_max_err(h.get(pool.y()), y_ref), 1e-6);
  const Vec dyv = random_vec(yd.size(), 2);
  h.set(dy, dyv);
  h.plan->run_backward({});
  const Vec fd = fd_gradient([&](const Vec& v) { return dot(dyv, max_pool(v, d, 3, 2, 1)); }, xv, 1e-4);
  EXPECT_LE(rel_max_err(h.get(dx), fd), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MaxPoolTest,
                         ::testing::Values(PoolCase{7, tag::nChw16c}, PoolCase{8, tag::nChw16c}, PoolCase{6, tag::nchw}));

TEST(GlobalAvgPool, ForwardAndBackward) {
  const Dims4 d{2, 32, 5, 5};
  Harness h(2, true, 0);
  dnnl::memory x = h.tensor({2, 32, 5, 5}, tag::nChw16c);
  auto& gap = h.plan->keep<cpu::GlobalAvgPool>(*h.plan, "gap", x);
  ASSERT_EQ(gap.y().get_desc().dims(), (dnnl::memory::dims{2, 32, 1, 1}));
  dnnl::memory dy = h.plan->alloc(gap.y().get_desc());
  dnnl::memory dx = gap.backward(*h.plan, dy);
  const Vec xv = random_vec(d.size(), 1), dyv = random_vec(64, 2);
  h.set(x, xv);
  h.plan->run_forward();
  EXPECT_LE(rel_max_err(h.get(gap.y()), global_avg_pool(xv, d)), 1e-6);
  h.set(dy, dyv);
  h.plan->run_backward({});
  const Vec fd = fd_gradient([&](const Vec& v) { return dot(dyv, global_avg_pool(v, d)); }, xv, 1e-3);
  EXPECT_LE(rel_max_err(h.get(dx), fd), 1e-6);
}

struct LinearCase {
  const char* name;
  dnnl::memory::dims x_dims;
  tag layout;
  int out;
  bool plain_output;
};

class LinearTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearTest, ForwardAndBackward) {
  const LinearCase& lc = GetParam();
  const int n = int(lc.x_dims[0]);
  const int in = int(cpu::Linear::in_features(lc.x_dims));
  const size_t wsize = size_t(lc.out) * size_t(in);
  Harness h(n, true, wsize + size_t(lc.out));
  dnnl::memory x = h.tensor(lc.x_dims, lc.layout);
  auto& fc = h.plan->keep<cpu::Linear>(*h.plan, "fc", lc.out, 0, wsize, x, lc.plain_output);
  if (lc.plain_output) {
    EXPECT_EQ(fc.y().get_desc(), cpu::plain_md({n, lc.out}));
  }
  dnnl::memory dy = h.plan->alloc(fc.y().get_desc());
  dnnl::memory dx = fc.backward(*h.plan, dy, true);
  // x in PyTorch's flatten order (C, H, W) as the reference's N x I matrix.
  const Vec xv = random_vec(size_t(n) * size_t(in), 1), wv = random_vec(wsize, 2), bv = random_vec(size_t(lc.out), 3);
  copy_into(h.params, 0, wv);
  copy_into(h.params, wsize, bv);
  h.set(x, xv);
  h.plan->run_forward();
  EXPECT_LE(rel_max_err(h.get(fc.y()), linear(xv, n, in, wv, bv, lc.out)), 2e-5) << lc.name;
  const Vec dyv = random_vec(size_t(n) * size_t(lc.out), 4);
  h.set(dy, dyv);
  h.plan->run_backward({});
  const Vec dx_fd = fd_gradient([&](const Vec& v) { return dot(dyv, linear(v, n, in, wv, bv, lc.out)); }, xv, 1e-3);
  const Vec dw_fd = fd_gradient([&](const Vec& v) { return dot(dyv, linear(xv, n, in, v, bv, lc.out)); }, wv, 1e-3);
  const Vec db_fd = fd_gradient([&](const Vec& v) { return dot(dyv, linear(xv, n, in, wv, v, lc.out)); }, bv, 1e-3);
  EXPECT_LE(rel_max_err(h.get(dx), dx_fd), 2e-5) << lc.name;
  EXPECT_LE(rel_max_err(slice(h.grads, 0, wsize), dw_fd), 2e-5) << lc.name;
  EXPECT_LE(rel_max_err(slice(h.grads, wsize, size_t(lc.out)), db_fd), 2e-5) << lc.name;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearTest,
    ::testing::Values(LinearCase{"after_pooling_blocked", {3, 32, 1, 1}, tag::nChw16c, 10, true},
                      LinearCase{"image_input", {2, 2, 3, 3}, tag::nchw, 5, false},
                      LinearCase{"matrix", {4, 20}, tag::nc, 7, false}),
    [](const ::testing::TestParamInfo<LinearCase>& info) { return std::string(info.param.name); });

class SoftmaxXentTest : public ::testing::TestWithParam<float> {};

TEST_P(SoftmaxXentTest, LossCorrectCountAndGradient) {
  const float eps = GetParam();
  const int n = 4, k = 5;
  Harness h(n, true, 0);
  dnnl::memory z = h.tensor({n, k}, tag::nc);
  auto& loss = h.plan->keep<cpu::SoftmaxCrossEntropy>(*h.plan, "loss", z, eps);
  dnnl::memory dz = loss.backward(*h.plan);
  const Vec zv = random_vec(size_t(n) * size_t(k), 1, -3.0, 3.0);
  const std::vector<int32_t> labels = {0, 3, 4, 3};
  int expect_correct = 0;
  for (int i = 0; i < n; ++i) {
    const double* row = zv.data() + size_t(i) * size_t(k);
    expect_correct += int(std::max_element(row, row + k) - row) == labels[size_t(i)];
  }
  h.set(z, zv);
  loss.set_labels(labels.data());
  h.plan->run_forward();
  const double ref = softmax_cross_entropy(zv, n, k, labels, eps);
  EXPECT_NEAR(loss.loss(), ref, 1e-6 * std::abs(ref));
  EXPECT_EQ(loss.correct(), expect_correct);
  h.plan->run_backward({});
  const Vec fd = fd_gradient([&](const Vec& v) { return softmax_cross_entropy(v, n, k, labels, eps); }, zv, 1e-5);
  EXPECT_LE(rel_max_err(h.get(dz), fd), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(LabelSmoothing, SoftmaxXentTest, ::testing::Values(0.0f, 0.1f));

}  // namespace
}  // namespace dtbench::test
