// Convolution: oneDNN forward vs a double-precision reference, oneDNN backward (dx, dw, db) vs central finite
// differences of that reference, over plain and blocked input layouts, strides, paddings, with and without
// bias, channel counts that do and do not fill a 16-channel block; and the same in bf16 with a bf16 tolerance.
//
// Tolerances (errors relative to the largest magnitude of the reference tensor):
//  - fp32, 2e-5: each output is a sum of at most K = C k^2 = 147 products of values in [-1, 1]; fp32 rounding
//    (unit 6e-8) accumulates like a random walk, about sqrt(K) x 6e-8 x sum|terms| ~ 1e-5 of a typical sum,
//    and less relative to the largest output. Observed: below 1e-6. A wrong index or a missing tap gives O(1).
//  - the finite differences themselves: the conv is linear in x, w and b, so central differences with h = 1e-3
//    in double are exact up to rounding, about 1e-16 |L| / h = 1e-11 relative: negligible.
//  - bf16, 2e-2: inputs and weights are rounded to 8 significant bits (relative error up to 2^-9 = 0.2% each),
//    products are accumulated in fp32; errors relative to the largest output are a few 1e-3.
#include <gtest/gtest.h>

#include "tests/workloads/harness.hpp"
#include "tests/workloads/needs_bf16.hpp"
#include "workloads/cpu/conv.hpp"

namespace dtbench::test {
namespace {

using tag = dnnl::memory::format_tag;

struct ConvCase {
  const char* name;
  int n, c, h, w;
  cpu::ConvShape shape;
  tag layout;
  cpu::Precision precision = cpu::Precision::fp32;
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, ForwardMatchesReferenceAndBackwardMatchesFiniteDifferences) {
  const ConvCase& cc = GetParam();
  const cpu::ConvShape& s = cc.shape;
  const bool bf16 = cc.precision == cpu::Precision::bf16;
  if (bf16) DTBENCH_SKIP_WITHOUT_BF16();
  const double fwd_tol = bf16 ? 2e-2 : 2e-5, bwd_tol = bf16 ? 2e-2 : 2e-5;
  const Dims4 xd{cc.n, cc.c, cc.h, cc.w};
  const size_t wsize = s.weight_size(), bsize = s.bias ? size_t(s.out_c) : 0;

  Harness h(cc.n, true, wsize + bsize, 0, cc.precision);
  dnnl::memory x = h.tensor({cc.n, cc.c, cc.h, cc.w}, cc.layout);
  auto& conv = h.plan->keep<cpu::Conv>(*h.plan, "conv", s, 0, wsize, x);
  dnnl::memory dy = h.plan->alloc(conv.y().get_desc());
  dnnl::memory dx = conv.backward(*h.plan, dy, true);

  const Vec xv = random_vec(xd.size(), 1), wv = random_vec(wsize, 2), bv = random_vec(bsize, 3);
  copy_into(h.params, 0, wv);
  copy_into(h.params, wsize, bv);
  h.set(x, xv);
  h.plan->run_forward();

  Dims4 yd{};
  const Vec y_ref = conv2d(xv, xd, wv, s.bias ? &bv : nullptr, s.out_c, s.kernel, s.stride, s.pad, &yd);
  const Vec y = h.get(conv.y());
  ASSERT_EQ(y.size(), y_ref.size());
  const double fwd_err = rel_max_err(y, y_ref);
  EXPECT_LE(fwd_err, fwd_tol) << cc.name;

  const Vec dyv = random_vec(yd.size(), 4);
  h.set(dy, dyv);
  h.plan->run_backward({});
  const double step = 1e-3;
  const Vec dx_fd = fd_gradient(
      [&](const Vec& v) { return dot(dyv, conv2d(v, xd, wv, s.bias ? &bv : nullptr, s.out_c, s.kernel, s.stride, s.pad)); },
      xv, step);
  const Vec dw_fd = fd_gradient(
      [&](const Vec& v) { return dot(dyv, conv2d(xv, xd, v, s.bias ? &bv : nullptr, s.out_c, s.kernel, s.stride, s.pad)); },
      wv, step);
  const double dx_err = rel_max_err(h.get(dx), dx_fd);
  const double dw_err = rel_max_err(slice(h.grads, 0, wsize), dw_fd);
  EXPECT_LE(dx_err, bwd_tol) << cc.name;
  EXPECT_LE(dw_err, bwd_tol) << cc.name;
  if (s.bias) {
    const Vec db_fd = fd_gradient(
        [&](const Vec& v) { return dot(dyv, conv2d(xv, xd, wv, &v, s.out_c, s.kernel, s.stride, s.pad)); }, bv, step);
    EXPECT_LE(rel_max_err(slice(h.grads, wsize, bsize), db_fd), bwd_tol) << cc.name;
  }
  RecordProperty("fwd_err", std::to_string(fwd_err));
  std::printf("[%s] forward %.2e, dx %.2e, dw %.2e\n", cc.name, fwd_err, dx_err, dw_err);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(ConvCase{"k3s1p1_bias_plain_c3", 2, 3, 7, 7, {3, 16, 3, 1, 1, true}, tag::nchw},
                      ConvCase{"k3s2p1_blocked_c16", 2, 16, 6, 6, {16, 32, 3, 2, 1, false}, tag::nChw16c},
                      ConvCase{"k1s2p0_blocked_c16", 2, 16, 6, 6, {16, 32, 1, 2, 0, false}, tag::nChw16c},
                      ConvCase{"k5s1p2_bias_c5_k7", 2, 5, 7, 7, {5, 7, 5, 1, 2, true}, tag::nchw},
                      ConvCase{"k7s2p3_stem", 1, 3, 11, 11, {3, 16, 7, 2, 3, false}, tag::nchw},
                      ConvCase{"k3s1p1_bf16", 2, 16, 6, 6, {16, 16, 3, 1, 1, false}, tag::nChw16c,
                               cpu::Precision::bf16},
                      ConvCase{"k3s2p1_bias_bf16_c3", 2, 3, 7, 7, {3, 16, 3, 2, 1, true}, tag::nchw,
                               cpu::Precision::bf16}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace dtbench::test
