// Rectified linear unit through cuDNN (cudnnActivationForward / Backward, CUDNN_ACTIVATION_RELU), the
// GPU twin of workloads/cpu/relu.hpp: y = max(x, 0); dx = dy where y > 0, else 0.
//
// Relu::apply runs in place (x == y, which cuDNN allows), as the batch norm fused with its ReLU does; the
// backward then reads only y. Passing y where cuDNN asks for x is exact for ReLU: x > 0 exactly when
// y = max(x, 0) > 0.
#pragma once

#include <cudnn.h>

#include <string>

#include "workloads/gpu/plan.hpp"

namespace dtbench::gpu {

class ReluDesc {
 public:
  ReluDesc();
  cudnnActivationDescriptor_t get() const { return d_.get(); }

 private:
  CudnnActivationDesc d_;
};

// Enqueues y = max(y, 0) in place / dx = y > 0 ? dy : 0 on the plan's stream (used inside operations).
void relu_forward_in_place(GpuPlan& plan, const ReluDesc& desc, const Tensor& y);
void relu_backward(GpuPlan& plan, const ReluDesc& desc, const Tensor& y, const Tensor& dy, const Tensor& dx);

// The standalone layer (the MLP's hidden activation): its own output tensor.
class Relu {
 public:
  Relu(GpuPlan& plan, std::string name, const Tensor& x);
  const Tensor& y() const { return y_; }
  Tensor backward(GpuPlan& plan, const Tensor& dy);

 private:
  std::string name_;
  ReluDesc desc_;
  Tensor y_;
};

}  // namespace dtbench::gpu
