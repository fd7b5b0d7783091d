// The two callbacks between a model and the data-parallel machinery around it, the same for every backend.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "optim/kfac_factors.hpp"

namespace dtbench::models {

// Backward calls it as each parameter tensor's gradient [offset, offset + size) is final (bucketing hook).
using OnReady = std::function<void(size_t offset, size_t size)>;
// Sums n doubles in place across the replicas of a data-parallel run (an allreduce); every replica calls it
// at the same point of its step with the same n (synchronised batch norm).
using CrossReplicaSum = std::function<void(double* data, size_t n)>;
// Tensor model parallelism: the ranks of one model-parallel group, which see the same batch. allgather puts
// every member's `counts[j]` floats, in member order, into `all` (sum of counts); every member calls it at the
// same point of its step with the same counts, and `mine` holds counts[rank] floats. alltoall (optional) gives
// every member its block of every member's buffer: `mine` holds blocks of counts[0], counts[1], ... floats end to
// end, and `from_all` receives, in member order, each member's block number `rank` (size x counts[rank] floats).
// With it a split layer's input gradient is reduce-scattered, then allgathered (workloads/cpu/split_layer.hpp).
struct ModelParallelGroup {
  int size = 1, rank = 0;
  std::function<void(const float* mine, float* all, const std::vector<size_t>& counts)> allgather;
  std::function<void(const float* mine, float* from_all, const std::vector<size_t>& counts)> alltoall;
};
// K-FAC's statistics (optim/kfac.hpp): a backward asked for them calls it once for every conv and fc layer with
// the layer's input and the gradient of its output, so the trainer and the optimizer need not know layer types.
using OnLayerActivity = std::function<void(const optim::LayerActivity&)>;

}  // namespace dtbench::models
