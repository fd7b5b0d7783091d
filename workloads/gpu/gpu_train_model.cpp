// /backend "gpu": GpuTrainingModel (train_adapter.hpp) and a fused GPU optimizer behind the trainer's
// TrainModel interface (workloads/backend/train_model.hpp).
//
// Timing: forward() returns the loss, so it waits for the device and the host's stopwatch is exact.
// backward() only enqueues; CUDA events around it give the device time (last_backward_device_seconds),
// which the trainer puts in the record's backward column once the step's allreduces have finished.
#include <cstring>

#include "core/cuda/event_timer.hpp"
#include "workloads/gpu/batch_stager.hpp"
#include "workloads/gpu/fused_optimizer.hpp"
#include "workloads/gpu/train_adapter.hpp"
#include "workloads/backend/train_model.hpp"
#include "workloads/models/optimizer_table.hpp"

namespace dtbench {

namespace {

class GpuTrainModel final : public TrainModel {
 public:
  GpuTrainModel(const models::ModelSpec& spec, uint64_t seed, int rank, const Json& optimizer_section)
      : m_(spec, seed, rank),
        opt_(gpu::make_gpu_optimizer(optimizer_section, models::optimizer_table(m_.param_table()), m_.stream())) {}

  std::string backend() const override { return "gpu"; }
  bool host_memory() const override { return false; }
  std::span<float> params() override { return m_.params(); }
  std::span<float> grads() override { return m_.grads(); }
  std::span<float> buffers() override { return m_.buffers(); }
  const std::vector<models::ParamInfo>& param_table() const override { return m_.param_table(); }
  double flops_per_sample_train() const override { return m_.flops_per_sample_train(); }

  double forward(const float* x, const int32_t* labels, int n, bool train) override {
    return m_.forward(x, labels, n, train);
  }
  void backward(const std::function<void(size_t, size_t)>& on_ready) override {
    backward_timer_.start(m_.stream());
    m_.backward(on_ready);
    backward_timer_.stop(m_.stream());
    timed_ = true;
  }
  int correct() const override { return m_.correct(); }

  bool stages_batches() const override { return true; }
  void stage(const float* x, const int32_t* labels, int n) override {
    const models::ModelSpec& spec = m_.spec();
    const size_t image = size_t(spec.in_c) * size_t(spec.in_h) * size_t(spec.in_w);
    if (!stager_ || stager_->max_images() < size_t(n))
      stager_ = std::make_unique<gpu::BatchStager>(size_t(n), image, m_.stream());
    std::memcpy(stager_->host_images(), x, size_t(n) * image * sizeof(float));
    std::memcpy(stager_->host_labels(), labels, size_t(n) * sizeof(int32_t));
    stager_->upload(n);
  }
  double forward_staged(int n) override {
    gpu::DeviceBatch b = stager_->take();
    if (b.n != n) throw std::logic_error("gpu: the staged batch has " + std::to_string(b.n) + " images, not " + std::to_string(n));
    // forward_device copies the batch into the plan's own input on the compute stream, so the slot can be
    // released as soon as that copy is enqueued (it is, when the loss comes back).
    const double loss = m_.model().forward_device(b.images, b.labels, n, true);
    stager_->release();
    return loss;
  }
  double last_backward_device_seconds() override { return timed_ ? backward_timer_.seconds() : -1.0; }

  void scale(std::span<float> flat, float s) override { m_.scale(flat, s); }
  double grads_norm_sq() override { return m_.grads_norm_sq(); }

  std::span<float> host_params() override { return m_.host_params(); }
  void push_host_params() override { m_.push_host_params(); }
  std::span<float> host_buffers() override { return m_.host_buffers(); }
  void push_host_buffers() override { m_.push_host_buffers(); }

  bool step_allowed() override { return m_.apply_loss_scaling(); }
  void optimizer_step(double lr) override { opt_->step(m_.params(), m_.grads(), lr); }
  std::vector<uint8_t> optimizer_state() const override { return opt_->save_state(); }
  Json extra_state() const override { return {{"loss_scaler", m_.scaler().save_state()}}; }
  void load_extra_state(const Json& state) override {
    if (state.is_object() && state.contains("loss_scaler")) m_.scaler().load_state(state["loss_scaler"]);
  }
  void load_optimizer_state(std::span<const uint8_t> bytes) override { opt_->load_state(bytes); }

  std::unique_ptr<Reducer> make_reducer(const std::string& name, Comm& comm, const ReducerOptions& o) override {
    return gpu::make_gpu_reducer(name, comm, o, m_.stream());
  }
  void set_cross_replica_sum(cpu::CrossReplicaSum) override {
    throw BadInput("/parallel/sync_bn: synchronised batch norm is implemented for the cpu backend only");
  }

 private:
  gpu::GpuTrainingModel m_;
  std::unique_ptr<gpu::GpuOptimizer> opt_;
  std::unique_ptr<gpu::BatchStager> stager_;
  gpu::EventTimer backward_timer_;
  bool timed_ = false;
};

}  // namespace

void validate_gpu_model_spec(const models::ModelSpec& spec) { gpu::validate(spec); }

std::unique_ptr<TrainModel> make_gpu_train_model(const models::ModelSpec& spec, uint64_t seed, int rank,
                                                  const Json& optimizer_section) {
  return std::make_unique<GpuTrainModel>(spec, seed, rank, optimizer_section);
}

}  // namespace dtbench
