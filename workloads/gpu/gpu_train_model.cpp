#include "workloads/gpu/gpu_train_model.hpp"

#include <cstring>
#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/device.hpp"
#include "reducers/host_staged_reducer.hpp"
#include "reducers/nccl_reducer.hpp"
#include "reducers/registry.hpp"
#include "workloads/gpu/kernels.hpp"
#include "workloads/models/optimizer_table.hpp"

namespace dtbench {

namespace gpu {

namespace {
LossScalerOptions scaling_for(const models::ModelSpec& spec, LossScalerOptions o) {
  o.enabled = spec.precision == "fp16";
  return o;
}
}  // namespace

GpuTrainModel::GpuTrainModel(const models::ModelSpec& spec, uint64_t seed, int rank, const Json& optimizer_section,
                             LossScalerOptions scaling)
    : device_((gpu::validate(spec), select_device(local_rank_from_env(rank), "model"))),
      model_(spec, seed),
      scaler_(scaling_for(spec, scaling)),
      opt_(make_gpu_optimizer(optimizer_section, models::optimizer_table(model_.param_table()), model_.stream())) {}

GpuTrainModel::~GpuTrainModel() { cudaStreamSynchronize(model_.stream()); }

double GpuTrainModel::forward(const float* x, const int32_t* labels, int n, bool train) {
  return model_.forward(x, labels, n, train);
}

void GpuTrainModel::backward(const std::function<void(size_t, size_t)>& on_ready) {
  model_.set_loss_scale(static_cast<float>(scaler_.scale()));
  backward_timer_.start(model_.stream());
  model_.backward(on_ready);
  backward_timer_.stop(model_.stream());
  timed_ = true;
}

void GpuTrainModel::stage(const float* x, const int32_t* labels, int n) {
  const models::ModelSpec& spec = model_.spec();
  const size_t image = size_t(spec.in_c) * size_t(spec.in_h) * size_t(spec.in_w);
  if (!stager_ || stager_->max_images() < size_t(n))
    stager_ = std::make_unique<BatchStager>(size_t(n), image, model_.stream());
  std::memcpy(stager_->host_images(), x, size_t(n) * image * sizeof(float));
  std::memcpy(stager_->host_labels(), labels, size_t(n) * sizeof(int32_t));
  stager_->upload(n);
}

double GpuTrainModel::forward_staged(int n) {
  DeviceBatch b = stager_->take();
  if (b.n != n) throw std::logic_error("gpu: the staged batch has " + std::to_string(b.n) + " images, not " + std::to_string(n));
  // forward_device copies the batch into the plan's own input on the compute stream, so the slot can be
  // released as soon as that copy is enqueued (it is, when the loss comes back).
  const double loss = model_.forward_device(b.images, b.labels, n, true);
  stager_->release();
  return loss;
}

double GpuTrainModel::last_backward_device_seconds() { return timed_ ? backward_timer_.seconds() : -1.0; }

void GpuTrainModel::scale(std::span<float> device, float s) {
  kernels::scale_f32(device.data(), device.size(), s, model_.stream());
}

void GpuTrainModel::accumulate_grads(bool first) {
  const std::span<float> g = model_.grads();
  if (accumulated_.bytes() < g.size_bytes()) accumulated_ = DeviceBuffer(g.size_bytes());
  if (first) {
    DTB_CUDA(cudaMemcpyAsync(accumulated_.get(), g.data(), g.size_bytes(), cudaMemcpyDeviceToDevice, model_.stream()));
    return;
  }
  kernels::accumulate(accumulated_.get(), g.data(), g.size(), Precision::fp32, model_.stream());
}

void GpuTrainModel::finish_accumulation(size_t offset, size_t size, float s) {
  float* g = model_.grads().data() + offset;
  kernels::accumulate(g, accumulated_.as<float>() + offset, size, Precision::fp32, model_.stream());
  kernels::scale_f32(g, size, s, model_.stream());
}

std::span<float> GpuTrainModel::host_params() {
  host_params_.resize(model_.params().size());
  model_.download_params(host_params_);
  return host_params_;
}

void GpuTrainModel::push_host_params() { model_.upload_params(host_params_); }

std::span<float> GpuTrainModel::host_buffers() {
  host_buffers_.resize(model_.buffers().size());
  model_.download_buffers(host_buffers_);
  return host_buffers_;
}

void GpuTrainModel::push_host_buffers() { model_.upload_buffers(host_buffers_); }

bool GpuTrainModel::step_allowed() {
  if (!scaler_.options().enabled) return true;
  return scaler_.update(!model_.grads_finite());
}

void GpuTrainModel::load_extra_state(const Json& state) {
  if (state.is_object() && state.contains("loss_scaler")) scaler_.load_state(state["loss_scaler"]);
}

std::unique_ptr<Reducer> GpuTrainModel::make_reducer(const std::string& name, Comm& comm, const ReducerOptions& o) {
  if (name == "nccl") {
    auto r = std::make_unique<NcclReducer>(comm);
    r->set_producer_stream(model_.stream());
    return std::make_unique<Reducer>(std::move(r));
  }
  return std::make_unique<Reducer>(
      std::make_unique<HostStagedReducer>(comm, make_allreduce(name, comm, o), model_.stream()));
}

void GpuTrainModel::set_cross_replica_sum(models::CrossReplicaSum) {
  throw BadInput("/parallel/sync_bn: synchronised batch norm is implemented for the cpu backend only");
}

void GpuTrainModel::set_model_parallel_group(models::ModelParallelGroup) {
  throw BadInput("/parallel/model_parallel: tensor model parallelism is implemented for the cpu backend only");
}

}  // namespace gpu

void validate_gpu_model_spec(const models::ModelSpec& spec) { gpu::validate(spec); }

std::unique_ptr<TrainModel> make_gpu_train_model(const models::ModelSpec& spec, uint64_t seed, int rank,
                                                  const Json& optimizer_section) {
  return std::make_unique<gpu::GpuTrainModel>(spec, seed, rank, optimizer_section);
}

}  // namespace dtbench
