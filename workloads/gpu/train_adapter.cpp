#include "workloads/gpu/train_adapter.hpp"

#include "core/cuda/device.hpp"
#include "reducers/nccl_reducer.hpp"
#include "reducers/registry.hpp"
#include "workloads/gpu/kernels.hpp"

namespace dtbench::gpu {

namespace {
LossScalerOptions scaling_for(const models::ModelSpec& spec, LossScalerOptions o) {
  o.enabled = spec.precision == "fp16";
  return o;
}
}  // namespace

GpuTrainingModel::GpuTrainingModel(const models::ModelSpec& spec, uint64_t seed, int rank, LossScalerOptions scaling)
    : device_((gpu::validate(spec), select_device(local_rank_from_env(rank), "model"))),
      model_(spec, seed),
      scaler_(scaling_for(spec, scaling)) {}

std::span<float> GpuTrainingModel::host_params() {
  host_params_.resize(model_.params().size());
  model_.download_params(host_params_);
  return host_params_;
}

void GpuTrainingModel::push_host_params() { model_.upload_params(host_params_); }

std::span<float> GpuTrainingModel::host_buffers() {
  host_buffers_.resize(model_.buffers().size());
  model_.download_buffers(host_buffers_);
  return host_buffers_;
}

void GpuTrainingModel::push_host_buffers() { model_.upload_buffers(host_buffers_); }

void GpuTrainingModel::backward(const OnReady& on_ready) {
  model_.set_loss_scale(static_cast<float>(scaler_.scale()));
  model_.backward(on_ready);
}

void GpuTrainingModel::scale(std::span<float> device, float s) {
  kernels::scale_f32(device.data(), device.size(), s, stream());
}

bool GpuTrainingModel::apply_loss_scaling() {
  if (!scaler_.options().enabled) return true;
  return scaler_.update(!model_.grads_finite());
}

std::unique_ptr<Reducer> make_gpu_reducer(const std::string& name, Comm& comm, const ReducerOptions& options,
                                          cudaStream_t producer) {
  if (name == "nccl") {
    auto r = std::make_unique<NcclReducer>(comm);
    r->set_producer_stream(producer);
    return std::make_unique<Reducer>(std::move(r));
  }
  return std::make_unique<Reducer>(
      std::make_unique<HostStagedReducer>(comm, make_allreduce(name, comm, options), producer));
}

}  // namespace dtbench::gpu
