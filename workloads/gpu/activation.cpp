#include "workloads/gpu/activation.hpp"

#include "workloads/gpu/lib_check.hpp"

namespace dtbench::gpu {

ReluDesc::ReluDesc() {
  DTB_CUDNN(cudnnCreateActivationDescriptor(d_.out()));
  DTB_CUDNN(cudnnSetActivationDescriptor(d_.get(), CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
}

void relu_forward_in_place(GpuPlan& plan, const ReluDesc& desc, const Tensor& y) {
  const float one = 1.0f, zero = 0.0f;
  DTB_CUDNN(cudnnActivationForward(plan.ctx().cudnn(), desc.get(), &one, y.desc, y.data, &zero, y.desc, y.data));
}

void relu_backward(GpuPlan& plan, const ReluDesc& desc, const Tensor& y, const Tensor& dy, const Tensor& dx) {
  const float one = 1.0f, zero = 0.0f;
  DTB_CUDNN(cudnnActivationBackward(plan.ctx().cudnn(), desc.get(), &one, y.desc, y.data, dy.desc, dy.data, y.desc,
                                    y.data, &zero, dx.desc, dx.data));
}

Relu::Relu(GpuPlan& plan, std::string name, const Tensor& x) : name_(std::move(name)) {
  y_ = plan.alloc(x.n, x.c, x.h, x.w, x.dt);
  plan.forward(name_, [this, &plan, x]() {
    const float one = 1.0f, zero = 0.0f;
    DTB_CUDNN(cudnnActivationForward(plan.ctx().cudnn(), desc_.get(), &one, x.desc, x.data, &zero, y_.desc, y_.data));
  });
}

Tensor Relu::backward(GpuPlan& plan, const Tensor& dy) {
  Tensor dx = plan.alloc(y_.n, y_.c, y_.h, y_.w, y_.dt);
  plan.backward(name_ + ".bwd", [this, &plan, dy, dx]() { relu_backward(plan, desc_, y_, dy, dx); });
  return dx;
}

}  // namespace dtbench::gpu
