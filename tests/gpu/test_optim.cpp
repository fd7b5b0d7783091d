// The fused GPU optimizers against the CPU optimizers (optim/, themselves checked against PyTorch): the same
// table, initial weights and 50 steps of gradients and learning rates, then the weights, the trust ratios
// and the saved state compared. Also: a GPU state restored into a CPU optimizer continues the same run,
// a NaN gradient is refused with the CPU's message before anything changes, and clipping matches.
//
// Tolerance: |w_gpu - w_cpu| <= 1e-5 (1 + |w_cpu|) after 50 steps. The element updates are the same
// float formulas; they differ only where one compiler contracts a*b+c into a fused multiply-add and the
// other does not (half an ulp per operation), and in the order of the double sums behind the LARS/LAMB
// trust ratios (~1e-16 relative). Over 50 steps these stay below 1e-6 of the weights; a wrong formula,
// decay rule, bias correction or trust ratio moves them by far more than 1e-5. The trust ratios of the
// last step are compared to 1e-5 relative: they are norms of weights that differ by those ~1e-7.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/cuda/cuda_check.hpp"
#include "optim/gpu/lamb.hpp"
#include "optim/gpu/lars.hpp"
#include "optim/lamb.hpp"
#include "optim/lars.hpp"
#include "optim/optimizer.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace dtbench::test {
namespace {

using optim::TensorKind;

// Every kind, a tensor spanning several chunks (kChunkElements = 16384), one smaller than a block, and one
// of zeros (the trust-ratio fallback).
optim::ParamTable make_table() {
  std::vector<optim::TensorInfo> t;
  size_t offset = 0;
  auto add = [&](const std::string& name, size_t size, TensorKind kind) {
    t.push_back({name, offset, size, kind});
    offset += size;
  };
  add("conv1.weight", 40000, TensorKind::conv_weight);
  add("bn1.weight", 64, TensorKind::bn);
  add("bn1.bias", 64, TensorKind::bn);
  add("fc.weight", 6400, TensorKind::fc_weight);
  add("fc.bias", 10, TensorKind::bias);
  add("zero.weight", 7, TensorKind::conv_weight);
  return optim::ParamTable(std::move(t));
}

std::vector<float> normal_vector(size_t n, uint64_t seed, double scale) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = float(scale * rng.normal());
  return v;
}

struct DeviceVec {
  gpu::DeviceBuffer buf;
  size_t n;
  explicit DeviceVec(const std::vector<float>& v) : buf(v.size() * sizeof(float)), n(v.size()) { set(v); }
  void set(const std::vector<float>& v) {
    DTB_CUDA(cudaMemcpy(buf.get(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  std::vector<float> get() const {
    std::vector<float> v(n);
    DTB_CUDA(cudaDeviceSynchronize());
    DTB_CUDA(cudaMemcpy(v.data(), buf.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
  }
  std::span<float> span() { return {buf.as<float>(), n}; }
};

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  size_t bad = 0;
  double worst = 0.0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double d = std::fabs(double(gpu[i]) - double(cpu[i])) / (1.0 + std::fabs(double(cpu[i])));
    worst = std::max(worst, d);
    bad += d > 1e-5;
  }
  EXPECT_EQ(bad, 0u) << what << ": worst relative difference " << worst;
}


class GpuOptimizerVsCpu : public ::testing::TestWithParam<Json> {
 protected:
  void SetUp() override { DTB_REQUIRE_DEVICE(); }
};

TEST_P(GpuOptimizerVsCpu, FiftyStepsMatchAndTheStateMovesToTheCpu) {
  const Json section = GetParam();
  const optim::ParamTable table = make_table();
  const size_t n = table.buffer_size();
  std::vector<float> w0 = normal_vector(n, 1, 0.1);
  for (size_t i = table[5].offset; i < table[5].offset + table[5].size; ++i) w0[i] = 0.0f;

  auto cpu = optim::make_optimizer(section, table);
  auto gpu_opt = gpu::make_gpu_optimizer(section, table, nullptr);
  std::vector<float> wc = w0;
  DeviceVec wg(w0), g(std::vector<float>(n, 0.0f));
  for (int step = 0; step < 50; ++step) {
    const std::vector<float> grad = normal_vector(n, 100 + uint64_t(step), 0.01);
    const double lr = 0.05 * (1.0 - step / 100.0);
    cpu->step(wc, grad, lr);
    g.set(grad);
    gpu_opt->step(wg.span(), g.span(), lr);
  }
  const std::string name = section["name"].get<std::string>();
  expect_close(wg.get(), wc, name + " weights");
  if (name == "lars") {
    const auto tg = dynamic_cast<gpu::GpuLars&>(*gpu_opt).last_trust();
    const auto& tc = dynamic_cast<optim::Lars&>(*cpu).last_trust();
    for (size_t k = 0; k < tc.size(); ++k) EXPECT_NEAR(tg[k], tc[k], 1e-5 * std::fabs(tc[k])) << table[k].name;
  }
  if (name == "lamb") {
    const auto tg = dynamic_cast<gpu::GpuLamb&>(*gpu_opt).last_trust();
    const auto& tc = dynamic_cast<optim::Lamb&>(*cpu).last_trust();
    for (size_t k = 0; k < tc.size(); ++k) EXPECT_NEAR(tg[k], tc[k], 1e-5 * std::fabs(tc[k])) << table[k].name;
  }

  // The GPU state in the CPU format: restored into a fresh CPU optimizer on the GPU's weights, one more
  // step there equals one more step on the GPU.
  const std::vector<uint8_t> state = gpu_opt->save_state();
  auto cpu2 = optim::make_optimizer(section, table);
  ASSERT_NO_THROW(cpu2->load_state(state));
  EXPECT_EQ(cpu2->steps_taken(), 50);
  std::vector<float> w_cpu2 = wg.get();
  const std::vector<float> grad = normal_vector(n, 999, 0.01);
  cpu2->step(w_cpu2, grad, 0.01);
  g.set(grad);
  gpu_opt->step(wg.span(), g.span(), 0.01);
  expect_close(wg.get(), w_cpu2, name + " after restoring the GPU state on the CPU");

  // And back: the CPU state restores into a fresh GPU optimizer exactly (bitwise round trip).
  auto gpu2 = gpu::make_gpu_optimizer(section, table, nullptr);
  gpu2->load_state(cpu2->save_state());
  EXPECT_EQ(gpu2->save_state(), cpu2->save_state());
}

INSTANTIATE_TEST_SUITE_P(
    Configs, GpuOptimizerVsCpu,
    ::testing::Values(Json{{"name", "sgd"}, {"momentum", 0.0}, {"weight_decay", 1e-3}},
                      Json{{"name", "sgd"}, {"momentum", 0.9}, {"weight_decay", 5e-4}},
                      Json{{"name", "sgd"}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 5e-4},
                           {"no_decay_bn_bias", false}},
                      Json{{"name", "sgd"}, {"momentum", 0.9}, {"dampening", 0.1}, {"decoupled_weight_decay", true},
                           {"weight_decay", 1e-3}, {"clip_grad_norm", 0.5}},
                      Json{{"name", "adam"}, {"weight_decay", 1e-4}},
                      Json{{"name", "adamw"}, {"clip_grad_value", 0.015}},
                      Json{{"name", "lars"}, {"momentum", 0.9}, {"weight_decay", 5e-5}, {"eta", 0.001}},
                      Json{{"name", "lars"}, {"trust_exclude_bn_bias", false}, {"clip_grad_norm", 0.3}},
                      Json{{"name", "lamb"}, {"weight_decay", 0.01}},
                      Json{{"name", "lamb"}, {"bias_correction", false}, {"trust_clip", 2.0}}),
    [](const ::testing::TestParamInfo<Json>& i) { return "config" + std::to_string(i.index); });

TEST(GpuOptimizer, RefusesANonFiniteGradientLikeTheCpuAndChangesNothing) {
  DTB_REQUIRE_DEVICE();
  const optim::ParamTable table = make_table();
  const size_t n = table.buffer_size();
  const Json section{{"name", "adam"}};
  auto cpu = optim::make_optimizer(section, table);
  auto gpu_opt = gpu::make_gpu_optimizer(section, table, nullptr);
  const std::vector<float> w0 = normal_vector(n, 3, 0.1);
  std::vector<float> grad = normal_vector(n, 4, 0.01);
  grad[table[3].offset + 17] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> wc = w0;
  DeviceVec wg(w0), g(grad);
  std::string cpu_msg, gpu_msg;
  try {
    cpu->step(wc, grad, 0.1);
  } catch (const optim::NonFiniteGradient& e) {
    cpu_msg = e.what();
  }
  try {
    gpu_opt->step(wg.span(), g.span(), 0.1);
  } catch (const optim::NonFiniteGradient& e) {
    gpu_msg = e.what();
    EXPECT_EQ(e.tensor(), "fc.weight");
    EXPECT_EQ(e.index(), 17u);
    EXPECT_EQ(e.step(), 1);
  }
  EXPECT_FALSE(gpu_msg.empty());
  EXPECT_EQ(gpu_msg, cpu_msg);
  EXPECT_EQ(wg.get(), w0);
  EXPECT_EQ(gpu_opt->steps_taken(), 0);
}

TEST(GpuOptimizer, LoadStateRejectsAnotherOptimizerAndLeavesTheStateAlone) {
  DTB_REQUIRE_DEVICE();
  const optim::ParamTable table = make_table();
  auto sgd = gpu::make_gpu_optimizer(Json{{"name", "sgd"}, {"momentum", 0.9}}, table, nullptr);
  auto adam = gpu::make_gpu_optimizer(Json{{"name", "adam"}}, table, nullptr);
  const auto before = sgd->save_state();
  EXPECT_THROW(sgd->load_state(adam->save_state()), BadInput);
  std::vector<uint8_t> truncated = before;
  truncated.resize(truncated.size() - 5);
  EXPECT_THROW(sgd->load_state(truncated), BadInput);
  EXPECT_EQ(sgd->save_state(), before);
}

}  // namespace
}  // namespace dtbench::test
