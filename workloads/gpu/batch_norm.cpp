#include "workloads/gpu/batch_norm.hpp"

#include "workloads/gpu/lib_check.hpp"

namespace dtbench::gpu {

BatchNorm::BatchNorm(GpuPlan& plan, std::string name, const BatchNormShape& shape, size_t gamma_offset,
                     size_t beta_offset, size_t running_offset, const Tensor& x)
    : name_(std::move(name)),
      shape_(shape),
      gamma_offset_(gamma_offset),
      beta_offset_(beta_offset),
      running_offset_(running_offset),
      x_(x) {
  if (x.c != shape.channels) throw std::logic_error(name_ + ": input has " + std::to_string(x.c) + " channels");
  DTB_CUDNN(cudnnCreateTensorDescriptor(bn_desc_.out()));
  DTB_CUDNN(cudnnDeriveBNTensorDescriptor(bn_desc_.get(), x.desc, CUDNN_BATCHNORM_SPATIAL));
  y_ = plan.alloc(x.n, x.c, x.h, x.w, x.dt);
  if (plan.training()) saved_ = static_cast<float*>(plan.alloc_bytes(2 * size_t(shape.channels) * sizeof(float)));

  plan.forward(name_, [this, &plan]() {
    const float one = 1.0f, zero = 0.0f;
    const WeightBuffers& w = plan.weights();
    float* running = w.buffers + running_offset_;
    const size_t c = size_t(shape_.channels);
    if (plan.training()) {
      DTB_CUDNN(cudnnBatchNormalizationForwardTraining(
          plan.ctx().cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_.desc, x_.data, y_.desc, y_.data, bn_desc_.get(),
          w.params + gamma_offset_, w.params + beta_offset_, shape_.momentum, running, running + c, shape_.eps,
          saved_, saved_ + c));
    } else {
      DTB_CUDNN(cudnnBatchNormalizationForwardInference(plan.ctx().cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                        x_.desc, x_.data, y_.desc, y_.data, bn_desc_.get(),
                                                        w.params + gamma_offset_, w.params + beta_offset_, running,
                                                        running + c, shape_.eps));
    }
    if (shape_.fuse_relu) relu_forward_in_place(plan, relu_, y_);
  });
}

Tensor BatchNorm::backward(GpuPlan& plan, const Tensor& dy) {
  Tensor dx = plan.alloc(x_.n, x_.c, x_.h, x_.w, x_.dt);
  Tensor dy_bn = dy;
  if (shape_.fuse_relu) dy_bn = plan.alloc(x_.n, x_.c, x_.h, x_.w, x_.dt);
  plan.backward(name_ + ".bwd", [this, &plan, dy, dy_bn, dx]() {
    if (shape_.fuse_relu) relu_backward(plan, relu_, y_, dy, dy_bn);
    const float one = 1.0f, zero = 0.0f;
    const WeightBuffers& w = plan.weights();
    const size_t c = size_t(shape_.channels);
    DTB_CUDNN(cudnnBatchNormalizationBackward(plan.ctx().cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero,
                                              x_.desc, x_.data, dy_bn.desc, dy_bn.data, dx.desc, dx.data, bn_desc_.get(),
                                              w.params + gamma_offset_, w.grads + gamma_offset_,
                                              w.grads + beta_offset_, shape_.eps, saved_, saved_ + c));
  });
  plan.announce(gamma_offset_, size_t(shape_.channels), false);
  plan.announce(beta_offset_, size_t(shape_.channels), false);
  return dx;
}

}  // namespace dtbench::gpu
