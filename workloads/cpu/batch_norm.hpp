// Batch normalisation (Ioffe and Szegedy 2015), optionally fused with the ReLU that follows it.
//
// Per channel c over the N x H x W values of a batch: mean mu_c, biased variance s2_c,
// y = gamma_c (x - mu_c) / sqrt(s2_c + eps) + beta_c, then max(y, 0) when fused with ReLU.
// Training mode normalises with the batch statistics and updates the running averages as PyTorch does:
// running_mean = (1 - momentum) running_mean + momentum mu, running_var likewise with the unbiased variance
// s2 * m / (m - 1), m = N H W. Inference mode (evaluation) normalises with the running averages.
// The fused ReLU uses oneDNN's fuse_norm_relu flag: in training it keeps a bit mask in a workspace and the
// backward applies the ReLU's gradient before the normalisation's, so the ReLU costs no extra pass.
// gamma and beta are read from (and their gradients written to) the flat buffers directly: oneDNN's
// use_scale / use_shift take plain f32 vectors. Running mean and variance are `channels` floats each, at
// running_offset and running_offset + channels of the model's buffer array.
// A training plan whose context has a cross_replica_sum builds synchronised batch norm instead
// (sync_batch_norm.hpp): same parameters, buffers and interface, global-batch statistics.
//
// Ghost batch norm (Hoffer, Hubara and Soudry 2017, "Train longer, generalize better", Algorithm 1): with
// ghost_batch = g > 0 and smaller than the batch N (a multiple of g), a training forward normalises each of
// the N / g consecutive ghost batches of g samples with that ghost batch's own statistics, which keeps the
// noise of batch-norm statistics of a small batch when the batch is large. Exactly what batch norm applied
// to each ghost batch separately computes, in ghost order: the running averages take one update per ghost
// batch (unbiased variance over m = g H W values), dgamma and dbeta are the sums of the ghost batches'
// (added in ghost order, so the result is deterministic), dx is each ghost batch's own. Evaluation is
// unchanged (running statistics). Samples are the outermost dimension of every layout oneDNN gives
// activations (nchw, nhwc, nChw8c, nChw16c), so a ghost batch is a contiguous slice of the tensor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

class SyncBatchNorm;

struct BatchNormShape {
  int channels = 0;
  bool fuse_relu = false;
  float eps = 1e-5f;
  float momentum = 0.1f;
  int ghost_batch = 0;  // 0 or >= the batch: statistics of the whole batch
};

class BatchNorm {
 public:
  BatchNorm(Plan& plan, std::string name, const BatchNormShape& shape, size_t gamma_offset, size_t beta_offset,
            size_t running_offset, const dnnl::memory& x);
  const dnnl::memory& y() const;
  // Appends the backward (training plans): dgamma and dbeta into the gradient buffer, announced; returns dx.
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy);

 private:
  std::string name_;
  BatchNormShape shape_;
  size_t gamma_offset_, beta_offset_, running_offset_;
  dnnl::normalization_flags flags_;
  dnnl::batch_normalization_forward::primitive_desc fwd_pd_;
  dnnl::memory::desc part_md_;  // training: one ghost batch (the whole batch without ghost batches)
  dnnl::memory x_, y_;
  // Training, one per ghost batch (one in all without ghost batches): slices of x_, statistics, workspaces.
  // Evaluation: the running statistics' views in means_[0] and vars_[0].
  std::vector<dnnl::memory> xs_, means_, vars_, workspaces_;
  std::shared_ptr<SyncBatchNorm> sync_;  // set: everything is delegated to it
};

}  // namespace dtbench::cpu
