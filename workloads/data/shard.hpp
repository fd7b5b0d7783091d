// Which samples each rank trains on in each step, and which it evaluates.
//
// Training: every epoch e has one permutation perm_e of the N training indices (Fisher-Yates driven by
// Rng(seed, {stream::shuffle, e}); it depends on nothing but seed, e and N). With K ranks and per-rank
// batch b the global batch is B = K * b, an epoch has S = floor(N / B) steps, and
//     step s of epoch e on rank r uses perm_e[s*B + r*b .. s*B + r*b + b).
// Consequences, each tested:
//  - In every epoch the ranks' shards are disjoint and together cover S * B samples exactly once.
//  - The remainder, N mod B samples (the tail of perm_e), is DROPPED so that every rank runs the same
//    number of full batches; because perm_e changes with e, different samples are dropped each epoch.
//  - K ranks with batch b see exactly the samples that 1 rank with batch K * b sees in the same step
//    (rank r's indices are the r-th slice of the single rank's batch), so data-parallel runs can be
//    compared step by step with a single-process run of the same global batch.
//  - Same seed, same order on every machine (dtbench::Rng is machine-independent).
//
// Evaluation: the test set in its stored order, cut into K contiguous ranges whose sizes differ by at
// most one (rank r gets [r*N/K, (r+1)*N/K)), so K ranks together evaluate every test image exactly once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dtbench::data {

class EpochSharder {
 public:
  // Throws BadInput when the data set has fewer than one global batch or more than 2^32 samples.
  EpochSharder(size_t n, int ranks, size_t per_rank_batch, uint64_t seed);

  size_t steps_per_epoch() const { return steps_; }
  size_t global_batch() const { return global_batch_; }
  size_t per_rank_batch() const { return batch_; }
  int ranks() const { return ranks_; }
  size_t dropped_per_epoch() const { return n_ - steps_ * global_batch_; }

  // The b sample indices of (epoch, step, rank); valid until the next call with another epoch.
  std::span<const uint32_t> indices(uint64_t epoch, size_t step, int rank);
  // The whole permutation of the epoch (N entries; the last dropped_per_epoch() are not used).
  const std::vector<uint32_t>& permutation(uint64_t epoch);

 private:
  size_t n_, batch_, global_batch_, steps_;
  int ranks_;
  uint64_t seed_;
  uint64_t cached_epoch_ = 0;
  bool cached_ = false;
  std::vector<uint32_t> perm_;
};

// The test-set indices rank `rank` of `ranks` evaluates: a contiguous range in stored order.
std::vector<uint32_t> eval_indices(size_t n, int ranks, int rank);

}  // namespace dtbench::data
