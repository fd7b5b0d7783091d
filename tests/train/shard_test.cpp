// The sharded parameter server's split of the parameters (workloads/train/async_ps.hpp): shards are
// contiguous whole tensors that tile the buffer, balanced by size; and an optimizer built over each shard's
// table updates its range with the same bits as one optimizer over the whole table, for every optimizer
// whose update is per element or per tensor (all of them but those that couple tensors or need more than a
// gradient: kfac's curvature statistics, sgld's noise stream drawn by block of the whole buffer).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "optim/optimizer.hpp"
#include "workloads/train/async_ps.hpp"

namespace dtbench {
namespace {

// A small network's table: conv and fc weights, biases, batch-norm tensors, of uneven sizes.
optim::ParamTable table() {
  using optim::TensorKind;
  std::vector<optim::TensorInfo> t;
  size_t at = 0;
  auto add = [&](const std::string& name, size_t n, TensorKind k, size_t rows = 0) {
    t.push_back({name, at, n, k, rows});
    at += n;
  };
  add("conv1.w", 3 * 3 * 3 * 8, TensorKind::conv_weight, 8);
  add("bn1.gamma", 8, TensorKind::bn);
  add("bn1.beta", 8, TensorKind::bn);
  add("conv2.w", 3 * 3 * 8 * 16, TensorKind::conv_weight, 16);
  add("bn2.gamma", 16, TensorKind::bn);
  add("bn2.beta", 16, TensorKind::bn);
  add("fc.w", 16 * 10, TensorKind::fc_weight, 10);
  add("fc.b", 10, TensorKind::bias);
  return optim::ParamTable(std::move(t));
}

TEST(ShardParams, ContiguousWholeTensorsThatTileTheBufferBalancedBySize) {
  const optim::ParamTable t = table();
  for (int s = 1; s <= static_cast<int>(t.num_tensors()); ++s) {
    const std::vector<ParamShard> shards = shard_params(t, s);
    ASSERT_EQ(shards.size(), static_cast<size_t>(s));
    size_t at = 0;
    for (const ParamShard& sh : shards) {
      EXPECT_EQ(sh.begin, at);
      EXPECT_GT(sh.end, sh.begin);
      // Whole tensors: every boundary is a tensor's start or the buffer's end.
      bool starts = false, ends = sh.end == t.buffer_size();
      for (const auto& x : t.tensors()) starts |= x.offset == sh.begin, ends |= x.offset == sh.end;
      EXPECT_TRUE(starts && ends);
      size_t covered = 0;
      const optim::ParamTable part = shard_table(t, sh);
      for (const auto& x : part.tensors()) covered += x.size;
      EXPECT_EQ(covered, sh.end - sh.begin);
      at = sh.end;
    }
    EXPECT_EQ(at, t.buffer_size());
  }
  // Two shards of 216 + 8 + 8 + 1152 + 16 + 16 + 160 + 10 = 1586: the cut comes once 793 is reached, after conv2.
  const std::vector<ParamShard> two = shard_params(t, 2);
  EXPECT_EQ(two[0].end, size_t{216 + 8 + 8 + 1152});
  EXPECT_THROW(shard_params(t, 9), BadInput);  // more servers than tensors
  EXPECT_THROW(shard_params(t, 0), BadInput);
  optim::ParamTable gap({{"a", 0, 4, optim::TensorKind::bias, 0}, {"b", 8, 4, optim::TensorKind::bias, 0}});
  EXPECT_THROW(shard_params(gap, 2), RunFailed);
}

TEST(ShardParams, ShardOptimizersMatchOneOptimizerOverTheWholeTable) {
  const optim::ParamTable t = table();
  const size_t n = t.buffer_size();
  for (const std::string& name : optim::optimizer_names()) {
    if (name == "kfac" || name == "sgld") continue;
    SCOPED_TRACE(name);
    const Json section = {{"name", name}};
    std::vector<float> whole(n), sharded(n);
    Rng init(3, {0});
    for (auto& x : whole) x = static_cast<float>(init.normal()) * 0.1f;
    sharded = whole;
    auto full = optim::make_optimizer(section, t, 7);
    const std::vector<ParamShard> shards = shard_params(t, 3);
    std::vector<std::unique_ptr<optim::Optimizer>> parts;
    for (const ParamShard& sh : shards) parts.push_back(optim::make_optimizer(section, shard_table(t, sh), 7));
    for (int step = 0; step < 4; ++step) {
      std::vector<float> g(n);
      Rng rng(11, {static_cast<uint64_t>(step)});
      for (auto& x : g) x = static_cast<float>(rng.normal()) * 0.01f;
      // DCASGD's backup (the weights the gradient was computed at): older weights, the same for both.
      std::vector<float> backup = whole;
      for (auto& x : backup) x *= 0.99f;
      full->step(whole, g, 0.05, backup);
      for (size_t k = 0; k < shards.size(); ++k) {
        const ParamShard& sh = shards[k];
        const size_t len = sh.end - sh.begin;
        parts[k]->step(std::span<float>(sharded).subspan(sh.begin, len), std::span<const float>(g).subspan(sh.begin, len),
                       0.05, std::span<const float>(backup).subspan(sh.begin, len));
      }
    }
    EXPECT_EQ(0, std::memcmp(whole.data(), sharded.data(), n * sizeof(float)));
  }
}

}  // namespace
}  // namespace dtbench
