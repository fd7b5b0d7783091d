// Batch normalisation: training forward (batch statistics, optional fused ReLU) vs a double reference, the
// running averages after one step vs their closed form (PyTorch's convention: unbiased variance, momentum
// 0.1), backward (dx, dgamma, dbeta) vs central finite differences of the reference, inference mode vs the
// reference with the running statistics, and the bad-input rule (one value per channel in training).
//
// Tolerances (relative to the largest magnitude of the reference tensor):
//  - forward and running statistics, 2e-5: means and variances are sums of at most 75 fp32 values; the output
//    is O(1) after normalisation; fp32 rounding gives errors around 1e-6 (observed below 1e-6).
//  - backward, 1e-5: the gradient of batch norm subtracts two batch sums from dy (dx = gamma / sigma (dy -
//    mean(dy) - xhat mean(dy xhat))), which cancels, so it gets a looser bound than the forward; observed
//    below 5e-7 relative to the largest entry. Finite differences: h = 1e-5 in double, truncation O(h^2) ~ 1e-10 and rounding
//    O(1e-16 |L| / h) ~ 1e-10, negligible. With the fused ReLU the inputs are such that no normalised value
//    lies within 1e-3 of 0, so no difference straddles the kink.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/workloads/harness.hpp"
#include "workloads/cpu/batch_norm.hpp"

namespace dtbench::test {
namespace {

using tag = dnnl::memory::format_tag;

struct BnCase {
  const char* name;
  int n, c, h, w;
  bool relu;
  tag layout;
};

class BatchNormTest : public ::testing::TestWithParam<BnCase> {};

Vec slice_of(const Vec& v, size_t offset, size_t n) {
  return Vec(v.begin() + long(offset), v.begin() + long(offset + n));
}

Vec signed_gamma(size_t n, uint64_t seed) {
  Vec g = random_vec(n, seed, 0.5, 1.5);
  for (size_t i = 0; i < n; i += 2) g[i] = -g[i];
  return g;
}

TEST_P(BatchNormTest, TrainingForwardRunningStatsAndBackward) {
  const BnCase& bc = GetParam();
  const Dims4 d{bc.n, bc.c, bc.h, bc.w};
  const size_t C = size_t(bc.c);
  Harness h(bc.n, true, 2 * C, 2 * C);
  dnnl::memory x = h.tensor({bc.n, bc.c, bc.h, bc.w}, bc.layout);
  auto& bn = h.plan->keep<cpu::BatchNorm>(*h.plan, "bn", cpu::BatchNormShape{bc.c, bc.relu}, 0, C, 0, x);
  dnnl::memory dy = h.plan->alloc(bn.y().get_desc());
  dnnl::memory dx = bn.backward(*h.plan, dy);

  const Vec xv = bn_input(d, 1);
  // |gamma| in [0.5, 1.5] of both signs and |beta| < 0.05: |gamma xhat| > 0.1 > |beta|, so with ReLU both
  // sides of the kink occur and no output lies within 0.05 of it.
  const Vec gamma = signed_gamma(C, 2), beta = random_vec(C, 3, -0.05, 0.05);
  const Vec run_mean0 = random_vec(C, 5), run_var0 = random_vec(C, 6, 0.5, 2.0);
  copy_into(h.params, 0, gamma);
  copy_into(h.params, C, beta);
  copy_into(h.buffers, 0, run_mean0);
  copy_into(h.buffers, C, run_var0);
  h.set(x, xv);
  h.plan->run_forward();

  Vec mean, var;
  const double eps = 1e-5;
  const Vec y_ref = batch_norm_train(xv, d, gamma, beta, eps, bc.relu, &mean, &var);
  EXPECT_LE(rel_max_err(h.get(bn.y()), y_ref), 2e-5);

  const double m = double(d.n) * d.h * d.w;
  Vec run_mean(C), run_var(C);
  for (size_t c = 0; c < C; ++c) {
    run_mean[c] = 0.9 * run_mean0[c] + 0.1 * mean[c];
    run_var[c] = 0.9 * run_var0[c] + 0.1 * var[c] * m / (m - 1.0);
  }
  EXPECT_LE(rel_max_err(slice(h.buffers, 0, C), run_mean), 2e-5);
  EXPECT_LE(rel_max_err(slice(h.buffers, C, C), run_var), 2e-5);

  const Vec dyv = random_vec(d.size(), 4);
  h.set(dy, dyv);
  h.plan->run_backward({});
  const double step = 1e-5;
  auto loss = [&](const Vec& xx, const Vec& g, const Vec& b) {
    return dot(dyv, batch_norm_train(xx, d, g, b, eps, bc.relu));
  };
  const Vec dx_fd = fd_gradient([&](const Vec& v) { return loss(v, gamma, beta); }, xv, step);
  const Vec dg_fd = fd_gradient([&](const Vec& v) { return loss(xv, v, beta); }, gamma, step);
  const Vec db_fd = fd_gradient([&](const Vec& v) { return loss(xv, gamma, v); }, beta, step);
  const double dx_err = rel_max_err(h.get(dx), dx_fd);
  const double dg_err = rel_max_err(slice(h.grads, 0, C), dg_fd);
  const double db_err = rel_max_err(slice(h.grads, C, C), db_fd);
  EXPECT_LE(dx_err, 1e-5);
  EXPECT_LE(dg_err, 1e-5);
  EXPECT_LE(db_err, 1e-5);
  std::printf("[%s] dx %.2e dgamma %.2e dbeta %.2e\n", bc.name, dx_err, dg_err, db_err);
}

TEST_P(BatchNormTest, InferenceUsesRunningStatistics) {
  const BnCase& bc = GetParam();
  const Dims4 d{bc.n, bc.c, bc.h, bc.w};
  const size_t C = size_t(bc.c);
  Harness h(bc.n, false, 2 * C, 2 * C);
  dnnl::memory x = h.tensor({bc.n, bc.c, bc.h, bc.w}, bc.layout);
  auto& bn = h.plan->keep<cpu::BatchNorm>(*h.plan, "bn", cpu::BatchNormShape{bc.c, bc.relu}, 0, C, 0, x);
  const Vec xv = bn_input(d, 11), gamma = random_vec(C, 12, -1.5, 1.5), beta = random_vec(C, 13);
  const Vec mean = random_vec(C, 14), var = random_vec(C, 15, 0.5, 2.0);
  copy_into(h.params, 0, gamma);
  copy_into(h.params, C, beta);
  copy_into(h.buffers, 0, mean);
  copy_into(h.buffers, C, var);
  h.set(x, xv);
  h.plan->run_forward();
  EXPECT_LE(rel_max_err(h.get(bn.y()), batch_norm_eval(xv, d, gamma, beta, mean, var, 1e-5, bc.relu)), 2e-5);
  // Evaluation leaves the running statistics alone.
  EXPECT_EQ(slice(h.buffers, 0, C), mean);
  EXPECT_EQ(slice(h.buffers, C, C), var);
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchNormTest,
                         ::testing::Values(BnCase{"blocked_c16", 2, 16, 5, 5, false, tag::nChw16c},
                                           BnCase{"blocked_c32_relu", 3, 32, 3, 3, true, tag::nChw16c},
                                           BnCase{"plain_c5_relu", 3, 5, 4, 4, true, tag::nchw}),
                         [](const ::testing::TestParamInfo<BnCase>& info) { return std::string(info.param.name); });

// Ghost batch norm (Hoffer et al. 2017): N = 6 images in ghost batches of g, against (1) batch norm applied to
// each ghost batch separately, one plain BatchNorm per ghost batch, the running statistics carried from one to
// the next and dgamma, dbeta summed in ghost order: the same oneDNN kernels on the same data, so bitwise equal;
// (2) the double reference per ghost batch and finite differences of the summed loss, tolerances as above.
struct GhostCase {
  const char* name;
  int n, c, h, w, ghost;
  bool relu;
  tag layout;
};

class GhostBatchNormTest : public ::testing::TestWithParam<GhostCase> {};

TEST_P(GhostBatchNormTest, EqualsBatchNormOfEachGhostBatch) {
  const GhostCase& gc = GetParam();
  const Dims4 d{gc.n, gc.c, gc.h, gc.w}, gd{gc.ghost, gc.c, gc.h, gc.w};
  const size_t C = size_t(gc.c), G = size_t(gc.n / gc.ghost), part = gd.size();
  cpu::BatchNormShape shape{gc.c, gc.relu};
  shape.ghost_batch = gc.ghost;

  const Vec xv = bn_input(d, 21, 0.3), dyv = random_vec(d.size(), 22);
  const Vec gamma = signed_gamma(C, 23), beta = random_vec(C, 24, -0.05, 0.05);
  const Vec run_mean0 = random_vec(C, 25), run_var0 = random_vec(C, 26, 0.5, 2.0);
  auto init = [&](Harness& h) {
    copy_into(h.params, 0, gamma);
    copy_into(h.params, C, beta);
    copy_into(h.buffers, 0, run_mean0);
    copy_into(h.buffers, C, run_var0);
  };

  Harness h(gc.n, true, 2 * C, 2 * C);
  dnnl::memory x = h.tensor({gc.n, gc.c, gc.h, gc.w}, gc.layout);
  auto& bn = h.plan->keep<cpu::BatchNorm>(*h.plan, "bn", shape, 0, C, 0, x);
  dnnl::memory dy = h.plan->alloc(bn.y().get_desc());
  dnnl::memory dx = bn.backward(*h.plan, dy);
  init(h);
  h.set(x, xv);
  h.plan->run_forward();
  h.set(dy, dyv);
  h.plan->run_backward({});
  const Vec y = h.get(bn.y()), dxv = h.get(dx);

  // (1) One plain batch norm per ghost batch, in order.
  std::vector<float> running(h.buffers.size());
  copy_into(running, 0, run_mean0);
  copy_into(running, C, run_var0);
  std::vector<float> dgamma(C, 0.0f), dbeta(C, 0.0f);
  for (size_t i = 0; i < G; ++i) {
    Harness p(gc.ghost, true, 2 * C, 2 * C);
    dnnl::memory px = p.tensor({gc.ghost, gc.c, gc.h, gc.w}, gc.layout);
    auto& pbn = p.plan->keep<cpu::BatchNorm>(*p.plan, "bn", cpu::BatchNormShape{gc.c, gc.relu}, 0, C, 0, px);
    dnnl::memory pdy = p.plan->alloc(pbn.y().get_desc());
    dnnl::memory pdx = pbn.backward(*p.plan, pdy);
    init(p);
    p.buffers = running;
    p.set(px, slice_of(xv, i * part, part));
    p.plan->run_forward();
    p.set(pdy, slice_of(dyv, i * part, part));
    p.plan->run_backward({});
    running = p.buffers;
    EXPECT_EQ(p.get(pbn.y()), slice_of(y, i * part, part)) << "y of ghost batch " << i;
    EXPECT_EQ(p.get(pdx), slice_of(dxv, i * part, part)) << "dx of ghost batch " << i;
    for (size_t c = 0; c < C; ++c) {
      dgamma[c] = i == 0 ? p.grads[c] : dgamma[c] + p.grads[c];
      dbeta[c] = i == 0 ? p.grads[C + c] : dbeta[c] + p.grads[C + c];
    }
  }
  EXPECT_EQ(h.buffers, running) << "running statistics";
  EXPECT_EQ(std::vector<float>(h.grads.begin(), h.grads.begin() + long(C)), dgamma);
  EXPECT_EQ(std::vector<float>(h.grads.begin() + long(C), h.grads.begin() + long(2 * C)), dbeta);

  // (2) The double reference: each ghost batch normalised by its own statistics; gradients of the summed
  // loss by finite differences; running statistics updated once per ghost batch.
  auto ghost_bn = [&](const Vec& xx, const Vec& g, const Vec& b, std::vector<Vec>* means, std::vector<Vec>* vars) {
    Vec out;
    for (size_t i = 0; i < G; ++i) {
      Vec mean, var;
      const Vec yi = batch_norm_train(slice_of(xx, i * part, part), gd, g, b, 1e-5, gc.relu, &mean, &var);
      out.insert(out.end(), yi.begin(), yi.end());
      if (means) means->push_back(mean), vars->push_back(var);
    }
    return out;
  };
  std::vector<Vec> means, vars;
  EXPECT_LE(rel_max_err(y, ghost_bn(xv, gamma, beta, &means, &vars)), 2e-5);
  Vec run_mean = run_mean0, run_var = run_var0;
  const double m = double(gd.n) * gd.h * gd.w;
  for (size_t i = 0; i < G; ++i)
    for (size_t c = 0; c < C; ++c) {
      run_mean[c] = 0.9 * run_mean[c] + 0.1 * means[i][c];
      run_var[c] = 0.9 * run_var[c] + 0.1 * vars[i][c] * m / (m - 1.0);
    }
  EXPECT_LE(rel_max_err(slice(h.buffers, 0, C), run_mean), 2e-5);
  EXPECT_LE(rel_max_err(slice(h.buffers, C, C), run_var), 2e-5);
  auto loss = [&](const Vec& xx, const Vec& g, const Vec& b) { return dot(dyv, ghost_bn(xx, g, b, nullptr, nullptr)); };
  const double step = 1e-5;
  EXPECT_LE(rel_max_err(dxv, fd_gradient([&](const Vec& v) { return loss(v, gamma, beta); }, xv, step)), 1e-5);
  EXPECT_LE(rel_max_err(slice(h.grads, 0, C), fd_gradient([&](const Vec& v) { return loss(xv, v, beta); }, gamma, step)),
            1e-5);
  EXPECT_LE(rel_max_err(slice(h.grads, C, C), fd_gradient([&](const Vec& v) { return loss(xv, gamma, v); }, beta, step)),
            1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GhostBatchNormTest,
                         ::testing::Values(GhostCase{"blocked_c16_g2", 6, 16, 3, 3, 2, false, tag::nChw16c},
                                           GhostCase{"blocked_c32_relu_g3", 6, 32, 3, 3, 3, true, tag::nChw16c},
                                           GhostCase{"plain_c5_relu_g2", 6, 5, 4, 4, 2, true, tag::nchw},
                                           GhostCase{"nhwc_c8_g1", 4, 8, 2, 2, 1, false, tag::nhwc}),
                         [](const ::testing::TestParamInfo<GhostCase>& info) { return std::string(info.param.name); });

TEST(GhostBatchNorm, RefusesABatchThatIsNotWholeGhostBatches) {
  Harness h(6, true, 32, 32);
  dnnl::memory x = h.tensor({6, 16, 2, 2}, tag::nChw16c);
  cpu::BatchNormShape shape{16, false};
  shape.ghost_batch = 4;
  EXPECT_THROW(h.plan->keep<cpu::BatchNorm>(*h.plan, "bn", shape, 0, 16, 0, x), BadInput);
  // A ghost batch of one 1x1 image has one value per channel.
  Harness one(2, true, 32, 32);
  dnnl::memory x1 = one.tensor({2, 16, 1, 1}, tag::nChw16c);
  shape.ghost_batch = 1;
  EXPECT_THROW(one.plan->keep<cpu::BatchNorm>(*one.plan, "bn", shape, 0, 16, 0, x1), BadInput);
}

TEST(BatchNorm, TrainingNeedsMoreThanOneValuePerChannel) {
  Harness h(1, true, 32, 32);
  dnnl::memory x = h.tensor({1, 16, 1, 1}, tag::nChw16c);
  EXPECT_THROW(h.plan->keep<cpu::BatchNorm>(*h.plan, "bn", cpu::BatchNormShape{16, false}, 0, 16, 0, x), BadInput);
  // Evaluation of a single value per channel is fine.
  Harness e(1, false, 32, 32);
  dnnl::memory xe = e.tensor({1, 16, 1, 1}, tag::nChw16c);
  EXPECT_NO_THROW(e.plan->keep<cpu::BatchNorm>(*e.plan, "bn", cpu::BatchNormShape{16, false}, 0, 16, 0, xe));
}

}  // namespace
}  // namespace dtbench::test
