// Gradient checkpointing (workloads/models/checkpointing.hpp, workloads/cpu/plan.hpp).
//
// The reference is the same network without checkpointing. A segment's recomputation runs the very
// primitives of the forward pass on the very inputs (the checkpoint is a byte copy), so everything must agree
// bitwise, with no tolerance: the loss, the logits, every gradient element (also at the moment it is
// announced), and the batch-norm running statistics, which would differ if a recomputation updated them a
// second time. Two training steps with an SGD update between them check that nothing of a step leaks into the
// next. The memory the plan holds must fall as segments are added.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "config/rules.hpp"
#include "config/run_config.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "tests/workloads/needs_bf16.hpp"
#include "workloads/cpu/model.hpp"
#include "workloads/models/checkpointing.hpp"
#include "workloads/models/resnet_topology.hpp"

namespace dtbench::test {
namespace {

using cpu::Model;
using models::ModelSpec;

ModelSpec spec_of(const std::string& arch, int c, int h) {
  ModelSpec s;
  s.arch = arch;
  s.in_c = c, s.in_h = h, s.in_w = h, s.classes = 10;
  if (arch == "simple_cnn") s.hidden = 32, s.conv_filters = {8, 16};
  if (arch == "mlp") s.hidden = 32;
  return s;
}

// What a training step leaves: loss, logits, gradients (also as announced), running statistics.
struct StepResult {
  double loss = 0.0;
  std::vector<float> logits, grads, announced, buffers;
};

// Two training steps on fixed random batches with a plain SGD update (lr 0.05) in between.
std::vector<StepResult> two_steps(const ModelSpec& s, int batch) {
  Model m(s, 7);
  Rng rng(3);
  std::vector<StepResult> out;
  for (int step = 0; step < 2; ++step) {
    std::vector<float> x(size_t(batch) * size_t(s.in_c * s.in_h * s.in_w));
    for (float& v : x) v = float(rng.normal());
    std::vector<int32_t> labels(static_cast<size_t>(batch));
    for (int32_t& l : labels) l = int32_t(rng.below(10));
    StepResult r;
    m.set_batch_position({static_cast<uint64_t>(step), 0});
    r.loss = m.forward(x.data(), labels.data(), batch, true);
    std::span<float> g = m.grads();
    r.announced.assign(g.size(), 0.0f);
    m.backward([&](size_t offset, size_t size) {
      std::copy(g.begin() + long(offset), g.begin() + long(offset + size), r.announced.begin() + long(offset));
    });
    r.logits.assign(m.logits(), m.logits() + size_t(batch) * 10);
    r.grads.assign(g.begin(), g.end());
    r.buffers.assign(m.buffers().begin(), m.buffers().end());
    for (size_t i = 0; i < g.size(); ++i) m.params()[i] -= 0.05f * g[i];
    out.push_back(std::move(r));
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // An empty vector's data() may be null, which memcmp must not get (the Simple CNN has no running statistics).
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void expect_same_as_without(ModelSpec s, int batch, const std::vector<int>& segment_counts) {
  s.checkpoint_segments = 0;
  const std::vector<StepResult> want = two_steps(s, batch);
  for (int k : segment_counts) {
    s.checkpoint_segments = k;
    const std::vector<StepResult> got = two_steps(s, batch);
    for (size_t step = 0; step < want.size(); ++step) {
      const std::string what = s.arch + " (" + s.precision + ", ghost batch " + std::to_string(s.ghost_batch) +
                               ") with " + std::to_string(k) + " segments, step " + std::to_string(step + 1);
      EXPECT_EQ(std::memcmp(&got[step].loss, &want[step].loss, sizeof(double)), 0) << what << ": loss";
      EXPECT_TRUE(same_bits(got[step].logits, want[step].logits)) << what << ": logits";
      EXPECT_TRUE(same_bits(got[step].grads, want[step].grads)) << what << ": gradients";
      EXPECT_TRUE(same_bits(got[step].announced, want[step].grads)) << what << ": gradients as announced";
      EXPECT_TRUE(same_bits(got[step].buffers, want[step].buffers)) << what << ": running statistics";
    }
  }
}

// The config layer's early check of the image size (rules.cpp, /model/arch) and the models layer's own
// (model_spec.cpp validate) refuse the same sizes, for every arch.
TEST(Checkpointing, ConfigAndModelsAgreeOnTheInputSize) {
  for (const std::string arch : {"resnet8", "resnet20", "resnet32", "resnet56", "resnet18", "resnet50", "simple_cnn", "mlp"})
    for (int side : {1, 3, 4, 8, 12, 28, 30, 32, 64, 224}) {
      const Json user = {{"model", {{"arch", arch}}},
                         {"data", {{"dataset", "synthetic"}, {"synthetic", {{"height", side}, {"width", side}}}}}};
      bool config_refuses = false;
      try {
        config::resolve(user, 1);
      } catch (const BadInput& e) {
        config_refuses = true;
        EXPECT_NE(std::string(e.what()).find("/model/arch"), std::string::npos) << e.what();
      }
      ModelSpec s = spec_of(arch, 1, side);
      bool models_refuse = false;
      try {
        models::validate(s);
      } catch (const BadInput&) {
        models_refuse = true;
      }
      EXPECT_EQ(config_refuses, models_refuse) << arch << " on " << side << "x" << side;
    }
}

// The config layer's count of parameter tensors (the most asynchronous SGD's servers can shard) is the models
// layer's, for every arch (tensor model parallelism and pipeline stages aside: async SGD uses neither).
TEST(Checkpointing, ConfigKnowsTheTensorCounts) {
  for (const std::string arch : {"resnet8", "resnet20", "resnet32", "resnet56", "resnet18", "resnet50", "simple_cnn", "mlp"}) {
    Model m(spec_of(arch, 3, 64), 7);
    EXPECT_EQ(config::param_tensors(arch), static_cast<int>(m.param_table().size())) << arch;
  }
}

TEST(Checkpointing, UnitsAndSegments) {
  // The config layer's early check and the models layer count the same units.
  for (const std::string arch : {"resnet8", "resnet20", "resnet32", "resnet56", "resnet18", "resnet50"}) {
    const ModelSpec s = spec_of(arch, 3, 64);
    EXPECT_EQ(models::checkpoint_units(s), 1 + int(models::resnet_topology(s).blocks.size())) << arch;
    EXPECT_EQ(config::checkpoint_units(arch), models::checkpoint_units(s)) << arch;
  }
  EXPECT_EQ(models::checkpoint_units(spec_of("resnet20", 1, 28)), 10);  // stem + 3 x 3 blocks
  EXPECT_EQ(models::checkpoint_units(spec_of("resnet50", 3, 64)), 17);  // stem + 3 + 4 + 6 + 3 blocks
  EXPECT_EQ(config::checkpoint_units("simple_cnn"), models::checkpoint_units(spec_of("simple_cnn", 1, 28)));
  EXPECT_EQ(config::checkpoint_units("mlp"), 0);
  EXPECT_EQ(models::checkpoint_units(spec_of("mlp", 1, 28)), 0);
  // round(sqrt(n)), at least 1.
  EXPECT_EQ(models::default_checkpoint_segments(1), 1);
  EXPECT_EQ(models::default_checkpoint_segments(2), 1);
  EXPECT_EQ(models::default_checkpoint_segments(10), 3);
  EXPECT_EQ(models::default_checkpoint_segments(17), 4);
  EXPECT_EQ(models::default_checkpoint_segments(28), 5);
  // Equal costs: contiguous segments whose sizes differ by at most one, every segment non-empty.
  for (int units = 1; units <= 30; ++units) {
    for (int k = 1; k <= units; ++k) {
      const std::vector<int> seg = models::segment_of_units(std::vector<double>(size_t(units), 1.0), k);
      std::vector<int> sizes(size_t(k), 0);
      for (int u = 0; u < units; ++u) {
        if (u > 0) {
          ASSERT_TRUE(seg[u] == seg[u - 1] || seg[u] == seg[u - 1] + 1);
        }
        ++sizes[size_t(seg[u])];
      }
      EXPECT_EQ(seg.front(), 0);
      EXPECT_EQ(seg.back(), k - 1);
      const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
      EXPECT_GE(*lo, 1);
      EXPECT_LE(*hi - *lo, 1) << units << " units, " << k << " segments";
    }
  }
  EXPECT_THROW(models::segment_of_units(std::vector<double>(10, 1.0), 11), std::logic_error);
  // Unequal costs: the largest segment cost is the smallest over every cut, found here by trying them all
  // (each of the n - 1 gaps cut or not) on random costs.
  Rng rng(8);
  for (int trial = 0; trial < 200; ++trial) {
    const int units = 1 + int(rng.below(9));
    const int k = 1 + int(rng.below(uint64_t(units)));
    std::vector<double> costs;
    for (int u = 0; u < units; ++u) costs.push_back(double(1 + rng.below(100)));
    auto largest = [&](const std::vector<int>& seg) {
      std::vector<double> sum(size_t(k), 0.0);
      for (int u = 0; u < units; ++u) sum[size_t(seg[u])] += costs[size_t(u)];
      return *std::max_element(sum.begin(), sum.end());
    };
    double optimum = 1e300;
    for (uint32_t gaps = 0; gaps < (1u << (units - 1)); ++gaps) {
      if (__builtin_popcount(gaps) != k - 1) continue;
      std::vector<int> seg(size_t(units), 0);
      for (int u = 1; u < units; ++u) seg[size_t(u)] = seg[size_t(u) - 1] + int((gaps >> (u - 1)) & 1u);
      optimum = std::min(optimum, largest(seg));
    }
    const std::vector<int> got = models::segment_of_units(costs, k);
    ASSERT_EQ(got.front(), 0);
    ASSERT_EQ(got.back(), k - 1);
    for (int u = 1; u < units; ++u) ASSERT_TRUE(got[u] == got[u - 1] || got[u] == got[u - 1] + 1);
    EXPECT_EQ(largest(got), optimum) << units << " units, " << k << " segments, trial " << trial;
  }
  // Unit costs by hand. ResNet-20 on 1 x 28 x 28: the stem writes 16 x 28 x 28 twice (convolution, batch norm);
  // a first-stage block four such tensors (its addition is in place); the first block of stage 2 (stride 2,
  // 32 x 14 x 14) its two convolutions, two batch norms, and the shortcut's convolution and batch norm.
  const std::vector<double> r20 = models::checkpoint_unit_costs(spec_of("resnet20", 1, 28));
  ASSERT_EQ(r20.size(), 10u);
  EXPECT_EQ(r20[0], 2.0 * 16 * 28 * 28);
  EXPECT_EQ(r20[1], 4.0 * 16 * 28 * 28);
  EXPECT_EQ(r20[4], 6.0 * 32 * 14 * 14);
  EXPECT_EQ(r20[9], 4.0 * 64 * 7 * 7);
  // ResNet-50 on 224: the stem's 64 x 112 x 112 twice and its pooled 64 x 56 x 56; layer1.0 (bottleneck 64,
  // 64, 256 at 56 x 56, with a shortcut to 256).
  const std::vector<double> r50 = models::checkpoint_unit_costs(spec_of("resnet50", 3, 224));
  ASSERT_EQ(r50.size(), 17u);
  EXPECT_EQ(r50[0], 2.0 * 64 * 112 * 112 + 64.0 * 56 * 56);
  EXPECT_EQ(r50[1], (2.0 * 64 + 2.0 * 64 + 2.0 * 256 + 2.0 * 256) * 56 * 56);
  const std::vector<double> cnn = models::checkpoint_unit_costs(spec_of("simple_cnn", 1, 28));
  EXPECT_EQ(cnn, (std::vector<double>{8.0 * 28 * 28 * 2 + 8.0 * 14 * 14, 16.0 * 14 * 14 * 2 + 16.0 * 7 * 7}));
  // A spec with more segments than units, or segments on the MLP, is refused naming the key.
  ModelSpec bad = spec_of("resnet20", 1, 28);
  bad.checkpoint_segments = 11;
  try {
    models::validate(bad);
    ADD_FAILURE() << "11 segments of 10 units accepted";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()).rfind("/model/checkpoint_segments: must be in [0, 10]", 0), 0u) << e.what();
  }
  bad = spec_of("mlp", 1, 28);
  bad.checkpoint_segments = 1;
  EXPECT_THROW(models::validate(bad), BadInput);
}

TEST(Checkpointing, ResNet20GradientsEqualWithoutBitwise) {
  expect_same_as_without(spec_of("resnet20", 1, 28), 8, {1, 2, 3, 5, 10});
}

TEST(Checkpointing, ResNet50GradientsEqualWithoutBitwise) {
  // 64 x 64 keeps 2 x 2 positions in the last stage, so batch norm has 4 values per channel at batch 2.
  expect_same_as_without(spec_of("resnet50", 3, 64), 2, {2, 4, 17});
}

TEST(Checkpointing, GhostBatchNormBf16AndSimpleCnnEqualWithoutBitwise) {
  ModelSpec ghost = spec_of("resnet8", 1, 28);
  ghost.ghost_batch = 4;
  ghost.dropout = 0.3f;  // dropout sits in the head, after the last checkpoint: its mask is drawn once per step
  expect_same_as_without(ghost, 8, {2, 4});
  expect_same_as_without(spec_of("simple_cnn", 1, 28), 8, {1, 2});
  DTBENCH_SKIP_WITHOUT_BF16();  // the last part
  ModelSpec bf16 = spec_of("resnet8", 1, 28);
  bf16.precision = "bf16";
  expect_same_as_without(bf16, 8, {2});
}

// Synchronised batch norm recomputes its statistics, allreduce included, in each recomputation; the running
// averages still take one update per step. One replica whose cross-replica sum is the identity.
TEST(Checkpointing, SynchronisedBatchNormUpdatesRunningStatisticsOnce) {
  ModelSpec s = spec_of("resnet8", 1, 28);
  std::vector<std::vector<float>> buffers, grads;
  std::vector<int> sums;
  for (int k : {0, 2}) {
    s.checkpoint_segments = k;
    Model m(s, 7);
    int calls = 0;
    m.set_cross_replica_sum([&calls](double*, size_t) { ++calls; });
    Rng rng(4);
    std::vector<float> x(8 * 784);
    for (float& v : x) v = float(rng.normal());
    std::vector<int32_t> labels(8, 3);
    m.forward(x.data(), labels.data(), 8, true);
    m.backward();
    buffers.emplace_back(m.buffers().begin(), m.buffers().end());
    grads.emplace_back(m.grads().begin(), m.grads().end());
    sums.push_back(calls);
  }
  EXPECT_TRUE(same_bits(buffers[0], buffers[1]));
  EXPECT_TRUE(same_bits(grads[0], grads[1]));
  // ResNet-8 (4 units in 2 segments: stem + block 1, blocks 2 and 3): the first segment's 3 batch norms run
  // again in the backward, each with its forward sum.
  EXPECT_EQ(sums[1], sums[0] + 3);
}

TEST(Checkpointing, PlanMemoryFallsWithSegments) {
  ModelSpec s = spec_of("resnet50", 3, 64);
  std::vector<size_t> bytes;
  for (int k : {0, 1, 2, 4}) {
    s.checkpoint_segments = k;
    Model m(s, 7);
    Rng rng(5);
    std::vector<float> x(size_t(4) * 3 * 64 * 64);
    for (float& v : x) v = float(rng.normal());
    std::vector<int32_t> labels(4, 1);
    m.forward(x.data(), labels.data(), 4, true);
    bytes.push_back(m.plan_bytes(4, true));
  }
  // One segment holds what no checkpointing holds, plus its one checkpoint (the last block's output, 4 x 2048
  // x 2 x 2 floats) and the arenas' 64-byte alignment (under 1 KiB per memory).
  EXPECT_GE(bytes[1], bytes[0]);
  EXPECT_LE(bytes[1], bytes[0] + 4 * 2048 * 2 * 2 * 4 + 1024 * 1024);
  EXPECT_LT(bytes[2], bytes[1]);
  EXPECT_LT(bytes[3], bytes[2]);
}

TEST(Checkpointing, EvaluationPlansAreNotSegmented) {
  ModelSpec s = spec_of("resnet8", 1, 28);
  ModelSpec plain = s;
  s.checkpoint_segments = 2;
  Model a(s, 7), b(plain, 7);
  Rng rng(6);
  std::vector<float> x(8 * 784);
  for (float& v : x) v = float(rng.normal());
  std::vector<int32_t> labels(8, 2);
  a.forward(x.data(), labels.data(), 8, false);
  b.forward(x.data(), labels.data(), 8, false);
  EXPECT_TRUE(std::equal(a.logits(), a.logits() + 80, b.logits()));
  EXPECT_EQ(a.plan_bytes(8, false), b.plan_bytes(8, false));
}

}  // namespace
}  // namespace dtbench::test
