// What a model is, independent of the backend that runs it: the spec a run asks for (architecture, input,
// classes, options), its validation, and the entries of the parameter table. The oneDNN model
// (workloads/cpu/model.hpp) and the cuDNN model (workloads/gpu) both build from these.
//
// Parameters and gradients live in one flat buffer each, in canonical PyTorch layout (conv weights OIHW,
// fc weights out x in) and in the order of PyTorch's named_parameters() for the twin networks in
// workloads/reference/torch_resnet.py, with the same names. The parameter table describes the ranges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dtbench::models {

struct ParamInfo {
  enum Kind { conv_weight, fc_weight, bias, bn };
  std::string name;  // PyTorch's name, e.g. "layer1.0.conv1.weight"
  size_t offset = 0;
  size_t size = 0;
  Kind kind = conv_weight;
  std::vector<int64_t> shape;  // canonical layout in the flat buffer (OIHW, out x in, C)
  // Tensor model parallelism (ModelSpec::shards > 1): this rank holds rows [row_begin, row_begin + shape[0]) of
  // a tensor of full_rows rows (output units). full_rows 0: the whole tensor, replicated on every rank.
  int64_t row_begin = 0, full_rows = 0;
  // Position in the whole model's table: its initial weights' random stream (a pipeline stage's table holds some
  // tensors only, and they start as the whole model's).
  size_t init_index = 0;
};

// The output units [begin, end) that shard `shard` of `shards` owns of a layer with `rows` of them: contiguous,
// balanced (sizes differ by at most one), in shard order.
struct RowRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
RowRange shard_rows(int64_t rows, int shards, int shard);

std::string to_string(ParamInfo::Kind kind);

struct ModelSpec {
  std::string arch = "resnet20";  // resnet8 | resnet20 | resnet32 | resnet56 | resnet18 | resnet50 | mlp | simple_cnn
  int in_c = 1, in_h = 28, in_w = 28;
  int classes = 10;
  bool zero_init_residual = false;  // gamma = 0 in the last batch norm of every residual block (Goyal et al.)
  std::string precision = "fp32";   // fp32 | bf16 (bf16 compute; fp32 master weights and gradients)
  int hidden = 0;                   // mlp, simple_cnn: width of the hidden fully connected layer (0 otherwise)
  std::vector<int> conv_filters;    // simple_cnn only: filters of its two convolutions (empty otherwise)
  float label_smoothing = 0.0f;     // [0, 1)
  float dropout = 0.0f;             // [0, 1): before the last fully connected layer; 0 = none
  int ghost_batch = 0;              // ResNets: batch-norm statistics over ghost batches of this size; 0 = none
  int checkpoint_segments = 0;      // gradient checkpointing (checkpointing.hpp): segments; 0 = off
  // Tensor model parallelism (workloads/cpu/split_layer.hpp): every convolution and fully connected layer
  // split by output units over a group of `shards` ranks, of which this is rank `shard`.
  int shards = 1, shard = 0;
  // Pipeline parallelism (pipeline_units.hpp): the network cut into `stages` stages, of which this rank holds
  // stage `stage`, the units [first_unit, end_unit). Ignored with one stage.
  int stages = 1, stage = 0, first_unit = 0, end_unit = 0;
};

// Throws BadInput naming the field (e.g. "model spec: arch ...") when the spec cannot be built: unknown arch
// or precision, non-positive sizes, fewer than 2 classes, an option that does not apply to the arch, an
// input the network cannot downsample (see model_spec.cpp for the rule).
void validate(const ModelSpec& spec);

}  // namespace dtbench::models
