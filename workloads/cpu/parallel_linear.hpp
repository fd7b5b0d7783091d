// Fully connected layer split by output units over a model-parallel group (tensor model parallelism).
//
// Terms: a model-parallel group of m ranks sees the same mini-batch of N images; rank j owns the output units
// [r_j, r_{j+1}) of the layer (models::shard_rows), i.e. those rows of the O x I weight and of the bias, and
// nothing of the others. This is the seeds' model parallelism (Dean et al. 2012, "DistBelief": each machine
// computes part of every layer's outputs) in the column-parallel form of Shoeybi et al. 2019 (Megatron-LM),
// with every layer's output gathered so that the layers between (ReLU, dropout, the loss) run whole and alike on
// every rank of the group:
//   forward   y_j = x W_j^T + b_j                    (N x O_j, local)
//             y   = allgather_j(y_j)                  (N x O on every rank: the activations exchanged)
//   backward  dW_j = dy[:, r_j:r_{j+1}]^T x,  db_j = sum_n dy[:, r_j:r_{j+1}]   (local: the rank's own rows)
//             dx  = sum_j dy[:, r_j:r_{j+1}] W_j      (each rank's part is a partial sum over its outputs; the
//                                                      parts are allgathered and summed in member order, so
//                                                      every rank gets the same bits)
// Shapes: x N x I (or N x C x H x W, flattened as Linear does); y and dy N x O plain fp32; dx plain fp32 in x's
// dimensions. Per layer and step each rank receives (m-1) N O_j floats in the forward and (m-1) N I floats in
// the backward (none for the first layer, which needs no dx).
#pragma once

#include <string>
#include <vector>

#include "workloads/cpu/linear.hpp"
#include "workloads/cpu/plan.hpp"
#include "workloads/models/model_spec.hpp"

namespace dtbench::cpu {

class ParallelLinear {
 public:
  // rows: this rank's output units (plan.context().model_parallel names the group); the weight and bias offsets
  // are those of the rank's rows in its flat buffer.
  ParallelLinear(Plan& plan, std::string name, int out_features, models::RowRange rows, size_t weight_offset,
                 size_t bias_offset, const dnnl::memory& x);
  const dnnl::memory& y() const { return y_; }  // N x out_features plain fp32, every rank's units gathered
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy, bool need_dx);

 private:
  std::string name_;
  int out_;
  models::RowRange rows_;
  dnnl::memory::dims x_dims_;
  Linear* local_ = nullptr;   // the rank's rows (kept by the plan)
  dnnl::memory y_;            // N x out_ gathered
  std::vector<size_t> y_counts_;  // floats of each member's N x O_j block
};

}  // namespace dtbench::cpu
