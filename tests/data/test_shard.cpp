// Sharding: disjoint cover per epoch, dropped remainder, seed/epoch behaviour, the "K ranks x b ==
// 1 rank x K*b" property, uniformity of the shuffle, and contiguous evaluation shards.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "helpers.hpp"
#include "workloads/data/shard.hpp"

namespace dtbench::data::test {
namespace {

TEST(Shard, DisjointCoverWithDroppedRemainder) {
  for (size_t n : {1000u, 1037u, 4096u}) {
    for (int k = 1; k <= 8; ++k) {
      for (size_t b : {1u, 3u, 16u, 50u}) {
        if (static_cast<size_t>(k) * b > n) continue;
        SCOPED_TRACE(testing::Message() << "n " << n << " K " << k << " b " << b);
        EpochSharder sharder(n, k, b, 2024);
        const size_t big = static_cast<size_t>(k) * b;
        ASSERT_EQ(sharder.global_batch(), big);
        ASSERT_EQ(sharder.steps_per_epoch(), n / big);
        ASSERT_EQ(sharder.dropped_per_epoch(), n % big);
        for (uint64_t epoch : {0u, 1u}) {
          std::vector<int> seen(n, 0);
          for (size_t s = 0; s < sharder.steps_per_epoch(); ++s)
            for (int r = 0; r < k; ++r) {
              const auto idx = sharder.indices(epoch, s, r);
              ASSERT_EQ(idx.size(), b);
              for (uint32_t i : idx) ++seen.at(i);
            }
          // Every used sample exactly once; the dropped ones are exactly the tail of the permutation.
          EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(n - n % big));
          EXPECT_EQ(std::count(seen.begin(), seen.end(), 0), static_cast<std::ptrdiff_t>(n % big));
          const auto& perm = sharder.permutation(epoch);
          for (size_t j = n - n % big; j < n; ++j) EXPECT_EQ(seen[perm[j]], 0);
        }
      }
    }
  }
}

TEST(Shard, PermutationDependsOnlyOnSeedEpochAndN) {
  // Same seed: the same order whatever K and b (and on every machine: Rng is machine-independent).
  EpochSharder a(1037, 1, 10, 5), b(1037, 8, 3, 5), c(1037, 3, 7, 6);
  for (uint64_t e : {0u, 1u, 17u}) {
    EXPECT_EQ(a.permutation(e), b.permutation(e));
    EXPECT_NE(a.permutation(e), c.permutation(e));  // another seed
  }
  const std::vector<uint32_t> e0 = a.permutation(0), e1 = a.permutation(1);
  EXPECT_NE(e0, e1);  // another epoch
  EXPECT_EQ(a.permutation(0), e0);  // going back recomputes the same order
  // Different samples are dropped in different epochs (37 of 1037 at B = 1000 would be the same set
  // with probability 1 / C(1037, 37)).
  EpochSharder d(1037, 4, 250, 5);
  const auto tail = [&](uint64_t e) {
    const auto& p = d.permutation(e);
    return std::set<uint32_t>(p.end() - 37, p.end());
  };
  EXPECT_NE(tail(0), tail(1));
}

TEST(Shard, GoldenOrder) {
  // The order is part of a run's identity: a change here changes every run's data order. Reference
  // from tests/data/golden_shuffle.py, an independent Python transcription of SplitMix64, Rng's stream
  // derivation, Lemire's below() and Fisher-Yates.
  EpochSharder s(10, 1, 1, 42);
  EXPECT_EQ(s.permutation(0), (std::vector<uint32_t>{1, 2, 0, 4, 5, 7, 9, 6, 8, 3}));
}

TEST(Shard, KRanksTimesBEqualsOneRankTimesKb) {
  for (int k = 1; k <= 8; ++k) {
    for (size_t b : {1u, 4u, 13u}) {
      const size_t n = 977;
      EpochSharder many(n, k, b, 99), one(n, 1, static_cast<size_t>(k) * b, 99);
      ASSERT_EQ(many.steps_per_epoch(), one.steps_per_epoch());
      for (uint64_t e : {0u, 3u})
        for (size_t s = 0; s < many.steps_per_epoch(); ++s) {
          std::vector<uint32_t> joined;
          for (int r = 0; r < k; ++r) {
            const auto idx = many.indices(e, s, r);
            joined.insert(joined.end(), idx.begin(), idx.end());
          }
          const auto single = one.indices(e, s, 0);
          ASSERT_EQ(joined, std::vector<uint32_t>(single.begin(), single.end())) << "K " << k << " b " << b << " step " << s;
        }
    }
  }
}

TEST(Shard, ShuffleIsUniform) {
  // All 3! = 6 orders of 3 elements over 60,000 epochs should appear 10,000 times each. Chi-square
  // with 5 degrees of freedom: 20.5 is the 0.1% critical value (deterministic given the seed).
  EpochSharder s(3, 1, 1, 11);
  std::map<std::vector<uint32_t>, int> counts;
  for (uint64_t e = 0; e < 60000; ++e) ++counts[s.permutation(e)];
  ASSERT_EQ(counts.size(), 6u);
  double chi2 = 0.0;
  for (const auto& [perm, c] : counts) chi2 += (c - 10000.0) * (c - 10000.0) / 10000.0;
  EXPECT_LT(chi2, 20.5);
}

TEST(Shard, BadArguments) {
  EXPECT_EQ(bad_input([] { EpochSharder(100, 8, 16, 1); }),
            "/batch/global: the training set has 100 samples, fewer than one global batch of 8 ranks x 16 = 128");
  EXPECT_EQ(bad_input([] { EpochSharder(100, 0, 16, 1); }), "sharding needs at least 1 rank, got 0");
  EpochSharder s(100, 2, 10, 1);
  EXPECT_THROW(s.indices(0, 5, 0), std::out_of_range);
  EXPECT_THROW(s.indices(0, 0, 2), std::out_of_range);
}

TEST(Shard, EvaluationCoversTestSetOnce) {
  for (size_t n : {0u, 1u, 7u, 10000u}) {
    for (int k = 1; k <= 8; ++k) {
      std::vector<uint32_t> all;
      size_t smallest = n, largest = 0;
      for (int r = 0; r < k; ++r) {
        const auto idx = eval_indices(n, k, r);
        smallest = std::min(smallest, idx.size());
        largest = std::max(largest, idx.size());
        all.insert(all.end(), idx.begin(), idx.end());
      }
      std::vector<uint32_t> expect(n);
      for (size_t i = 0; i < n; ++i) expect[i] = static_cast<uint32_t>(i);
      EXPECT_EQ(all, expect) << "n " << n << " K " << k;  // stored order, each once
      EXPECT_LE(largest - smallest, 1u);
    }
  }
}

}  // namespace
}  // namespace dtbench::data::test
