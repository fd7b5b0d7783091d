// The backend-neutral model description: describe() + initialise() reproduce, bit for bit, the initial weights
// and buffers the oneDNN model held before the description moved out of it (hashes recorded at faf6ea0 from
// models::Model, seed 1234), with the same sizes and MACs. This test links no backend.
#include <gtest/gtest.h>

#include <cstdio>
#include <span>
#include <string>
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

TEST(ModelDescription, DescribeValidatesTheSpec) {
  models::ModelSpec s;
  s.arch = "resnet7";
  EXPECT_THROW(models::describe(s), BadInput);
}

}  // namespace
}  // namespace dtbench::test
