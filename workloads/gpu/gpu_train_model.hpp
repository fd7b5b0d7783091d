// /backend "gpu" behind the trainer's TrainModel interface (workloads/backend/train_model.hpp): the one GPU
// adapter. It selects the rank's device and holds the cuDNN model (GpuModel), the fused optimizer
// (optim/gpu), the fp16 loss scaler, the batch stager and the backward's event timer, and makes the
// reducers for device buffers.
//
// params(), grads() and buffers() are device spans: reducers and the fused optimizer work on them, the
// host never loops over them. Host mirrors serve what the trainer does on the host (the initial MPI_Bcast
// of the weights, checkpoints, --save-weights): host_params() copies the device weights into the mirror and
// returns it, push_host_params() copies the mirror back after the caller changed it (likewise for buffers).
// scale() (the 1/K after the allreduce sum) and grads_norm_sq() run on the device; step_allowed(), after the
// allreduce, finds an fp16 overflow, updates the scaler and says whether to step.
//
// Timing: forward() returns the loss, so it waits for the device and the host's stopwatch is exact.
// backward() only enqueues; CUDA events around it give the device time (last_backward_device_seconds),
// which the trainer puts in the record's backward column once the step's allreduces have finished.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/cuda/device.hpp"
#include "core/cuda/event_timer.hpp"
#include "optim/gpu/fused_optimizer.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/gpu/batch_stager.hpp"
#include "workloads/gpu/gpu_model.hpp"
#include "workloads/gpu/loss_scaler.hpp"

namespace dtbench::gpu {

class GpuTrainModel final : public TrainModel {
 public:
  // Selects this rank's device (local_rank_from_env(rank) mod the device count; BadInput "model: no CUDA
  // device: ..." without one, exit 2), builds the model, then the fused optimizer named by the resolved
  // "/optimizer" section. fp16 enables the loss scaler (PyTorch's defaults unless `scaling` says
  // otherwise); fp32 and bf16 leave it disabled.
  GpuTrainModel(const models::ModelSpec& spec, uint64_t seed, int rank, const Json& optimizer_section,
                LossScalerOptions scaling = {});
  // Waits for the model's stream: the optimizer state, the accumulator and the staged batches its work uses
  // go before model_ (declared before them), whose own synchronise would come too late for them.
  ~GpuTrainModel() override;

  std::string backend() const override { return "gpu"; }
  bool host_memory() const override { return false; }
  std::span<float> params() override { return model_.params(); }
  std::span<float> grads() override { return model_.grads(); }
  std::span<float> buffers() override { return model_.buffers(); }
  const std::vector<models::ParamInfo>& param_table() const override { return model_.param_table(); }
  double flops_per_sample_train() const override { return model_.flops_per_sample_train(); }

  double forward(const float* x, const int32_t* labels, int n, bool train) override;
  void set_batch_position(const models::BatchPosition& at) override { model_.set_batch_position(at); }
  // Sets the loss scale from the scaler, then enqueues the backward between the timer's events.
  void backward(const std::function<void(size_t, size_t)>& on_ready) override;
  int correct() const override { return model_.correct(); }

  bool stages_batches() const override { return true; }
  void stage(const float* x, const int32_t* labels, int n) override;
  double forward_staged(int n) override;
  double last_backward_device_seconds() override;

  // The accumulator is a device buffer; both enqueue on the model's stream (a reducer started after
  // finish_accumulation orders itself after it).
  void accumulate_grads(bool first) override;
  void finish_accumulation(size_t offset, size_t size, float s) override;

  // x *= s on the device, on the model's stream, for any device span (local SGD's model average divides
  // params() and buffers() by K after their allreduce).
  void scale(std::span<float> device, float s) override;
  double grads_norm_sq() override { return model_.grads_norm_sq(); }
  void range_norm_sq(size_t slot, size_t offset, size_t size) override { model_.range_norm_sq(slot, offset, size); }
  double slots_norm_sq(size_t slots) override { return model_.slots_sum(slots); }

  // Host mirrors (each call waits for the device).
  std::span<float> host_params() override;
  void push_host_params() override;
  std::span<float> host_buffers() override;
  void push_host_buffers() override;

  // After the allreduce (every rank sees the same gradients, so every rank decides the same): with the
  // scaler enabled, checks the gradients for Inf/NaN and returns whether the optimizer step should run
  // (false: skip it; the scale went down). With the scaler disabled it returns true without a check (the
  // optimizer's own non-finite check reports a divergence).
  bool step_allowed() override;
  void optimizer_step(double lr) override { opt_->step(model_.params(), model_.grads(), lr); }
  std::vector<uint8_t> optimizer_state() const override { return opt_->save_state(); }
  void load_optimizer_state(std::span<const uint8_t> bytes) override { opt_->load_state(bytes); }
  Json extra_state() const override { return {{"loss_scaler", scaler_.save_state()}}; }
  void load_extra_state(const Json& state) override;

  // "nccl" is the NCCL reducer; any other name is that reducer on host copies (HostStagedReducer), so every
  // reducer stays comparable on GPUs. Both order themselves after the model's stream.
  std::unique_ptr<Reducer> make_reducer(const std::string& name, Comm& comm, const ReducerOptions& o) override;
  void set_cross_replica_sum(models::CrossReplicaSum) override;
  void set_model_parallel_group(models::ModelParallelGroup) override;

  int device() const { return device_; }
  cudaStream_t stream() const { return model_.stream(); }
  GpuModel& model() { return model_; }
  const LossScaler& scaler() const { return scaler_; }

 private:
  int device_;
  GpuModel model_;
  LossScaler scaler_;
  std::unique_ptr<GpuOptimizer> opt_;
  std::unique_ptr<BatchStager> stager_;
  EventTimer backward_timer_;
  bool timed_ = false;
  std::vector<float> host_params_, host_buffers_;
  DeviceBuffer accumulated_;  // the micro-batches' gradient sum so far
};

}  // namespace dtbench::gpu
