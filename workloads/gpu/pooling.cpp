#include "workloads/gpu/pooling.hpp"

#include <algorithm>

#include "workloads/gpu/lib_check.hpp"

namespace dtbench::gpu {

Pooling& Pooling::max(GpuPlan& plan, std::string name, const PoolShape& shape, const Tensor& x) {
  return plan.keep<Pooling>(plan, std::move(name), CUDNN_POOLING_MAX_DETERMINISTIC, shape.kernel, shape.kernel,
                            shape.pad, shape.stride, x);
}

Pooling& Pooling::global_average(GpuPlan& plan, std::string name, const Tensor& x) {
  // Window = the image, stride = the window: one output per channel; no padding, so both average modes
  // divide by H W.
  return plan.keep<Pooling>(plan, std::move(name), CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, x.h, x.w, 0,
                            std::max(x.h, x.w), x);
}

Pooling::Pooling(GpuPlan& plan, std::string name, cudnnPoolingMode_t mode, int window_h, int window_w, int pad,
                 int stride, const Tensor& x)
    : name_(std::move(name)), x_(x) {
  DTB_CUDNN(cudnnCreatePoolingDescriptor(desc_.out()));
  DTB_CUDNN(cudnnSetPooling2dDescriptor(desc_.get(), mode, CUDNN_NOT_PROPAGATE_NAN, window_h, window_w, pad, pad, stride,
                                        stride));
  int n = 0, c = 0, h = 0, w = 0;
  DTB_CUDNN(cudnnGetPooling2dForwardOutputDim(desc_.get(), x.desc, &n, &c, &h, &w));
  y_ = plan.alloc(n, c, h, w, x.dt);
  plan.forward(name_, [this, &plan]() {
    const float one = 1.0f, zero = 0.0f;
    DTB_CUDNN(cudnnPoolingForward(plan.ctx().cudnn(), desc_.get(), &one, x_.desc, x_.data, &zero, y_.desc, y_.data));
  });
}

Tensor Pooling::backward(GpuPlan& plan, const Tensor& dy) {
  Tensor dx = plan.alloc(x_.n, x_.c, x_.h, x_.w, x_.dt);
  plan.backward(name_ + ".bwd", [this, &plan, dy, dx]() {
    const float one = 1.0f, zero = 0.0f;
    DTB_CUDNN(cudnnPoolingBackward(plan.ctx().cudnn(), desc_.get(), &one, y_.desc, y_.data, dy.desc, dy.data, x_.desc,
                                   x_.data, &zero, dx.desc, dx.data));
  });
  return dx;
}

}  // namespace dtbench::gpu
