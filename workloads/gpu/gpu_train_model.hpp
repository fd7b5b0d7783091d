// The GPU model as the trainer needs it, for /backend "gpu" (wrapped as a TrainModel in gpu_train_model.cpp).
//
// GpuTrainingModel selects the rank's device and holds the model and its fp16 loss scaler. params(), grads()
// and buffers() are device spans: hand them to reducers and to the fused optimizer, never loop over them on
// the host. Host mirrors serve what the trainer does on the host (the initial MPI_Bcast of the weights,
// checkpoints, --save-weights): host_params() copies the device weights into the mirror and returns it,
// push_host_params() copies the mirror back after the caller changed it (likewise for buffers). scale()
// (the 1/K after the allreduce sum) and grads_norm_sq run on the device; apply_loss_scaling, after the
// allreduce, finds an overflow, updates the scaler and says whether to step.
//
// make_gpu_optimizer (fused_optimizer.hpp) replaces optim::make_optimizer (same step/save_state/
// load_state names); make_gpu_reducer replaces make_reducer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reducers/reducer.hpp"
#include "workloads/gpu/batch_stager.hpp"
#include "workloads/gpu/gpu_model.hpp"
#include "workloads/gpu/loss_scaler.hpp"

namespace dtbench::gpu {

class GpuTrainingModel {
 public:
  // Selects this rank's device (local_rank_from_env(rank) mod the device count; BadInput "model: no CUDA
  // device: ..." without one, exit 2), then builds the model. fp16 enables the loss scaler (PyTorch's
  // defaults unless `scaling` says otherwise); fp32 and bf16 leave it disabled.
  GpuTrainingModel(const models::ModelSpec& spec, uint64_t seed, int rank, LossScalerOptions scaling = {});

  int device() const { return device_; }
  cudaStream_t stream() const { return model_.stream(); }
  GpuModel& model() { return model_; }
  const models::ModelSpec& spec() const { return model_.spec(); }

  // Device spans.
  std::span<float> params() { return model_.params(); }
  std::span<float> grads() { return model_.grads(); }
  std::span<float> buffers() { return model_.buffers(); }
  const std::vector<models::ParamInfo>& param_table() const { return model_.param_table(); }
  const std::vector<models::ParamInfo>& buffer_table() const { return model_.buffer_table(); }

  // Host mirrors (each call waits for the device).
  std::span<float> host_params();
  void push_host_params();
  std::span<float> host_buffers();
  void push_host_buffers();

  double forward(const float* x, const int32_t* labels, int n, bool train) { return model_.forward(x, labels, n, train); }
  // Sets the loss scale from the scaler, then enqueues the backward.
  void backward(const OnReady& on_ready = {});
  int correct() const { return model_.correct(); }
  const float* logits() { return model_.logits(); }
  double flops_per_sample_train() const { return model_.flops_per_sample_train(); }

  // x *= s on the device, on the model's stream, for any device span (local SGD's model average divides
  // params() and buffers() by K after their allreduce).
  void scale(std::span<float> device, float s);
  double grads_norm_sq() { return model_.grads_norm_sq(); }

  // After the allreduce (every rank sees the same gradients, so every rank decides the same): with the
  // scaler enabled, checks the gradients for Inf/NaN and returns whether the optimizer step should run
  // (false: skip it; the scale went down). With the scaler disabled it returns true without a check (the
  // optimizer's own non-finite check reports a divergence).
  bool apply_loss_scaling();
  const LossScaler& scaler() const { return scaler_; }
  LossScaler& scaler() { return scaler_; }

 private:
  int device_;
  GpuModel model_;
  LossScaler scaler_;
  std::vector<float> host_params_, host_buffers_;
};

// The reducer for device gradient buffers: "nccl" is the NCCL reducer; any other name is that reducer on
// host copies (HostStagedReducer), so every reducer stays comparable on GPUs. producer: the stream the
// gradients are written on (the model's), which the reducer orders itself after.
std::unique_ptr<Reducer> make_gpu_reducer(const std::string& name, Comm& comm, const ReducerOptions& options,
                                          cudaStream_t producer);

}  // namespace dtbench::gpu
