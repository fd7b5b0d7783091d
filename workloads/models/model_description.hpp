// The backend-neutral description of a model: its parameter and buffer tables in canonical layout, the
// multiply-adds of one image's forward pass, and the initial weights. Each backend allocates flat buffers of
// param_count() and buffer_count() floats, fills them with initialise() and looks its tensors up by name in
// the tables (table_index.hpp), so the backends cannot disagree on layout, FLOPs or initialisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "workloads/models/model_spec.hpp"

namespace dtbench::models {

struct ModelDescription {
  std::vector<ParamInfo> params;   // the parameter table (names, offsets, sizes, kinds, shapes), canonical layout
  std::vector<ParamInfo> buffers;  // batch-norm running statistics ("X.running_mean", "X.running_var")
  double macs_per_sample = 0;      // convolution and fully connected multiply-adds of one image's forward
                                   // (of the whole model, in a model-parallel shard's description too)
  // This rank's part of them: a model-parallel shard's split layers count its rows only, a pipeline stage its
  // units only (macs_per_sample without model parallelism).
  double rank_macs_per_sample = 0;
  // A pipeline stage's description: the tables hold its units' tensors only (pipeline_units.hpp).
  bool partial = false;
  // The outputs of one image's convolutions and fully connected layers (whole layers, the whole model): what
  // training keeps at the least for the backward pass (batch norm, ReLU and the loss read them), and the largest
  // of them. A lower bound on the activations' memory, before any workspace, normalisation or ReLU output.
  double layer_output_floats_per_sample = 0;
  double largest_layer_output_floats = 0;
  // Forward 2 x MACs, backward twice the forward (data and weight gradients), so 6 x MACs.
  double flops_per_sample_train() const { return 6 * macs_per_sample; }
  double rank_flops_per_sample_train() const { return 6 * rank_macs_per_sample; }
  size_t param_count() const;
  size_t buffer_count() const;
};

// Rng stream ids: the initial weights of tensor i of the whole model's table come from Rng(seed, {kInitStream, i})
// (ParamInfo::init_index); dropout masks from Rng(seed, {kDropoutStream, step, sample position})
// (dropout_mask.hpp).
inline constexpr uint64_t kInitStream = 0x696e6974ULL;           // "init"
inline constexpr uint64_t kDropoutStream = 0x64726f706f7574ULL;  // "dropout"

// The tables in PyTorch's named_parameters() order, each batch norm's running mean then variance. Validates
// the spec first (BadInput, see validate()).
ModelDescription describe(const ModelSpec& spec);

// The initial weights and buffers (sizes param_count() and buffer_count()) from dtbench::Rng(seed, ...): He
// initialisation for the ResNets' convolutions, PyTorch's default for the Simple CNN's convolutions and for
// fully connected layers and biases, gamma 1 and beta 0 for batch norms (gamma 0 in each block's last batch
// norm with zero_init_residual), running mean 0 and variance 1.
void initialise(const ModelSpec& spec, const ModelDescription& d, uint64_t seed, std::span<float> params,
                std::span<float> buffers);

}  // namespace dtbench::models
