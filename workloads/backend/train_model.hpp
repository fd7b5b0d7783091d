// A model and its optimizer on one backend, as the trainer (workloads/train) drives them: /backend "cpu"
// (oneDNN, workloads/cpu) or "gpu" (cuDNN, workloads/gpu). Header only (target dtbench_backend), so both
// backends implement it without knowing the trainer, and the trainer links both backends. The trainer's loop, reducers, buckets,
// checkpoints and records are the same for both; only what is behind this interface differs.
//
// params(), grads() and buffers() are the flat fp32 buffers in canonical layout (models/model_description.hpp) where
// the reducer and the optimizer work: host memory on the cpu backend, device memory on the gpu backend.
// The trainer never reads their elements; it calls scale() and grads_norm_sq(), and uses the host copies
// (host_params() ... push_host_params()) for MPI broadcasts, checkpoints and --save-weights.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <span>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "optim/optimizer.hpp"
#include "reducers/reducer.hpp"
#include "workloads/models/dropout_mask.hpp"
#include "workloads/models/hooks.hpp"
#include "workloads/models/model_spec.hpp"

namespace dtbench {

class TrainModel {
 public:
  virtual ~TrainModel() = default;

  virtual std::string backend() const = 0;  // "cpu" | "gpu"
  // Whether params(), grads() and buffers() are host memory (GradientBuckets may then read them).
  virtual bool host_memory() const = 0;
  virtual std::span<float> params() = 0;
  virtual std::span<float> grads() = 0;
  virtual std::span<float> buffers() = 0;  // batch-norm running statistics
  virtual const std::vector<models::ParamInfo>& param_table() const = 0;
  virtual double flops_per_sample_train() const = 0;
  // This rank's part of them (a model-parallel shard's); the whole model's without model parallelism.
  virtual double rank_flops_per_sample_train() const { return flops_per_sample_train(); }
  // Bytes the training plans hold (activations, their gradients, workspaces, reordered weights: the largest
  // training plan's cpu::Plan::held_bytes); 0 where it is not measured (the gpu backend).
  virtual size_t activation_bytes() const { return 0; }

  // A step: forward (returns the mean loss; x and labels on the host) then backward, which calls
  // on_ready(offset, size) as each gradient tensor is final (cpu) or enqueued (gpu; reducers made by
  // make_reducer order themselves after the model's stream).
  virtual double forward(const float* x, const int32_t* labels, int n, bool train) = 0;
  // Before every training forward: the step and the position of its first sample in the step's global batch
  // (workloads/models/dropout_mask.hpp), from which dropout draws each sample's mask.
  virtual void set_batch_position(const models::BatchPosition& at) = 0;
  virtual void backward(const models::OnReady& on_ready) = 0;
  virtual int correct() const = 0;
  // Batch staging (gpu): stage() copies a training batch into pinned host memory and starts its upload on
  // a copy stream; forward_staged() is a training forward on the batch staged last. The trainer stages
  // step s+1's batch while step s's backward and allreduces run, so making and copying it overlaps the
  // device's work. Backends without it (cpu) say false and are never asked.
  virtual bool stages_batches() const { return false; }
  virtual void stage(const float* /*x*/, const int32_t* /*labels*/, int /*n*/) {}
  virtual double forward_staged(int /*n*/) { return 0.0; }
  // Seconds the device spent in the last backward, measured with CUDA events once it has finished; a
  // negative value where backward() itself is synchronous (cpu) and the host's stopwatch is exact.
  virtual double last_backward_device_seconds() { return -1.0; }

  // Gradient accumulation over m micro-batches (/batch/micro_batches > 1): after each backward but the
  // last, accumulate_grads(first) adds grads() into the model's accumulator (first: copies them there).
  // The last backward's on_ready calls finish_accumulation(offset, size, s) for each range as it is final,
  // before its allreduce may start: grads[range] = (grads[range] + accumulator[range]) * s.
  virtual void accumulate_grads(bool first) = 0;
  virtual void finish_accumulation(size_t offset, size_t size, float s) = 0;

  // flat *= s for one of the three flat buffers (the 1/K after an allreduce sum).
  virtual void scale(std::span<float> flat, float s) = 0;
  virtual double grads_norm_sq() = 0;
  // A device model's local gradient norms for the noise scale (workloads/train/noise_scale.hpp), which a host
  // model's buckets take themselves (so neither is called where host_memory()): range_norm_sq(slot, offset, size)
  // enqueues the sum of squares of grads()[offset, offset + size) into slot `slot` (one per bucket) before that
  // bucket's allreduce can overwrite it, and slots_norm_sq(slots) waits and returns the sum over slots 0..slots-1.
  virtual void range_norm_sq(size_t /*slot*/, size_t /*offset*/, size_t /*size*/) {
    throw std::logic_error("TrainModel::range_norm_sq: a model in device memory must take its local norms");
  }
  virtual double slots_norm_sq(size_t /*slots*/) {
    throw std::logic_error("TrainModel::slots_norm_sq: a model in device memory must take its local norms");
  }

  // Host copies: host_*() returns the current values in host memory (the buffers themselves on the cpu
  // backend); push_host_*() makes changes to that copy the model's (nothing to do on the cpu backend).
  virtual std::span<float> host_params() = 0;
  virtual void push_host_params() = 0;
  virtual std::span<float> host_buffers() = 0;
  virtual void push_host_buffers() = 0;

  // After the gradient allreduce: whether to apply this step. False only with fp16 dynamic loss scaling
  // when the gradients overflowed (the step is skipped and the scale lowered, as every rank decides alike).
  virtual bool step_allowed() = 0;
  // One optimizer step over params() with grads(). Throws optim::NonFiniteGradient on NaN/Inf.
  virtual void optimizer_step(double lr) = 0;
  virtual std::vector<uint8_t> optimizer_state() const = 0;
  virtual void load_optimizer_state(std::span<const uint8_t> bytes) = 0;
  // Backend state a checkpoint must carry besides the optimizer's (gpu fp16: the loss scaler's scale and
  // growth tracker); null where there is none.
  virtual Json extra_state() const { return nullptr; }
  virtual void load_extra_state(const Json& /*state*/) {}
  // K-FAC (optim/kfac.hpp): the curvature statistics this step's backwards took (host memory), which the trainer
  // averages across ranks in place before optimizer_step(); empty on steps without and for other optimizers.
  virtual std::span<float> curvature_statistics() { return {}; }
  // The optimizer as a host object, for asynchronous SGD's parameter server; nullptr where there is none.
  virtual optim::Optimizer* host_optimizer() { return nullptr; }

  // The reducer for this backend's gradient buffers ("nccl" only on the gpu backend).
  virtual std::unique_ptr<Reducer> make_reducer(const std::string& name, Comm& comm, const ReducerOptions& o) = 0;
  // Synchronised batch norm (workloads/cpu/sync_batch_norm.hpp); the cpu backend only.
  virtual void set_cross_replica_sum(models::CrossReplicaSum sum) = 0;
  // Tensor model parallelism (workloads/cpu/split_layer.hpp); the cpu backend only.
  virtual void set_model_parallel_group(models::ModelParallelGroup group) = 0;

  // Pipeline parallelism (spec.stages > 1; workloads/train/pipeline.hpp), the cpu backend only (config rules
  // refuse the others): the micro-batch slot that forward() and backward() use, the stage's output and input
  // gradient, and the gradient of the output from the next stage (workloads/cpu/model.hpp has the contract).
  virtual void set_slot(int /*slot*/) { throw std::logic_error("pipeline parallelism: cpu backend only"); }
  virtual const float* stage_output() { throw std::logic_error("pipeline parallelism: cpu backend only"); }
  virtual void set_output_gradient(const float* /*dy*/) { throw std::logic_error("pipeline parallelism: cpu backend only"); }
  virtual const float* input_gradient() { throw std::logic_error("pipeline parallelism: cpu backend only"); }
  virtual size_t stage_output_floats(int /*n*/) const { return 0; }
  virtual size_t stage_input_floats(int /*n*/) const { return 0; }
};

// Pipeline parallelism's measured layer costs: the seconds of each pipeline unit (models::pipeline_units) in a
// training step of batch n on the cpu backend, the fastest of `steps` profiled steps on synthetic inputs (and, before
// the last stage, a synthetic output gradient), forward and backward together. `spec` is the whole model (one
// stage) or a stage of it; the units it does not hold are 0, so ranks that each time some units can add theirs.
std::vector<double> measure_cpu_unit_seconds(const models::ModelSpec& spec, int n, int steps, uint64_t seed);

// cpu: cpu::Model (workloads/cpu/cpu_train_model.cpp) and optim::make_optimizer(optimizer_section).
std::unique_ptr<TrainModel> make_cpu_train_model(const models::ModelSpec& spec, uint64_t seed,
                                                  const Json& optimizer_section);
// gpu: gpu::GpuTrainModel (workloads/gpu/gpu_train_model.hpp): one device per rank (from the local rank),
// the cuDNN model and the fused optimizers (optim/gpu). In dtbench_gpu, built only with CUDA (DTBENCH_HAVE_CUDA).
std::unique_ptr<TrainModel> make_gpu_train_model(const models::ModelSpec& spec, uint64_t seed, int rank,
                                                  const Json& optimizer_section);
// gpu::validate: models::validate with fp16 allowed. Needs no device.
void validate_gpu_model_spec(const models::ModelSpec& spec);

}  // namespace dtbench
