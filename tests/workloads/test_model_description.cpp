// The backend-neutral model description: describe() + initialise() reproduce, bit for bit, the initial weights
// and buffers the oneDNN model held before the description moved out of it (hashes recorded at faf6ea0 from
// models::Model, seed 1234), with the same sizes and MACs. This test links no backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "workloads/models/model_description.hpp"

namespace dtbench::test {
namespace {

// FNV-1a over the bytes of the floats.
uint64_t fnv1a(std::span<const float> v) {
  uint64_t h = 1469598103934665603ULL;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size_bytes(); ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

struct Recorded {
  const char* arch;
  bool zero_init_residual;
  uint64_t params_hash, buffers_hash;
  size_t params, buffers;
  double macs;
};

// CIFAR ResNets on 3x32x32 with 10 classes, ImageNet ResNets on 3x224x224 with 1000, the MLP on 1x28x28 with
// 64 hidden units and 10 classes.
const Recorded kRecorded[] = {
    {"resnet8", false, 0x1f034590d7a670e2ULL, 0x18ea893514885303ULL, 78042, 672, 12501632.0},
    {"resnet8", true, 0x9b49c4133a16de62ULL, 0x18ea893514885303ULL, 78042, 672, 12501632.0},
    {"resnet20", false, 0x391f45478b5271afULL, 0x6169e19d9329ad03ULL, 272474, 1568, 40813184.0},
    {"resnet20", true, 0x6ee7ad7cac31ed2fULL, 0x6169e19d9329ad03ULL, 272474, 1568, 40813184.0},
    {"resnet32", false, 0x4dc897ad38fb3fc1ULL, 0xcf5ee33a597b0703ULL, 466906, 2464, 69124736.0},
    {"resnet32", true, 0x00b8fc25932c0141ULL, 0xcf5ee33a597b0703ULL, 466906, 2464, 69124736.0},
    {"resnet56", false, 0x610f21d5e220942eULL, 0x7139e74abd2dbb03ULL, 855770, 4256, 125747840.0},
    {"resnet56", true, 0xa1aecd6669afa4aeULL, 0x7139e74abd2dbb03ULL, 855770, 4256, 125747840.0},
    {"resnet18", false, 0xc44ac681c5f5ce96ULL, 0xe61d857b4c703583ULL, 11689512, 9600, 1814073344.0},
    {"resnet18", true, 0xd87a2485ea5cf696ULL, 0xe61d857b4c703583ULL, 11689512, 9600, 1814073344.0},
    {"resnet50", false, 0xf5130052333ebd62ULL, 0x85b44d106aa26d83ULL, 25557032, 53120, 4089184256.0},
    {"resnet50", true, 0xbf1472d89222e562ULL, 0x85b44d106aa26d83ULL, 25557032, 53120, 4089184256.0},
    {"mlp", false, 0xb64aff884b8d30b4ULL, 0x14650fb0739d0383ULL, 50890, 0, 50816.0},
};

models::ModelSpec spec_of(const Recorded& r) {
  const std::string arch = r.arch;
  const bool imagenet = arch == "resnet18" || arch == "resnet50";
  models::ModelSpec s;
  s.arch = arch;
  s.in_c = arch == "mlp" ? 1 : 3;
  s.in_h = s.in_w = imagenet ? 224 : (arch == "mlp" ? 28 : 32);
  s.classes = imagenet ? 1000 : 10;
  s.hidden = arch == "mlp" ? 64 : 0;
  s.zero_init_residual = r.zero_init_residual;
  return s;
}

TEST(ModelDescription, InitialWeightsAreBitwiseThoseRecordedFromTheOneDnnModel) {
  for (const Recorded& r : kRecorded) {
    SCOPED_TRACE(std::string(r.arch) + (r.zero_init_residual ? " zero_init_residual" : ""));
    const models::ModelSpec spec = spec_of(r);
    const models::ModelDescription d = models::describe(spec);
    ASSERT_EQ(d.param_count(), r.params);
    ASSERT_EQ(d.buffer_count(), r.buffers);
    EXPECT_EQ(d.macs_per_sample, r.macs);
    EXPECT_EQ(d.flops_per_sample_train(), 6 * r.macs);
    std::vector<float> params(d.param_count()), buffers(d.buffer_count());
    models::initialise(spec, d, 1234, params, buffers);
    EXPECT_EQ(fnv1a(params), r.params_hash);
    EXPECT_EQ(fnv1a(buffers), r.buffers_hash);
  }
}

TEST(ModelDescription, TablesAreContiguousAndBuffersAreMeanThenVariance) {
  models::ModelSpec s;
  s.arch = "resnet20";
  s.in_c = 3, s.in_h = s.in_w = 32;
  const models::ModelDescription d = models::describe(s);
  size_t offset = 0;
  for (const auto& p : d.params) {
    EXPECT_EQ(p.offset, offset) << p.name;
    offset += p.size;
  }
  ASSERT_EQ(d.buffers.size() % 2, 0u);
  for (size_t i = 0; i < d.buffers.size(); i += 2) {
    EXPECT_TRUE(d.buffers[i].name.ends_with(".running_mean")) << d.buffers[i].name;
    EXPECT_TRUE(d.buffers[i + 1].name.ends_with(".running_var")) << d.buffers[i + 1].name;
    EXPECT_EQ(d.buffers[i + 1].offset, d.buffers[i].offset + d.buffers[i].size);
  }
}

// Shallue et al.'s Simple CNN at its base widths on 1x28x28, 10 classes. Counted by hand: conv1 1x32x5x5 + 32,
// conv2 32x64x5x5 + 64, fc1 (64 x 7 x 7 = 3136) x 1024 + 1024, fc2 1024 x 10 + 10; MACs conv1 28 x 28 x 800,
// conv2 14 x 14 x 51200, fc1 3136 x 1024, fc2 10240.
TEST(ModelDescription, SimpleCnnTableMacsAndPyTorchDefaultInitialisation) {
  models::ModelSpec s;
  s.arch = "simple_cnn";
  s.conv_filters = {32, 64};
  s.hidden = 1024;
  const models::ModelDescription d = models::describe(s);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"conv1.weight", {32, 1, 5, 5}}, {"conv1.bias", {32}}, {"conv2.weight", {64, 32, 5, 5}}, {"conv2.bias", {64}},
      {"fc1.weight", {1024, 3136}},    {"fc1.bias", {1024}}, {"fc2.weight", {10, 1024}},       {"fc2.bias", {10}}};
  ASSERT_EQ(d.params.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(d.params[i].name, expected[i].first);
    EXPECT_EQ(d.params[i].shape, expected[i].second) << expected[i].first;
  }
  EXPECT_EQ(d.param_count(), 832u + 51264u + 3212288u + 10250u);
  EXPECT_EQ(d.buffer_count(), 0u);
  EXPECT_EQ(d.macs_per_sample, 627200.0 + 10035200.0 + 3211264.0 + 10240.0);

  // PyTorch's default for nn.Conv2d and nn.Linear, weights and biases: U(-b, b) with b = 1/sqrt(fan_in), so every
  // value lies within b and the variance is b^2/3 (He normal, the ResNets' rule, would give conv2.weight a
  // variance of 2/1600 = 3 b^2 and values beyond b). The mean of n squares has a relative standard error of
  // 0.89/sqrt(n): checked to 5% on the tensors of at least 10000 values (over 5.6 standard errors).
  std::vector<float> params(d.param_count());
  models::initialise(s, d, 7, params, {});
  const int64_t fan_in[] = {25, 25, 800, 800, 3136, 3136, 1024, 1024};
  for (size_t i = 0; i < d.params.size(); ++i) {
    const models::ParamInfo& t = d.params[i];
    const double b = 1.0 / std::sqrt(double(fan_in[i]));
    double sum_sq = 0.0, largest = 0.0;
    for (size_t k = t.offset; k < t.offset + t.size; ++k) {
      sum_sq += double(params[k]) * params[k];
      largest = std::max(largest, std::abs(double(params[k])));
    }
    EXPECT_LE(largest, b) << t.name;
    if (t.size >= 10000) {
      EXPECT_NEAR(sum_sq / double(t.size), b * b / 3, 0.05 * b * b / 3) << t.name;
    }
  }
}

TEST(ModelDescription, DescribeValidatesTheSpec) {
  models::ModelSpec s;
  s.arch = "resnet7";
  EXPECT_THROW(models::describe(s), BadInput);
}

}  // namespace
}  // namespace dtbench::test
