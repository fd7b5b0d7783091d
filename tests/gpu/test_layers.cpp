// Every GPU layer against the CPU layer (oneDNN) on the same weights, batch and output gradient: forward
// outputs, input gradients and parameter gradients. Both backends compute in fp32; the CPU layers are
// themselves checked against double references and finite differences (tests/workloads).
//
// Tolerances, as errors relative to the largest magnitude of the CPU tensor:
//  - convolution and fully connected, 1e-5: sums of up to a few hundred fp32 products (8192 for the weight
//    gradient of the 64-channel 32x32 case), added in different orders by cuDNN/cuBLAS and oneDNN. Each side
//    is within ~1e-6 of the exact value (tests/workloads observed < 1e-6 against double; rounding errors of
//    independent terms grow as the square root of the count, so 8192 terms stay near 1e-6 of the largest
//    value), so they differ by a few 1e-6 at most; a wrong index, tap or transpose gives O(1). fp32 must
//    not pick an FFT or Winograd algorithm (asserted from the chosen algorithms).
//  - batch norm, 1e-5 for y, dgamma, dbeta and the running statistics (means and variances of 128-512
//    values); 1e-4 for dx, whose formula subtracts two means of products (cancellation amplifies the
//    different rounding of the two libraries by about the ratio of those terms to dx, here ~10).
//  - ReLU, residual addition, dropout: exact (the same single fp32 operation per element, or none).
//  - max pooling, 1e-6: selection is exact; an input that is the maximum of several overlapping windows
//    gets the sum of their dy in an order that may differ. Global average pooling, 1e-6.
//  - softmax cross-entropy: the loss 1e-12 relative (both sum in double from the same fp32 logits; exp
//    and log differ by an ulp at most), dz 1e-6 (p is rounded to fp32 from a double that may differ in
//    its last bit).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "core/cuda/cuda_check.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/workloads/harness.hpp"
#include "workloads/cpu/batch_norm.hpp"
#include "workloads/cpu/conv.hpp"
#include "workloads/cpu/dropout.hpp"
#include "workloads/cpu/global_avg_pool.hpp"
#include "workloads/cpu/linear.hpp"
#include "workloads/cpu/max_pool.hpp"
#include "workloads/cpu/relu.hpp"
#include "workloads/cpu/residual_add.hpp"
#include "workloads/cpu/softmax_cross_entropy.hpp"
#include "workloads/gpu/activation.hpp"
#include "workloads/gpu/batch_norm.hpp"
#include "workloads/gpu/conv.hpp"
#include "workloads/gpu/dropout.hpp"
#include "workloads/gpu/linear.hpp"
#include "workloads/gpu/pooling.hpp"
#include "workloads/gpu/residual_add.hpp"
#include "workloads/gpu/softmax_cross_entropy.hpp"

namespace dtbench::test {
namespace {

using tag = dnnl::memory::format_tag;
using gpu::Tensor;

std::vector<float> floats(const Vec& v) { return std::vector<float>(v.begin(), v.end()); }
Vec doubles(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// A GPU plan (fp32) with its own flat device buffers: one layer at a time.
struct GpuHarness {
  gpu::GpuContext ctx;
  gpu::DeviceBuffer params, grads, buffers;
  std::unique_ptr<gpu::GpuPlan> plan;

  GpuHarness(int batch, bool training, size_t n_params, size_t n_buffers = 0)
      : params(std::max<size_t>(n_params, 1) * sizeof(float)),
        grads(std::max<size_t>(n_params, 1) * sizeof(float)),
        buffers(std::max<size_t>(n_buffers, 1) * sizeof(float)) {
    gpu::WeightBuffers w{params.as<float>(), params.get(), grads.as<float>(), grads.get(), buffers.as<float>()};
    plan = std::make_unique<gpu::GpuPlan>(ctx, batch, training, gpu::Precision::fp32, w);
  }
  Tensor tensor(int n, int c, int h, int w) { return plan->alloc(n, c, h, w, gpu::Precision::fp32); }
  void set(const Tensor& t, const std::vector<float>& v) {
    ASSERT_EQ(v.size(), t.count());
    DTB_CUDA(cudaMemcpy(t.data, v.data(), t.bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<float> get(const Tensor& t) {
    std::vector<float> v(t.count());
    DTB_CUDA(cudaStreamSynchronize(ctx.stream()));
    DTB_CUDA(cudaMemcpy(v.data(), t.data, t.bytes(), cudaMemcpyDeviceToHost));
    return v;
  }
  void set_floats(gpu::DeviceBuffer& b, size_t offset, const std::vector<float>& v) {
    DTB_CUDA(cudaMemcpy(b.as<float>() + offset, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  std::vector<float> get_floats(const gpu::DeviceBuffer& b, size_t offset, size_t n) {
    std::vector<float> v(n);
    DTB_CUDA(cudaStreamSynchronize(ctx.stream()));
    DTB_CUDA(cudaMemcpy(v.data(), b.as<float>() + offset, n * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
  }
  void forward() {
    plan->run_forward();
    DTB_CUDA(cudaStreamSynchronize(ctx.stream()));
  }
  void backward() {
    plan->run_backward({});
    DTB_CUDA(cudaStreamSynchronize(ctx.stream()));
  }
};

class GpuLayer : public ::testing::Test {
 protected:
  void SetUp() override { DTB_REQUIRE_DEVICE(); }
};

// ---- convolution ------------------------------------------------------------------------------------------

struct ConvCase {
  const char* name;
  int n, c, h, w;
  gpu::ConvShape shape;
  bool bias = false;  // a bias of out_c after the weights (the Simple CNN's convolutions)
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class GpuConv : public ::testing::TestWithParam<ConvCase> {
 protected:
  void SetUp() override { DTB_REQUIRE_DEVICE(); }
};

TEST_P(GpuConv, MatchesTheCpuLayer) {
  const ConvCase& cc = GetParam();
  const gpu::ConvShape& s = cc.shape;
  const size_t wsize = s.weight_size(), bsize = cc.bias ? size_t(s.out_c) : 0, psize = wsize + bsize;
  const auto x = random_floats(size_t(cc.n) * cc.c * cc.h * cc.w, 1);
  const auto w = random_floats(psize, 2);
  const int p = s.out_size(cc.h), q = s.out_size(cc.w);
  const auto dy = random_floats(size_t(cc.n) * s.out_c * p * q, 3);

  Harness h(cc.n, true, psize);
  dnnl::memory cx = h.tensor({cc.n, cc.c, cc.h, cc.w}, tag::nchw);
  auto& cconv = h.plan->keep<cpu::Conv>(*h.plan, "conv",
                                        cpu::ConvShape{s.in_c, s.out_c, s.kernel, s.stride, s.pad, cc.bias}, 0,
                                        cc.bias ? wsize : 0, cx);
  dnnl::memory cdy = h.plan->alloc(cconv.y().get_desc());
  dnnl::memory cdx = cconv.backward(*h.plan, cdy, true);
  copy_into(h.params, 0, doubles(w));
  h.set(cx, doubles(x));
  h.plan->run_forward();
  h.set(cdy, doubles(dy));
  h.plan->run_backward({});

  GpuHarness g(cc.n, true, psize);
  Tensor gx = g.tensor(cc.n, cc.c, cc.h, cc.w);
  auto& gconv = g.plan->keep<gpu::Conv>(*g.plan, "conv", s, 0, gx, cc.bias ? wsize : gpu::Conv::kNoBias);
  ASSERT_EQ(gconv.y().h, p);
  Tensor gdy = g.tensor(cc.n, s.out_c, p, q);
  Tensor gdx = gconv.backward(*g.plan, gdy, true);
  g.set_floats(g.params, 0, w);
  g.set(gx, x);
  g.forward();
  g.set(gdy, dy);
  g.backward();

  // fp32 keeps to direct (GEMM-like) algorithms: no FFT or Winograd, written out here from cuDNN's enums.
  const int fwd = gconv.forward_algo(), bwd_data = gconv.backward_data_algo(), bwd_filter = gconv.backward_filter_algo();
  for (int a : {CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
                CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED}) {
    EXPECT_NE(fwd, a) << cc.name;
  }
  for (int a : {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED}) {
    EXPECT_NE(bwd_data, a) << cc.name;
  }
  for (int a : {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED}) {
    EXPECT_NE(bwd_filter, a) << cc.name;
  }
  EXPECT_LE(rel_err(g.get(gconv.y()), floats(h.get(cconv.y()))), 1e-5) << cc.name;
  EXPECT_LE(rel_err(g.get(gdx), floats(h.get(cdx))), 1e-5) << cc.name;
  EXPECT_LE(rel_err(g.get_floats(g.grads, 0, wsize), floats(slice(h.grads, 0, wsize))), 1e-5) << cc.name;
  if (cc.bias) {
    EXPECT_LE(rel_err(g.get_floats(g.grads, wsize, bsize), floats(slice(h.grads, wsize, bsize))), 1e-5) << cc.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuConv,
                         ::testing::Values(ConvCase{"k3s1p1_c3", 2, 3, 7, 7, {3, 16, 3, 1, 1}},
                                           // The Simple CNN's convolutions: 5 x 5, "same" padding, a bias.
                                           ConvCase{"k5s1p2_bias", 4, 1, 28, 28, {1, 8, 5, 1, 2}, true},
                                           ConvCase{"k5s1p2_bias_c8", 4, 8, 14, 14, {8, 16, 5, 1, 2}, true},
                                           ConvCase{"k3s2p1_c16", 2, 16, 6, 6, {16, 32, 3, 2, 1}},
                                           ConvCase{"k1s2p0_c16", 2, 16, 6, 6, {16, 32, 1, 2, 0}},
                                           ConvCase{"k7s2p3_stem", 1, 3, 11, 11, {3, 16, 7, 2, 3}},
                                           // Where cuDNN's heuristics like Winograd and FFT best.
                                           ConvCase{"k3s1p1_c64_32px", 8, 64, 32, 32, {64, 64, 3, 1, 1}},
                                           // ResNet-8's layer3.0 on 28 x 28 inputs (14 x 14 to 7 x 7) and ResNet-50's
                                           // bottleneck 1 x 1 convolutions at 32 x 32 inputs: the shapes of the fp32
                                           // model tests that failed on an H200 (BENCHMARKS.md).
                                           ConvCase{"k3s2p1_c32_14px", 8, 32, 14, 14, {32, 64, 3, 2, 1}},
                                           ConvCase{"k1s2p0_c32_14px", 8, 32, 14, 14, {32, 64, 1, 2, 0}},
                                           ConvCase{"k1s1p0_c256_to_64_8px", 4, 256, 8, 8, {256, 64, 1, 1, 0}},
                                           ConvCase{"k1s1p0_c64_to_256_8px", 4, 64, 8, 8, {64, 256, 1, 1, 0}},
                                           ConvCase{"k1s2p0_c512_to_1024_2px", 4, 512, 2, 2, {512, 1024, 1, 2, 0}}),
                         [](const ::testing::TestParamInfo<ConvCase>& i) { return std::string(i.param.name); });

// ---- batch norm -------------------------------------------------------------------------------------------

struct BnCase {
  const char* name;
  bool relu;
  int n, c, h, w;
};

void PrintTo(const BnCase& c, std::ostream* os) { *os << c.name; }

class GpuBatchNorm : public ::testing::TestWithParam<BnCase> {
 protected:
  void SetUp() override { DTB_REQUIRE_DEVICE(); }
};

TEST_P(GpuBatchNorm, TrainingMatchesTheCpuLayerIncludingRunningStatistics) {
  const bool relu = GetParam().relu;
  const int n = GetParam().n, c = GetParam().c, hh = GetParam().h, ww = GetParam().w;
  const size_t count = size_t(n) * c * hh * ww;
  const auto x = random_floats(count, 11, -2.0, 3.0);
  const auto gamma = random_floats(size_t(c), 12, 0.5, 1.5), beta = random_floats(size_t(c), 13);
  const auto dy = random_floats(count, 14);
  std::vector<float> running(2 * size_t(c), 0.0f);
  std::fill(running.begin() + c, running.end(), 1.0f);

  Harness h(n, true, 2 * size_t(c), 2 * size_t(c));
  dnnl::memory cx = h.tensor({n, c, hh, ww}, tag::nchw);
  auto& cbn = h.plan->keep<cpu::BatchNorm>(*h.plan, "bn", cpu::BatchNormShape{c, relu}, 0, size_t(c), 0, cx);
  dnnl::memory cdy = h.plan->alloc(cbn.y().get_desc());
  dnnl::memory cdx = cbn.backward(*h.plan, cdy);
  copy_into(h.params, 0, doubles(gamma));
  copy_into(h.params, size_t(c), doubles(beta));
  std::copy(running.begin(), running.end(), h.buffers.begin());
  h.set(cx, doubles(x));
  h.plan->run_forward();
  h.set(cdy, doubles(dy));
  h.plan->run_backward({});

  GpuHarness g(n, true, 2 * size_t(c), 2 * size_t(c));
  Tensor gx = g.tensor(n, c, hh, ww);
  gpu::BatchNormShape shape;
  shape.channels = c;
  shape.fuse_relu = relu;
  auto& gbn = g.plan->keep<gpu::BatchNorm>(*g.plan, "bn", shape, 0, size_t(c), 0, gx);
  Tensor gdy = g.tensor(n, c, hh, ww);
  Tensor gdx = gbn.backward(*g.plan, gdy);
  g.set_floats(g.params, 0, gamma);
  g.set_floats(g.params, size_t(c), beta);
  g.set_floats(g.buffers, 0, running);
  g.set(gx, x);
  g.forward();
  g.set(gdy, dy);
  g.backward();

  EXPECT_LE(rel_err(g.get(gbn.y()), floats(h.get(cbn.y()))), 1e-5);
  EXPECT_LE(rel_err(g.get(gdx), floats(h.get(cdx))), 1e-4);
  EXPECT_LE(rel_err(g.get_floats(g.grads, 0, size_t(c)), floats(slice(h.grads, 0, size_t(c)))), 1e-5);
  EXPECT_LE(rel_err(g.get_floats(g.grads, size_t(c), size_t(c)), floats(slice(h.grads, size_t(c), size_t(c)))), 1e-5);
  EXPECT_LE(rel_err(g.get_floats(g.buffers, 0, size_t(c)), std::vector<float>(h.buffers.begin(), h.buffers.begin() + c)),
            1e-5)
      << "running mean";
  EXPECT_LE(rel_err(g.get_floats(g.buffers, size_t(c), size_t(c)),
                    std::vector<float>(h.buffers.begin() + c, h.buffers.begin() + 2 * c)),
            1e-5)
      << "running variance (unbiased, as PyTorch)";
}

// The small shape with and without the fused ReLU, and ResNet-8's layer2 and layer3 shapes at batch 8 on 28 x 28
// inputs (the fp32 model test that failed on an H200, BENCHMARKS.md).
INSTANTIATE_TEST_SUITE_P(Shapes, GpuBatchNorm,
                         ::testing::Values(BnCase{"c8_5px", false, 4, 8, 5, 5}, BnCase{"c8_5px_relu", true, 4, 8, 5, 5},
                                           BnCase{"c32_14px_relu", true, 8, 32, 14, 14},
                                           BnCase{"c64_7px", false, 8, 64, 7, 7},
                                           BnCase{"c64_7px_relu", true, 8, 64, 7, 7}),
                         [](const ::testing::TestParamInfo<BnCase>& i) { return std::string(i.param.name); });

TEST_F(GpuLayer, BatchNormEvaluationUsesTheRunningStatistics) {
  const int n = 3, c = 6, hh = 4, ww = 4;
  const size_t count = size_t(n) * c * hh * ww;
  const auto x = random_floats(count, 21, -2.0, 2.0);
  const auto gamma = random_floats(size_t(c), 22, 0.5, 1.5), beta = random_floats(size_t(c), 23);
  auto running = random_floats(size_t(c), 24);
  const auto var = random_floats(size_t(c), 25, 0.5, 1.5);
  running.insert(running.end(), var.begin(), var.end());

  Harness h(n, false, 2 * size_t(c), 2 * size_t(c));
  dnnl::memory cx = h.tensor({n, c, hh, ww}, tag::nchw);
  auto& cbn = h.plan->keep<cpu::BatchNorm>(*h.plan, "bn", cpu::BatchNormShape{c, true}, 0, size_t(c), 0, cx);
  copy_into(h.params, 0, doubles(gamma));
  copy_into(h.params, size_t(c), doubles(beta));
  std::copy(running.begin(), running.end(), h.buffers.begin());
  h.set(cx, doubles(x));
  h.plan->run_forward();

  GpuHarness g(n, false, 2 * size_t(c), 2 * size_t(c));
  Tensor gx = g.tensor(n, c, hh, ww);
  gpu::BatchNormShape shape;
  shape.channels = c;
  shape.fuse_relu = true;
  auto& gbn = g.plan->keep<gpu::BatchNorm>(*g.plan, "bn", shape, 0, size_t(c), 0, gx);
  g.set_floats(g.params, 0, gamma);
  g.set_floats(g.params, size_t(c), beta);
  g.set_floats(g.buffers, 0, running);
  g.set(gx, x);
  g.forward();
  EXPECT_LE(rel_err(g.get(gbn.y()), floats(h.get(cbn.y()))), 1e-5);
  EXPECT_EQ(g.get_floats(g.buffers, 0, 2 * size_t(c)), running) << "evaluation must not touch the statistics";
}

// ---- pointwise: ReLU, residual addition, dropout -----------------------------------------------------------

TEST_F(GpuLayer, ReluIsExact) {
  const int n = 2, c = 3, hh = 4, ww = 5;
  const size_t count = size_t(n) * c * hh * ww;
  const auto x = random_floats(count, 31), dy = random_floats(count, 32);
  GpuHarness g(n, true, 0);
  Tensor gx = g.tensor(n, c, hh, ww);
  auto& relu = g.plan->keep<gpu::Relu>(*g.plan, "relu", gx);
  Tensor gdy = g.tensor(n, c, hh, ww);
  Tensor gdx = relu.backward(*g.plan, gdy);
  g.set(gx, x);
  g.forward();
  g.set(gdy, dy);
  g.backward();
  const auto y = g.get(relu.y()), dx = g.get(gdx);
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(y[i], x[i] > 0.0f ? x[i] : 0.0f) << i;
    EXPECT_EQ(dx[i], x[i] > 0.0f ? dy[i] : 0.0f) << i;
  }
}

TEST_F(GpuLayer, ResidualAddWithReluAndGradientSumAreExact) {
  const int n = 2, c = 4, hh = 3, ww = 3;
  const size_t count = size_t(n) * c * hh * ww;
  const auto a = random_floats(count, 41), b = random_floats(count, 42), dy = random_floats(count, 43);
  const auto other = random_floats(count, 44);
  GpuHarness g(n, true, 0);
  Tensor ga = g.tensor(n, c, hh, ww), gb = g.tensor(n, c, hh, ww), gdy = g.tensor(n, c, hh, ww);
  Tensor gother = g.tensor(n, c, hh, ww);
  auto& add = g.plan->keep<gpu::ResidualAdd>(*g.plan, "add", ga, gb, true);
  Tensor ds = add.backward(*g.plan, gdy);
  gpu::accumulate_backward(*g.plan, "sum", gother, ds);
  g.set(ga, a);
  g.set(gb, b);
  g.forward();
  g.set(gdy, dy);
  g.set(gother, other);
  g.backward();
  const auto y = g.get(add.y()), dsv = g.get(ds), sum = g.get(gother);
  for (size_t i = 0; i < count; ++i) {
    const float s = a[i] + b[i];
    ASSERT_EQ(y[i], s > 0.0f ? s : 0.0f) << i;
    ASSERT_EQ(dsv[i], s > 0.0f ? dy[i] : 0.0f) << i;
    ASSERT_EQ(sum[i], other[i] + dsv[i]) << i;
  }
}

TEST_F(GpuLayer, DropoutDrawsTheCpuMaskFromTheSameStream) {
  const int n = 8, c = 16;
  const float p = 0.3f;
  const uint64_t seed = 7;
  const models::BatchPosition at{5, 16};
  const auto x = random_floats(size_t(n) * c, 51), dy = random_floats(size_t(n) * c, 52);

  Harness h(n, true, 0);
  dnnl::memory cx = h.tensor({n, c}, tag::nc);
  auto& cdrop = h.plan->keep<cpu::Dropout>(*h.plan, "drop", p, seed, &at, cx);
  h.set(cx, doubles(x));
  h.plan->run_forward();

  GpuHarness g(n, true, 0);
  Tensor gx = g.tensor(n, c, 1, 1);
  auto& gdrop = g.plan->keep<gpu::Dropout>(*g.plan, "drop", p, seed, &at, gx);
  Tensor gdy = g.tensor(n, c, 1, 1);
  Tensor gdx = gdrop.backward(*g.plan, gdy);
  g.set(gx, x);
  g.forward();
  g.set(gdy, dy);
  g.backward();
  ASSERT_EQ(cdrop.mask().size(), size_t(n) * c);
  EXPECT_EQ(std::memcmp(cdrop.mask().data(), gdrop.host_mask(), cdrop.mask().size()), 0);
  EXPECT_EQ(g.get(gdrop.y()), floats(h.get(cdrop.y())));
  const auto dx = g.get(gdx);
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_EQ(dx[i], cdrop.mask()[i] ? dy[i] * (1.0f / (1.0f - p)) : 0.0f);
}

// ---- pooling ----------------------------------------------------------------------------------------------

TEST_F(GpuLayer, MaxPoolMatchesTheCpuLayer) {
  const int n = 2, c = 4, hh = 9, ww = 8;
  const size_t count = size_t(n) * c * hh * ww;
  const auto x = random_floats(count, 61, 0.0, 1.0);  // ReLU outputs, as in the ResNets
  Harness h(n, true, 0);
  dnnl::memory cx = h.tensor({n, c, hh, ww}, tag::nchw);
  auto& cpool = h.plan->keep<cpu::MaxPool>(*h.plan, "pool", cpu::PoolShape{3, 2, 1}, cx);
  dnnl::memory cdy = h.plan->alloc(cpool.y().get_desc());
  dnnl::memory cdx = cpool.backward(*h.plan, cdy);
  h.set(cx, doubles(x));
  h.plan->run_forward();
  const auto y_cpu = floats(h.get(cpool.y()));
  const auto dy = random_floats(y_cpu.size(), 62);
  h.set(cdy, doubles(dy));
  h.plan->run_backward({});

  GpuHarness g(n, true, 0);
  Tensor gx = g.tensor(n, c, hh, ww);
  auto& gpool = gpu::Pooling::max(*g.plan, "pool", gpu::PoolShape{3, 2, 1}, gx);
  Tensor gdy = g.tensor(gpool.y().n, gpool.y().c, gpool.y().h, gpool.y().w);
  Tensor gdx = gpool.backward(*g.plan, gdy);
  g.set(gx, x);
  g.forward();
  ASSERT_EQ(gpool.y().count(), y_cpu.size());
  g.set(gdy, dy);
  g.backward();
  EXPECT_EQ(g.get(gpool.y()), y_cpu);
  EXPECT_LE(rel_err(g.get(gdx), floats(h.get(cdx))), 1e-6);
}

TEST_F(GpuLayer, GlobalAveragePoolMatchesTheCpuLayer) {
  const int n = 3, c = 5, hh = 7, ww = 7;
  const auto x = random_floats(size_t(n) * c * hh * ww, 71);
  const auto dy = random_floats(size_t(n) * c, 72);
  Harness h(n, true, 0);
  dnnl::memory cx = h.tensor({n, c, hh, ww}, tag::nchw);
  auto& cgap = h.plan->keep<cpu::GlobalAvgPool>(*h.plan, "gap", cx);
  dnnl::memory cdy = h.plan->alloc(cgap.y().get_desc());
  dnnl::memory cdx = cgap.backward(*h.plan, cdy);
  h.set(cx, doubles(x));
  h.plan->run_forward();
  h.set(cdy, doubles(dy));
  h.plan->run_backward({});

  GpuHarness g(n, true, 0);
  Tensor gx = g.tensor(n, c, hh, ww);
  auto& ggap = gpu::Pooling::global_average(*g.plan, "gap", gx);
  ASSERT_EQ(ggap.y().h, 1);
  ASSERT_EQ(ggap.y().w, 1);
  Tensor gdy = g.tensor(n, c, 1, 1);
  Tensor gdx = ggap.backward(*g.plan, gdy);
  g.set(gx, x);
  g.forward();
  g.set(gdy, dy);
  g.backward();
  EXPECT_LE(rel_err(g.get(ggap.y()), floats(h.get(cgap.y()))), 1e-6);
  EXPECT_LE(rel_err(g.get(gdx), floats(h.get(cdx))), 1e-6);
}

// ---- fully connected and the loss -------------------------------------------------------------------------

TEST_F(GpuLayer, LinearMatchesTheCpuLayerOnAFlattenedImage) {
  const int n = 5, c = 4, hh = 3, ww = 3, out = 7, in = c * hh * ww;
  const size_t wsize = size_t(out) * in;
  const auto x = random_floats(size_t(n) * in, 81), w = random_floats(wsize, 82), b = random_floats(size_t(out), 83);
  const auto dy = random_floats(size_t(n) * out, 84);

  Harness h(n, true, wsize + out);
  dnnl::memory cx = h.tensor({n, c, hh, ww}, tag::nchw);
  auto& cfc = h.plan->keep<cpu::Linear>(*h.plan, "fc", out, 0, wsize, cx, true);
  dnnl::memory cdy = h.plan->alloc(cfc.y().get_desc());
  dnnl::memory cdx = cfc.backward(*h.plan, cdy, true);
  copy_into(h.params, 0, doubles(w));
  copy_into(h.params, wsize, doubles(b));
  h.set(cx, doubles(x));
  h.plan->run_forward();
  h.set(cdy, doubles(dy));
  h.plan->run_backward({});

  GpuHarness g(n, true, wsize + out);
  Tensor gx = g.tensor(n, c, hh, ww);
  auto& gfc = g.plan->keep<gpu::Linear>(*g.plan, "fc", out, 0, wsize, gx, true);
  Tensor gdy = g.tensor(n, out, 1, 1);
  Tensor gdx = gfc.backward(*g.plan, gdy, true);
  g.set_floats(g.params, 0, w);
  g.set_floats(g.params, wsize, b);
  g.set(gx, x);
  g.forward();
  g.set(gdy, dy);
  g.backward();
  EXPECT_LE(rel_err(g.get(gfc.y()), floats(h.get(cfc.y()))), 1e-5);
  EXPECT_LE(rel_err(g.get(gdx), floats(h.get(cdx))), 1e-5);
  EXPECT_LE(rel_err(g.get_floats(g.grads, 0, wsize), floats(slice(h.grads, 0, wsize))), 1e-5) << "dw";
  EXPECT_LE(rel_err(g.get_floats(g.grads, wsize, size_t(out)), floats(slice(h.grads, wsize, size_t(out)))), 1e-5)
      << "db";
}

TEST_F(GpuLayer, SoftmaxCrossEntropyMatchesTheCpuLayerAndFindsABadLabel) {
  const int n = 6, k = 10;
  const float eps = 0.1f;
  const auto z = random_floats(size_t(n) * k, 91, -3.0, 3.0);
  std::vector<int32_t> labels = {0, 3, 9, 4, 4, 7};

  Harness h(n, true, 0);
  dnnl::memory cz = h.tensor({n, k}, tag::nc);
  auto& closs = h.plan->keep<cpu::SoftmaxCrossEntropy>(*h.plan, "loss", cz, eps);
  dnnl::memory cdz = closs.backward(*h.plan);
  h.set(cz, doubles(z));
  closs.set_labels(labels.data());
  h.plan->run_forward();
  h.plan->run_backward({});

  GpuHarness g(n, true, 0);
  Tensor gz = g.tensor(n, k, 1, 1);
  auto& gloss = g.plan->keep<gpu::SoftmaxCrossEntropy>(*g.plan, "loss", gz, eps);
  Tensor gdz = gloss.backward(*g.plan);
  g.set(gz, z);
  DTB_CUDA(cudaMemcpy(gloss.labels(), labels.data(), labels.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  g.forward();
  int bad = -1;
  ASSERT_TRUE(gloss.fetch(&bad));
  EXPECT_NEAR(gloss.loss(), closs.loss(), 1e-12 * std::fabs(closs.loss()));
  EXPECT_EQ(gloss.correct(), closs.correct());
  g.backward();
  EXPECT_LE(rel_err(g.get(gdz), floats(h.get(cdz))), 1e-6);

  labels[3] = k;
  DTB_CUDA(cudaMemcpy(gloss.labels(), labels.data(), labels.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  g.forward();
  EXPECT_FALSE(gloss.fetch(&bad));
  EXPECT_EQ(bad, 3);
}

}  // namespace
}  // namespace dtbench::test
