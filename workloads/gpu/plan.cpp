#include "workloads/gpu/plan.hpp"

#include "core/cuda/cuda_check.hpp"
#include "workloads/gpu/kernels.hpp"

namespace dtbench::gpu {

GpuPlan::GpuPlan(GpuContext& ctx, int batch, bool training, Precision precision, const WeightBuffers& weights)
    : ctx_(ctx), batch_(batch), training_(training), precision_(precision), weights_(weights) {}

const void* GpuPlan::param_c(size_t offset) const {
  return static_cast<const char*>(weights_.params_c) + offset * element_size(precision_);
}

void* GpuPlan::grad_c(size_t offset) const {
  return static_cast<char*>(weights_.grads_c) + offset * element_size(precision_);
}

Tensor GpuPlan::alloc(int n, int c, int h, int w, Precision dt) {
  Tensor t;
  t.n = n, t.c = c, t.h = h, t.w = w, t.dt = dt;
  memory_.emplace_back(t.bytes());
  t.data = memory_.back().get();
  descs_.push_back(std::make_unique<TensorDesc>(n, c, h, w, cudnn_type(dt)));
  t.desc = descs_.back()->get();
  return t;
}

void* GpuPlan::alloc_bytes(size_t bytes) {
  memory_.emplace_back(bytes);
  return memory_.back().get();
}

void GpuPlan::forward(std::string name, std::function<void()> op) { forward_.push_back({std::move(name), std::move(op)}); }

void GpuPlan::backward(std::string name, std::function<void()> op) {
  backward_.push_back({std::move(name), std::move(op)});
}

void GpuPlan::announce(size_t offset, size_t size, bool in_compute_precision) {
  backward("announce", [this, offset, size, in_compute_precision]() {
    float* g = weights_.grads + offset;
    if (in_compute_precision && precision_ != Precision::fp32) {
      kernels::cast_to_f32(g, grad_c(offset), precision_, size, grad_unscale_, stream());
    } else if (grad_unscale_ != 1.0f) {
      kernels::scale_f32(g, size, grad_unscale_, stream());
    }
    if (on_ready_ != nullptr && *on_ready_) (*on_ready_)(offset, size);
  });
}

void GpuPlan::run_forward() {
  for (Op& op : forward_) op.run();
}

void GpuPlan::run_backward(const OnReady& on_ready) {
  on_ready_ = &on_ready;
  try {
    for (Op& op : backward_) op.run();
  } catch (...) {
    on_ready_ = nullptr;
    throw;
  }
  on_ready_ = nullptr;
}

}  // namespace dtbench::gpu
