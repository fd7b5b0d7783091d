// The GPU models against the CPU models, and short GPU training runs.
//
// - The parameter table and the initial weights are the CPU model's (names, offsets, shapes; weights and
//   running statistics bit for bit), so weights copy 1:1 between the backends.
// - One training forward and backward in fp32 on the same weights and batch, for ResNet-8 (CIFAR stem),
//   ResNet-18 (ImageNet stem with max pooling), ResNet-50 (bottlenecks, zero_init_residual), the MLP and the Simple
//   CNN (convolutions with biases, max pooling, no batch norm), on
//   cases the CPU model shows to be well conditioned (fp32_cases.hpp, checked on every machine by
//   tests/workloads/test_gpu_cases_conditioning.cpp):
//     loss 1e-5 relative; logits 1e-4 relative to the largest logit; running statistics 1e-4; each
//     gradient tensor 2e-3 relative to its largest element (1e-5 for the MLP, 1e-4 for the Simple CNN).
//   Why: every layer agrees with its CPU twin to ~1e-6 (test_layers.cpp); through 8-50 layers with batch
//   norm, whose backward subtracts means of products, the differences in summation order grow by one to
//   three orders of magnitude in the smallest tensors; a wrong layer, offset or announcement gives O(1).
// - bf16 and fp16 against the CPU fp32 model on the same weights: loss within 3% and every gradient
//   tensor's direction within cosine 0.95 (8 and 11 significant bits per operand, fp32 accumulation:
//   errors of a few percent in the smallest tensors; a wrong layer or a missing unscale gives a cosine
//   near 0, and a missing unscale a buffer norm off by the loss scale, checked to 10%).
// - on_ready announces every tensor exactly once; a repeated run gives the same bits (deterministic
//   cuDNN algorithms, fixed-order reductions); the staged device batch gives the same loss as the host one.
// - a short run with the fused SGD on a learnable synthetic batch: the loss falls below half of its start
//   in fp32, bf16 and fp16 (with dynamic loss scaling), and the first steps follow the CPU run.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "core/cuda/event_timer.hpp"
#include "core/error.hpp"
#include "optim/gpu/fused_optimizer.hpp"
#include "optim/optimizer.hpp"
#include "tests/gpu/fp32_cases.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "workloads/gpu/batch_stager.hpp"
#include "workloads/gpu/gpu_model.hpp"
#include "workloads/gpu/gpu_train_model.hpp"
#include "workloads/cpu/model.hpp"
#include "workloads/models/optimizer_table.hpp"

namespace dtbench::test {
namespace {

using models::ModelSpec;

std::vector<float> host(std::span<const float> s) { return {s.begin(), s.end()}; }

class GpuModelTest : public ::testing::Test {
 protected:
  void SetUp() override { DTB_REQUIRE_DEVICE(); }
};

TEST_F(GpuModelTest, TableAndInitialWeightsAreTheCpuModels) {
  for (const char* arch : {"resnet8", "resnet18", "mlp", "simple_cnn"}) {
    const ModelSpec s = spec_of(arch, 3, 32);
    cpu::Model cpu(s, 42);
    gpu::GpuModel g(s, 42);
    ASSERT_EQ(g.param_table().size(), cpu.param_table().size()) << arch;
    for (size_t i = 0; i < cpu.param_table().size(); ++i) {
      EXPECT_EQ(g.param_table()[i].name, cpu.param_table()[i].name);
      EXPECT_EQ(g.param_table()[i].offset, cpu.param_table()[i].offset);
      EXPECT_EQ(g.param_table()[i].shape, cpu.param_table()[i].shape);
    }
    std::vector<float> p(g.params().size()), b(g.buffers().size());
    g.download_params(p);
    g.download_buffers(b);
    EXPECT_EQ(p, host(cpu.params())) << arch;
    EXPECT_EQ(b, host(cpu.buffers())) << arch;
    EXPECT_EQ(g.flops_per_sample_train(), cpu.flops_per_sample_train());
  }
}

void PrintTo(const Fp32Case& c, std::ostream* os) { *os << c.arch; }

class GpuModelFp32 : public ::testing::TestWithParam<Fp32Case> {
 protected:
  void SetUp() override { DTB_REQUIRE_DEVICE(); }
};

TEST_P(GpuModelFp32, ForwardAndBackwardMatchTheCpuModel) {
  const Fp32Case& fc = GetParam();
  const ModelSpec s = spec_of(fc);
  const Batch b = make_batch(s, fc.n, fc.batch_seed);
  cpu::Model cpu(s, 7);
  gpu::GpuModel g(s, 7);
  const double lc = cpu.forward(b.x.data(), b.labels.data(), fc.n, true);
  cpu.backward();
  const double lg = g.forward(b.x.data(), b.labels.data(), fc.n, true);
  g.backward();
  EXPECT_NEAR(lg, lc, 1e-5 * std::fabs(lc)) << fc.arch;
  EXPECT_EQ(g.correct(), cpu.correct());
  const std::vector<float> zc(cpu.logits(), cpu.logits() + size_t(fc.n) * 10);
  const std::vector<float> zg(g.logits(), g.logits() + size_t(fc.n) * 10);
  EXPECT_LE(rel_err(zg, zc), 1e-4);

  std::vector<float> grads(g.grads().size()), bufs(g.buffers().size());
  g.download_grads(grads);
  g.download_buffers(bufs);
  for (const auto& t : cpu.param_table()) {
    const std::vector<float> a(grads.begin() + long(t.offset), grads.begin() + long(t.offset + t.size));
    const std::vector<float> r(cpu.grads().begin() + long(t.offset), cpu.grads().begin() + long(t.offset + t.size));
    EXPECT_LE(rel_err(a, r), fc.grad_tol) << fc.arch << " " << t.name;
  }
  if (!bufs.empty()) {
    EXPECT_LE(rel_err(bufs, host(cpu.buffers())), 1e-4) << "running statistics";
  }

  // Evaluation mode uses the running statistics on both.
  const double ec = cpu.forward(b.x.data(), b.labels.data(), fc.n, false);
  const double eg = g.forward(b.x.data(), b.labels.data(), fc.n, false);
  EXPECT_NEAR(eg, ec, 1e-4 * std::fabs(ec));
}

INSTANTIATE_TEST_SUITE_P(Archs, GpuModelFp32,
                         ::testing::ValuesIn(fp32_cases()),
                         [](const ::testing::TestParamInfo<Fp32Case>& i) { return std::string(i.param.arch); });

class GpuModelLowPrecision : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { DTB_REQUIRE_DEVICE(); }
};

TEST_P(GpuModelLowPrecision, FollowsTheFp32CpuModel) {
  const ModelSpec s = spec_of("resnet8", 1, 28, GetParam());
  ModelSpec s32 = s;
  s32.precision = "fp32";
  const Batch b = make_batch(s, 16, 5);
  cpu::Model cpu(s32, 9);
  gpu::GpuModel g(s, 9);
  if (s.precision == "fp16") g.set_loss_scale(1024.0f);
  const double lc = cpu.forward(b.x.data(), b.labels.data(), 16, true);
  cpu.backward();
  const double lg = g.forward(b.x.data(), b.labels.data(), 16, true);
  g.backward();
  EXPECT_NEAR(lg, lc, 0.03 * lc);
  ASSERT_TRUE(g.grads_finite());
  std::vector<float> grads(g.grads().size());
  g.download_grads(grads);
  for (const auto& t : cpu.param_table()) {
    const std::vector<float> a(grads.begin() + long(t.offset), grads.begin() + long(t.offset + t.size));
    const std::vector<float> r(cpu.grads().begin() + long(t.offset), cpu.grads().begin() + long(t.offset + t.size));
    EXPECT_GE(cosine(a, r), 0.95) << s.precision << " " << t.name;
  }
  // The gradients are unscaled: the whole buffer's norm is the fp32 one to a few percent.
  const std::vector<float> ref = host(cpu.grads());
  const double ratio = std::sqrt(g.grads_norm_sq()) /
                       std::sqrt(std::inner_product(ref.begin(), ref.end(), ref.begin(), 0.0));
  EXPECT_NEAR(ratio, 1.0, 0.1) << s.precision;
}

INSTANTIATE_TEST_SUITE_P(Precisions, GpuModelLowPrecision, ::testing::Values("bf16", "fp16"));

TEST_F(GpuModelTest, OnReadyAnnouncesEveryTensorOnceFromTheLastToTheFirst) {
  for (const char* arch : {"resnet8", "simple_cnn"}) {
    const ModelSpec s = spec_of(arch, 1, 28);
    gpu::GpuModel g(s, 1);
    const Batch b = make_batch(s, 4, 1);
    g.forward(b.x.data(), b.labels.data(), 4, true);
    std::vector<std::pair<size_t, size_t>> seen;
    g.backward([&](size_t off, size_t n) { seen.emplace_back(off, n); });
    std::set<std::pair<size_t, size_t>> expected;
    for (const auto& t : g.param_table()) expected.insert({t.offset, t.size});
    const std::set<std::pair<size_t, size_t>> announced(seen.begin(), seen.end());
    EXPECT_EQ(announced, expected) << arch;
    EXPECT_EQ(seen.size(), expected.size()) << arch;
    EXPECT_EQ(seen.front().first, g.param_table()[g.param_table().size() - 1].offset) << arch << ": the last bias first";
    EXPECT_EQ(seen.back().first, 0u) << arch << ": the first convolution last";
  }
}

TEST_F(GpuModelTest, RepeatedRunsGiveTheSameBits) {
  const ModelSpec s = spec_of("resnet8", 1, 28);
  const Batch b = make_batch(s, 8, 2);
  std::vector<std::vector<float>> results;
  for (int run = 0; run < 2; ++run) {
    gpu::GpuModel g(s, 3);
    auto opt = gpu::make_gpu_optimizer(Json{{"name", "sgd"}, {"momentum", 0.9}},
                                       models::optimizer_table(g.param_table()), g.stream());
    for (int step = 0; step < 3; ++step) {
      g.forward(b.x.data(), b.labels.data(), 8, true);
      g.backward();
      opt->step(g.params(), g.grads(), 0.05);
    }
    results.emplace_back(g.params().size());
    g.download_params(results.back());
  }
  EXPECT_EQ(results[0], results[1]);
}

TEST_F(GpuModelTest, StagedDeviceBatchGivesTheHostLossAndBadLabelsAreBadInput) {
  const ModelSpec s = spec_of("resnet8", 1, 28);
  const Batch b = make_batch(s, 8, 4);
  gpu::GpuModel g(s, 3);
  gpu::BatchStager stager(8, 28 * 28, g.stream());
  std::copy(b.x.begin(), b.x.end(), stager.host_images());
  std::copy(b.labels.begin(), b.labels.end(), stager.host_labels());
  stager.upload(8);
  const gpu::DeviceBatch d = stager.take();
  gpu::EventTimer timer;
  timer.start(g.stream());
  const double ld = g.forward_device(d.images, d.labels, d.n, false);
  timer.stop(g.stream());
  stager.release();
  EXPECT_GT(timer.seconds(), 0.0);
  EXPECT_EQ(g.forward(b.x.data(), b.labels.data(), 8, false), ld);

  std::vector<int32_t> bad = b.labels;
  bad[2] = 10;
  EXPECT_THROW(g.forward(b.x.data(), bad.data(), 8, false), BadInput);
  std::copy(bad.begin(), bad.end(), stager.host_labels());
  std::copy(b.x.begin(), b.x.end(), stager.host_images());
  stager.upload(8);
  const gpu::DeviceBatch d2 = stager.take();
  try {
    g.forward_device(d2.images, d2.labels, 8, false);
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("label 10 of image 2 is outside [0, 10)"), std::string::npos) << e.what();
  }
}

TEST_F(GpuModelTest, AdapterHostMirrorsAndDeviceScale) {
  const ModelSpec s = spec_of("mlp", 1, 28);
  cpu::Model cpu(s, 4);
  gpu::GpuTrainModel m(s, 4, 0, Json{{"name", "sgd"}});
  EXPECT_FALSE(m.scaler().options().enabled) << "fp32 needs no loss scaling";
  auto p = m.host_params();
  EXPECT_EQ(std::vector<float>(p.begin(), p.end()), host(cpu.params()));
  std::fill(p.begin(), p.end(), 3.0f);
  m.push_host_params();
  m.scale(m.params(), 0.5f);
  const auto q = m.host_params();
  EXPECT_TRUE(std::all_of(q.begin(), q.end(), [](float v) { return v == 1.5f; }));
}

class GpuTraining : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { DTB_REQUIRE_DEVICE(); }
};

TEST_P(GpuTraining, LossFallsOnALearnableBatch) {
  const ModelSpec s = spec_of("resnet8", 1, 28, GetParam());
  const Batch b = make_batch(s, 32, 6);
  gpu::GpuTrainModel m(s, 11, 0, Json{{"name", "sgd"}, {"momentum", 0.9}});
  std::vector<double> losses;
  int skipped = 0;
  for (int step = 0; step < 40; ++step) {
    losses.push_back(m.forward(b.x.data(), b.labels.data(), 32, true));
    m.backward({});
    if (m.step_allowed()) m.optimizer_step(0.05);
    else ++skipped;
  }
  std::printf("[%s] loss %.4f -> %.4f, %d skipped steps\n", s.precision.c_str(), losses.front(), losses.back(), skipped);
  EXPECT_LT(losses.back(), 0.5 * losses.front());
  EXPECT_LE(skipped, 15);  // fp16: a few overflow steps while the scale settles from 2^16
}

INSTANTIATE_TEST_SUITE_P(Precisions, GpuTraining, ::testing::Values("fp32", "bf16", "fp16"));

TEST_F(GpuModelTest, FirstStepsFollowTheCpuRun) {
  // Early in training both runs see nearly the same weights, so their losses agree closely; later the
  // small differences in summation order may grow (training is chaotic), so only three steps are compared.
  const ModelSpec s = spec_of("resnet8", 1, 28);
  const Batch b = make_batch(s, 16, 8);
  cpu::Model cpu(s, 12);
  gpu::GpuModel g(s, 12);
  const Json section{{"name", "sgd"}, {"momentum", 0.9}, {"weight_decay", 5e-4}};
  auto copt = optim::make_optimizer(section, models::optimizer_table(cpu.param_table()));
  auto gopt = gpu::make_gpu_optimizer(section, models::optimizer_table(g.param_table()), g.stream());
  for (int step = 0; step < 3; ++step) {
    const double lc = cpu.forward(b.x.data(), b.labels.data(), 16, true);
    cpu.backward();
    copt->step(cpu.params(), cpu.grads(), 0.05);
    const double lg = g.forward(b.x.data(), b.labels.data(), 16, true);
    g.backward();
    gopt->step(g.params(), g.grads(), 0.05);
    EXPECT_NEAR(lg, lc, 1e-4 * lc) << "step " << step;
  }
}

}  // namespace
}  // namespace dtbench::test
