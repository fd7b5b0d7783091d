// Gradient buckets: reverse-order grouping at tensor boundaries, launches in bucket order whatever
// order tensors are announced in, exact averaged sums across thread ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/rng.hpp"
#include "reducers/thread_comm.hpp"
#include "workloads/train/buckets.hpp"

using namespace dtbench;

namespace {
// Tensors of sizes 5, 300, 1, 64, 2000, 7 laid out contiguously.
std::vector<TensorRange> layout() {
  std::vector<TensorRange> t;
  size_t off = 0;
  for (size_t n : {5, 300, 1, 64, 2000, 7}) {
    t.push_back({off, n});
    off += n;
  }
  return t;
}
}  // namespace

TEST(GradientBuckets, SumsExactlyForAnyAnnouncementOrder) {
  for (int ranks : {1, 2, 3, 4}) {
    for (bool overlap : {true, false}) {
      run_ranks(ranks, [&](Comm& comm) {
        auto reducer = make_reducer("ring", comm);
        auto tensors = layout();
        const size_t n = tensors.back().offset + tensors.back().size;
        // 1 KiB buckets: several buckets, some holding more than one tensor.
        GradientBuckets buckets(tensors, 1024, *reducer, overlap);
        EXPECT_GT(buckets.count(), 2u);
        std::vector<float> g(n);
        for (int step = 0; step < 3; ++step) {
          for (size_t i = 0; i < n; ++i) g[i] = static_cast<float>((comm.rank() + 1) * ((i % 97) + step));
          buckets.begin(g.data());
          // Announce in an order that differs per rank and per step: buckets must still launch in
          // the same order on every rank, or the ring would mismatch messages.
          std::vector<size_t> order(tensors.size());
          std::iota(order.begin(), order.end(), 0);
          Rng rng(static_cast<uint64_t>(step), {static_cast<uint64_t>(comm.rank())});
          for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
          for (size_t k : order) buckets.ready(tensors[k].offset, tensors[k].size);
          buckets.finish();
          const float rank_sum = static_cast<float>(ranks * (ranks + 1) / 2);
          for (size_t i = 0; i < n; ++i) ASSERT_EQ(g[i], rank_sum * static_cast<float>((i % 97) + step)) << i;
        }
      });
    }
  }
}

TEST(GradientBuckets, GroupsInReverseLayerOrder) {
  run_ranks(1, [&](Comm& comm) {
    auto reducer = make_reducer("ring", comm);
    // One huge bucket: everything together; tiny buckets: one tensor each.
    EXPECT_EQ(GradientBuckets(layout(), size_t{1} << 30, *reducer, true).count(), 1u);
    EXPECT_EQ(GradientBuckets(layout(), 4, *reducer, true).count(), 6u);
    GradientBuckets b(layout(), 4, *reducer, true);
    EXPECT_EQ(b.bytes_per_step(), (5 + 300 + 1 + 64 + 2000 + 7) * sizeof(float));
  });
}

TEST(GradientBuckets, LocalNormIsTakenBeforeTheReduction) {
  run_ranks(2, [&](Comm& comm) {
    auto reducer = make_reducer("tree", comm);
    std::vector<TensorRange> t = {{0, 3}, {3, 1}};
    GradientBuckets buckets(t, 8, *reducer, true);
    std::vector<float> g = {1, 2, 2, 4};  // norm^2 = 25 on every rank
    if (comm.rank() == 1) g = {0, 0, 3, 0};  // 9
    buckets.begin(g.data());
    buckets.ready(3, 1);
    buckets.ready(0, 3);
    buckets.finish();
    EXPECT_DOUBLE_EQ(buckets.local_norm_sq(), comm.rank() == 0 ? 25.0 : 9.0);
    EXPECT_EQ(g, (std::vector<float>{1, 2, 5, 4}));
  });
}
