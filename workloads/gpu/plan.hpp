// A GPU plan: every descriptor, buffer and operation of one network for one batch shape, built once and
// replayed (the GPU twin of workloads/cpu/plan.hpp).
//
// Activations are NCHW, fully packed, in the compute precision, so a GPU tensor has the same element
// order as the CPU backend's plain layout and tests compare them directly. Layers are created with
// plan.keep<Layer>(plan, name, ..., x): the constructor allocates the layer's outputs and appends its
// forward operations, layer.backward(plan, dy) appends its backward operations (called in reverse layer
// order). An operation is a host function that enqueues work on the model's stream and returns; running a
// list enqueues the whole pass without waiting for the device.
//
// Parameters are not owned by the plan: they live in the model's flat device buffers in canonical
// (PyTorch) layout and order, the same as the CPU model's (WeightBuffers). A backward operation
// announce(offset, size, ...) marks a gradient range final: it turns the range into unscaled fp32 (a
// cast from the compute-precision copy, or a scale in place, see announce) and calls on_ready. on_ready
// runs when the producing work has been enqueued, not when it has finished: a consumer on another stream
// must order itself after the model's stream (an event recorded on it), as the NCCL reducer does.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/device.hpp"
#include "workloads/gpu/context.hpp"
#include "workloads/gpu/precision.hpp"

namespace dtbench::gpu {

using OnReady = std::function<void(size_t offset, size_t size)>;

// A device activation tensor of a plan (NCHW, packed); the memory and the descriptor belong to the plan.
struct Tensor {
  void* data = nullptr;
  int n = 0, c = 0, h = 0, w = 0;
  Precision dt = Precision::fp32;
  cudnnTensorDescriptor_t desc = nullptr;
  size_t count() const { return size_t(n) * size_t(c) * size_t(h) * size_t(w); }
  size_t bytes() const { return count() * element_size(dt); }
};

// The model's flat device buffers. params_c / grads_c are the compute-precision copies of the whole
// parameter and gradient buffers (the same pointers as params / grads in fp32).
struct WeightBuffers {
  float* params = nullptr;
  void* params_c = nullptr;
  float* grads = nullptr;
  void* grads_c = nullptr;
  float* buffers = nullptr;
};

class GpuPlan {
 public:
  GpuPlan(GpuContext& ctx, int batch, bool training, Precision precision, const WeightBuffers& weights);
  GpuPlan(const GpuPlan&) = delete;
  GpuPlan& operator=(const GpuPlan&) = delete;

  GpuContext& ctx() const { return ctx_; }
  cudaStream_t stream() const { return ctx_.stream(); }
  int batch() const { return batch_; }
  bool training() const { return training_; }
  Precision precision() const { return precision_; }
  const WeightBuffers& weights() const { return weights_; }
  // Element `offset` of the compute-precision copies.
  const void* param_c(size_t offset) const;
  void* grad_c(size_t offset) const;

  // A zero-filled tensor owned by the plan.
  Tensor alloc(int n, int c, int h, int w, Precision dt);
  void* alloc_bytes(size_t bytes);

  void forward(std::string name, std::function<void()> op);
  void backward(std::string name, std::function<void()> op);

  // Backward operation: the gradient range [offset, offset + size) is final. in_compute_precision: the
  // layer wrote it into grads_c (cast to fp32 into grads, times the unscale factor); otherwise it is fp32
  // in grads already (scaled in place when the factor is not 1).
  void announce(size_t offset, size_t size, bool in_compute_precision);
  // 1 / loss scale, read by the announce operations when they run.
  void set_grad_unscale(float s) { grad_unscale_ = s; }

  template <class T, class... A>
  T& keep(A&&... args) {
    auto p = std::make_shared<T>(std::forward<A>(args)...);
    T& ref = *p;
    kept_.push_back(std::move(p));
    return ref;
  }

  void run_forward();
  void run_backward(const OnReady& on_ready);
  size_t forward_ops() const { return forward_.size(); }
  size_t backward_ops() const { return backward_.size(); }

 private:
  struct Op {
    std::string name;
    std::function<void()> run;
  };
  GpuContext& ctx_;
  int batch_;
  bool training_;
  Precision precision_;
  WeightBuffers weights_;
  float grad_unscale_ = 1.0f;
  const OnReady* on_ready_ = nullptr;  // set only while run_backward runs
  std::vector<Op> forward_, backward_;
  std::vector<DeviceBuffer> memory_;
  std::vector<std::unique_ptr<TensorDesc>> descs_;
  std::vector<std::shared_ptr<void>> kept_;
};

}  // namespace dtbench::gpu
