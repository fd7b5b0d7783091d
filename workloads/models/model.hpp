// The models dtbench trains on the CPU: CIFAR-style ResNet-(6n+2), ImageNet-style ResNet-18 and ResNet-50
// v1.5, and a two-layer perceptron, on the oneDNN backend (workloads/cpu).
//
// Parameters and gradients live in one flat buffer each, in canonical PyTorch layout (conv weights OIHW,
// fc weights out x in) and in the order of PyTorch's named_parameters() for the twin networks in
// workloads/reference/torch_resnet.py, with the same names. The parameter table describes the ranges.
// Batch-norm running means and variances live in a third flat buffer (not trained; checkpointed and
// broadcast at start). A training step is forward(x, labels, n, true) then backward(on_ready).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "workloads/cpu/plan.hpp"

namespace dtbench::models {

struct ParamInfo {
  enum Kind { conv_weight, fc_weight, bias, bn };
  std::string name;  // PyTorch's name, e.g. "layer1.0.conv1.weight"
  size_t offset = 0;
  size_t size = 0;
  Kind kind = conv_weight;
  std::vector<int64_t> shape;  // canonical layout in the flat buffer (OIHW, out x in, C)
};

std::string to_string(ParamInfo::Kind kind);

struct ModelSpec {
  std::string arch = "resnet20";  // resnet8 | resnet20 | resnet32 | resnet56 | resnet18 | resnet50 | mlp
  int in_c = 1, in_h = 28, in_w = 28;
  int classes = 10;
  bool zero_init_residual = false;  // gamma = 0 in the last batch norm of every residual block (Goyal et al.)
  std::string precision = "fp32";   // fp32 | bf16 (bf16 compute; fp32 master weights and gradients)
  int hidden = 0;                   // mlp only: width of the hidden layer (must be 0 for the ResNets)
  float label_smoothing = 0.0f;     // [0, 1)
  float dropout = 0.0f;             // [0, 1): before the last fully connected layer; 0 = none
};

// Throws BadInput naming the field (e.g. "model spec: arch ...") when the spec cannot be built: unknown arch
// or precision, non-positive sizes, fewer than 2 classes, an option that does not apply to the arch, an
// input the network cannot downsample (see model.cpp for the rule).
void validate(const ModelSpec& spec);

class Model {
 public:
  // Builds the parameter table and initialises the weights from dtbench::Rng(seed, ...): He initialisation for
  // convolutions, PyTorch's default for fully connected layers, gamma 1 and beta 0 for batch norms (gamma 0
  // in each block's last batch norm with zero_init_residual), running mean 0 and variance 1.
  Model(const ModelSpec& spec, uint64_t seed);
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  const ModelSpec& spec() const;
  std::span<float> params();
  std::span<float> grads();
  std::span<float> buffers();  // batch-norm running means and variances
  const std::vector<ParamInfo>& param_table() const;
  const std::vector<ParamInfo>& buffer_table() const;  // kind bn; "X.running_mean", "X.running_var"

  // x: n images, N x C x H x W fp32 row-major (NCHW); labels: n ints in [0, classes). Returns the mean loss.
  // train = false: batch norm uses the running statistics and dropout is off. The primitives of each
  // (n, train) pair are built at its first use and replayed afterwards. x and labels are copied; they need not
  // outlive the call. Throws BadInput on n < 1 or a label out of range, before any work.
  double forward(const float* x, const int32_t* labels, int n, bool train);
  const float* logits() const;  // n x classes of the last forward
  int correct() const;          // images of the last forward whose argmax logit is the label
  int last_batch() const;

  // Gradients of the last (training) forward's mean loss, written over the gradient buffer (no
  // accumulation). on_ready(offset, size) is called as each parameter tensor's gradient becomes final, in
  // reverse layer order; every tensor is announced exactly once and its range is not written again in this
  // backward.
  void backward(const cpu::OnReady& on_ready = {});

  // Convolution and fully connected FLOPs of one image's training step: forward 2 x MACs, backward twice the
  // forward (data and weight gradients), so 6 x MACs.
  double flops_per_sample_train() const;
  double macs_per_sample() const;

  // Synchronised batch norm: training forwards take batch-norm statistics over all replicas, summed with
  // `sum` (an allreduce every replica calls at the same layers; workloads/cpu/sync_batch_norm.hpp). Empty:
  // per-replica statistics (the default). Training plans built before are dropped and rebuilt.
  void set_cross_replica_sum(cpu::CrossReplicaSum sum);

  // Per-operation timing of the plan for (n, train) (bench tool); profiling adds a stream wait per operation.
  void set_profiling(bool on);
  std::vector<cpu::OpTime> profile(int n, bool train) const;
  size_t num_reorders(int n, bool train) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtbench::models
