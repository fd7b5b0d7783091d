// Synchronised (cross-replica) batch normalisation, optionally fused with the ReLU that follows it.
//
// Per-replica batch norm normalises each rank's b images with their own statistics, so K ranks with batch b
// do not compute what one rank with batch K b does. Synchronised batch norm (Peng et al. 2018, MegDet;
// PyTorch's SyncBatchNorm) uses the statistics of the global batch instead. Terms, per channel c: m = N H W
// values on this replica, M = the sum of m over replicas (one allreduce carries it, so replicas may hold
// unequal batches).
//
// Forward: S1 = sum x and S2 = sum x^2, summed across replicas with one allreduce of 2C + 1 doubles;
//   mu = S1 / M, var = S2 / M - mu^2 (biased), xhat = (x - mu) / sqrt(var + eps), y = gamma xhat + beta,
//   then max(y, 0) when fused. Running averages as batch_norm.hpp, with the global mu and the unbiased
//   var M / (M - 1), so they are identical on every replica.
// Backward, g = dy with the ReLU's mask applied: this replica's dbeta = sum g and dgamma = sum g xhat are
//   written to the gradient buffer as its own gradients (the reducer averages them like any other); their
//   cross-replica sums B and G (a second allreduce, 2C doubles) give
//   dx = gamma / sqrt(var + eps) * (g - B / M - xhat G / M).
// Sums are accumulated in double: S2 / M - mu^2 cancels, and double keeps it exact to float precision for
// activations of ordinary magnitude.
//
// Data are plain NCHW f32 (the plan reorders bf16 or blocked activations in and out): this path is an
// option for equivalence studies and small per-rank batches, not the fast path.
#pragma once

#include <string>
#include <vector>

#include "workloads/cpu/batch_norm.hpp"
#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

class SyncBatchNorm {
 public:
  // plan must be a training plan whose context has a cross_replica_sum.
  SyncBatchNorm(Plan& plan, std::string name, const BatchNormShape& shape, size_t gamma_offset,
                size_t beta_offset, size_t running_offset, const dnnl::memory& x);
  const dnnl::memory& y() const { return y_; }
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy);

 private:
  void forward_pass(Plan& plan);
  void update_running(Plan& plan);  // the running averages from mean_ and var_
  void backward_pass(Plan& plan, const float* dy, float* dx);

  std::string name_;
  BatchNormShape shape_;
  size_t gamma_offset_, beta_offset_, running_offset_;
  int64_t n_ = 0, hw_ = 0;
  dnnl::memory x_, y_;
  std::vector<double> mean_, var_, invstd_, sums_;  // sums_: the allreduce buffer
  double global_count_ = 0;                   // M of the last forward
};

}  // namespace dtbench::cpu
