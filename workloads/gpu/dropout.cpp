#include "workloads/gpu/dropout.hpp"

#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "workloads/gpu/kernels.hpp"

namespace dtbench::gpu {

Dropout::Dropout(GpuPlan& plan, std::string name, float p, uint64_t seed, const models::BatchPosition* position,
                 const Tensor& x)
    : name_(std::move(name)), p_(p), seed_(seed), position_(position), x_(x), host_mask_(x.count()) {
  if (!plan.training()) throw std::logic_error(name_ + ": dropout belongs to training plans only");
  y_ = plan.alloc(x.n, x.c, x.h, x.w, x.dt);
  mask_ = static_cast<uint8_t*>(plan.alloc_bytes(x.count()));
  DTB_CUDA(cudaEventCreateWithFlags(copied_.out(), cudaEventDisableTiming));
  DTB_CUDA(cudaEventRecord(copied_.get(), plan.stream()));
  plan.forward(name_, [this, &plan]() {
    DTB_CUDA(cudaEventSynchronize(copied_.get()));  // the previous step's copy has read the pinned mask
    uint8_t* m = host_mask_.as<uint8_t>();
    models::dropout_keep_mask(seed_, *position_, p_, size_t(x_.n), x_.count() / size_t(x_.n), m);
    DTB_CUDA(cudaMemcpyAsync(mask_, m, x_.count(), cudaMemcpyHostToDevice, plan.stream()));
    DTB_CUDA(cudaEventRecord(copied_.get(), plan.stream()));
    kernels::dropout_apply(y_.data, x_.data, mask_, x_.count(), 1.0f / (1.0f - p_), x_.dt, plan.stream());
  });
}

Tensor Dropout::backward(GpuPlan& plan, const Tensor& dy) {
  Tensor dx = plan.alloc(x_.n, x_.c, x_.h, x_.w, x_.dt);
  plan.backward(name_ + ".bwd", [this, &plan, dy, dx]() {
    kernels::dropout_apply(dx.data, dy.data, mask_, x_.count(), 1.0f / (1.0f - p_), x_.dt, plan.stream());
  });
  return dx;
}

}  // namespace dtbench::gpu
