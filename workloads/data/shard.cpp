// Per-epoch shuffled sharding for K data-parallel ranks (layout and properties in shard.hpp).
#include "workloads/data/shard.hpp"

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "workloads/data/dataset.hpp"

namespace dtbench::data {

EpochSharder::EpochSharder(size_t n, int ranks, size_t per_rank_batch, uint64_t seed)
    : n_(n), batch_(per_rank_batch), ranks_(ranks), seed_(seed) {
  if (ranks < 1) throw BadInput("sharding needs at least 1 rank, got " + std::to_string(ranks));
  if (per_rank_batch < 1) throw BadInput("sharding needs a per-rank batch of at least 1");
  if (n > UINT32_MAX) throw BadInput("data sets of more than 2^32 samples are not supported (" + std::to_string(n) + ")");
  global_batch_ = static_cast<size_t>(ranks) * per_rank_batch;
  steps_ = n / global_batch_;
  if (steps_ == 0)
    throw BadInput("/batch/global: the training set has " + std::to_string(n) + " samples, fewer than one global batch of " +
                   std::to_string(ranks) + " ranks x " + std::to_string(per_rank_batch) + " = " +
                   std::to_string(global_batch_));
}

// Fisher-Yates (Durstenfeld's in-place form, Knuth TAOCP vol. 2, Algorithm 3.4.2P): for i from N-1
// down to 1 swap entry i with a uniformly chosen entry j in [0, i]. Rng::below is unbiased, so every
// permutation is equally likely, and the result depends only on (seed, epoch, N).
const std::vector<uint32_t>& EpochSharder::permutation(uint64_t epoch) {
  if (cached_ && cached_epoch_ == epoch) return perm_;
  perm_.resize(n_);
  std::iota(perm_.begin(), perm_.end(), uint32_t{0});
  Rng rng(seed_, {stream::shuffle, epoch});
  for (size_t i = n_; i > 1; --i) std::swap(perm_[i - 1], perm_[rng.below(i)]);
  cached_epoch_ = epoch;
  cached_ = true;
  return perm_;
}

std::span<const uint32_t> EpochSharder::indices(uint64_t epoch, size_t step, int rank) {
  if (step >= steps_ || rank < 0 || rank >= ranks_)
    throw std::out_of_range("EpochSharder::indices: step " + std::to_string(step) + " of " + std::to_string(steps_) +
                            ", rank " + std::to_string(rank) + " of " + std::to_string(ranks_));
  const std::vector<uint32_t>& perm = permutation(epoch);
  return std::span<const uint32_t>(perm).subspan(step * global_batch_ + static_cast<size_t>(rank) * batch_, batch_);
}

std::vector<uint32_t> eval_indices(size_t n, int ranks, int rank) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw std::out_of_range("eval_indices: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  const size_t k = static_cast<size_t>(ranks), r = static_cast<size_t>(rank);
  const size_t begin = r * n / k, end = (r + 1) * n / k;
  std::vector<uint32_t> idx(end - begin);
  std::iota(idx.begin(), idx.end(), static_cast<uint32_t>(begin));
  return idx;
}

}  // namespace dtbench::data
