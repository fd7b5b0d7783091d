// The models dtbench trains on the CPU: CIFAR-style ResNet-(6n+2), ImageNet-style ResNet-18 and ResNet-50
// v1.5, and a two-layer perceptron, on the oneDNN backend (workloads/cpu), built from the backend-neutral
// description (workloads/models/model_description.hpp: parameter table, FLOPs, initial weights).
//
// Parameters and gradients live in one flat buffer each, in the description's canonical layout.
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
#include "workloads/models/dropout_mask.hpp"
#include "workloads/models/model_description.hpp"

namespace dtbench::cpu {

class Model {
 public:
  // The tables and initial weights of models::describe() and models::initialise() (BadInput on a bad spec).
  Model(const models::ModelSpec& spec, uint64_t seed);
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  const models::ModelSpec& spec() const;
  std::span<float> params();
  std::span<float> grads();
  std::span<float> buffers();  // batch-norm running means and variances
  const std::vector<models::ParamInfo>& param_table() const;
  const std::vector<models::ParamInfo>& buffer_table() const;  // kind bn; "X.running_mean", "X.running_var"

  // x: n images, N x C x H x W fp32 row-major (NCHW); labels: n ints in [0, classes). Returns the mean loss.
  // train = false: batch norm uses the running statistics and dropout is off. The primitives of each
  // (n, train) pair are built at its first use and replayed afterwards. x and labels are copied; they need not
  // outlive the call. Throws BadInput on n < 1 or a label out of range, before any work.
  double forward(const float* x, const int32_t* labels, int n, bool train);
  // Where the next training forwards sit (the step and their first sample's position in the step's global
  // batch): dropout draws each sample's mask from it (workloads/models/dropout_mask.hpp). A model with dropout
  // needs it before every training forward (std::logic_error otherwise).
  void set_batch_position(const models::BatchPosition& at);
  const float* logits() const;  // n x classes of the last forward
  int correct() const;          // images of the last forward whose argmax logit is the label
  int last_batch() const;

  // Gradients of the last (training) forward's mean loss, written over the gradient buffer (no
  // accumulation). on_ready(offset, size) is called as each parameter tensor's gradient becomes final, in
  // reverse layer order; every tensor is announced exactly once and its range is not written again in this
  // backward.
  // on_activity: K-FAC's statistics of this backward (Plan::observe_layer); empty: none taken.
  void backward(const OnReady& on_ready = {}, const OnLayerActivity& on_activity = {});

  // Convolution and fully connected FLOPs of one image's training step (ModelDescription's).
  double flops_per_sample_train() const;
  double rank_flops_per_sample_train() const;  // this shard's part (model parallelism), else the same
  double macs_per_sample() const;

  // Synchronised batch norm: training forwards take batch-norm statistics over all replicas, summed with
  // `sum` (an allreduce every replica calls at the same layers; workloads/cpu/sync_batch_norm.hpp). Empty:
  // per-replica statistics (the default). Training plans built before are dropped and rebuilt.
  void set_cross_replica_sum(CrossReplicaSum sum);
  // Tensor model parallelism (spec.shards > 1): the group whose ranks hold the other output units of the
  // convolution and fully connected layers (split_layer.hpp); every forward, training or not, calls its allgather.
  // Plans built before are dropped.
  void set_model_parallel_group(ModelParallelGroup group);

  // Pipeline parallelism (spec.stages > 1; workloads/models/pipeline_units.hpp). forward() takes the stage's input
  // (the previous stage's output, stage_input_floats(n) floats) and returns 0 on a stage before the last (the loss
  // is the last stage's); labels are read on the last stage only. Micro-batches in flight at once each have a
  // slot: forward and backward use the current slot's plans (built at their first use), so a later forward leaves
  // an earlier slot's activations for its backward. Without pipelining the slot stays 0.
  void set_slot(int slot);
  // A stage before the last: its output after this slot's last forward (stage_output_floats(n) floats, plain),
  // and, before backward(), the gradient of that output the next stage sent back.
  const float* stage_output();
  void set_output_gradient(const float* dy);
  // A stage after the first: the gradient of its input after this slot's last backward.
  const float* input_gradient();
  size_t stage_output_floats(int n) const;  // 0 on the last stage
  size_t stage_input_floats(int n) const;
  // Seconds of each pipeline unit's operations, forward and backward (the fastest call of each operation, while
  // profiling was on), in the slot-0 training plan for batch n; units this stage does not hold are 0.
  std::vector<double> unit_seconds(int n) const;

  // Per-operation timing of the plan for (n, train) (bench tool); profiling adds a stream wait per operation.
  void set_profiling(bool on);
  std::vector<OpTime> profile(int n, bool train) const;
  size_t num_reorders(int n, bool train) const;
  // Bytes of memory the plan for (n, train) holds (Plan::held_bytes; 0 before its first use).
  size_t plan_bytes(int n, bool train) const;
  // The largest plan_bytes of the training plans built so far, with model parallelism's exchange buffer.
  size_t training_plan_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtbench::cpu
