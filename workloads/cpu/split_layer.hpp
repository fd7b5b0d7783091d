// Tensor model parallelism's layers: a fully connected or convolution layer split by output units (features or
// channels) over a model-parallel group.
//
// Terms: a model-parallel group of m ranks sees the same mini-batch of N images; rank j owns the output units
// [r_j, r_{j+1}) of the layer (models::shard_rows), i.e. those rows of the weight (O x I, or O x C x k x k) and
// of the bias, and nothing of the others. This is the seeds' model parallelism (Dean et al. 2012, "DistBelief":
// each machine computes part of every layer's outputs) in the column-parallel form of Shoeybi et al. 2019
// (Megatron-LM) and Krizhevsky 2014's model parallelism for convolutions, with every split layer's output
// gathered, so that the layers between (ReLU, pooling, batch norm, dropout, the loss) run whole and alike on
// every rank of the group. With S the units' inner size (1 for a fully connected layer, P x Q for a convolution):
//   forward   y_j = layer_j(x)                        N x O_j x S, the rank's units (local)
//             y   = allgather_j(y_j)                  N x O x S on every rank: the activations exchanged
//   backward  dW_j, db_j from dy[:, r_j:r_{j+1}]      local: the rank's own units
//             dx  = sum_j backward-data_j(dy[:, r_j:r_{j+1}])   each rank's part is a partial sum over its units;
//                                                     m = 2: the parts are allgathered and summed in member
//                                                     order; m > 2 (with the group's alltoall): reduce-scattered,
//                                                     each block summed in member order by its member, and the
//                                                     sums allgathered; either way every rank gets the same bits
// Shapes: y and dy plain fp32 N x O (x P x Q); dx plain fp32 in x's dimensions. Per layer and step each rank
// receives (m-1)/m N O S floats in the forward, with equal shards, and in the backward N I floats with m = 2 and
// 2 (m-1)/m N I with m > 2 (against (m-1) N I for gathering every partial sum whole), I being the elements of one
// image's input (C x H x W for a convolution); none for a network's first layer, which needs no dx. The allgathers land in one buffer per compute thread, as large as the largest exchange (M partial input
// gradients, or a whole output); every rank also holds the whole batch's activations.
#pragma once

#include <functional>
#include <string>

#include "workloads/cpu/conv.hpp"
#include "workloads/cpu/plan.hpp"
#include "workloads/models/model_spec.hpp"

namespace dtbench::cpu {

// A layer as the networks chain them: its output, and its backward (dy -> dx when need_dx).
struct LayerNode {
  dnnl::memory y;
  std::function<dnnl::memory(Plan&, const dnnl::memory& dy, bool need_dx)> backward;
};

// A fully connected layer of `out` features: whole (Linear) when `own` covers them all, else this rank's
// features `own` with the group's exchanges. plain_f32_output: y is N x out plain fp32 (logits).
LayerNode fully_connected_layer(Plan& plan, const std::string& name, int out, models::RowRange own,
                                size_t weight_offset, size_t bias_offset, const dnnl::memory& x, bool plain_f32_output);

// A convolution of `shape` (its whole out_c): whole (Conv) when `own` covers all its channels, else this rank's
// output channels `own` with the group's exchanges.
LayerNode convolution_layer(Plan& plan, const std::string& name, const ConvShape& shape, models::RowRange own,
                            size_t weight_offset, size_t bias_offset, const dnnl::memory& x);

// Bytes of the calling thread's exchange buffer that training steps needed (0 without model parallelism): memory
// the plans do not count. (Evaluation forwards of larger batches may have grown the buffer further.)
size_t split_layer_scratch_bytes();

}  // namespace dtbench::cpu
