#include "workloads/gpu/linear.hpp"

#include "workloads/gpu/kernels.hpp"
#include "workloads/gpu/lib_check.hpp"

namespace dtbench::gpu {

Linear::Linear(GpuPlan& plan, std::string name, int out_features, size_t weight_offset, size_t bias_offset,
               const Tensor& x, bool f32_output)
    : name_(std::move(name)),
      out_(out_features),
      in_(x.c * x.h * x.w),
      weight_offset_(weight_offset),
      bias_offset_(bias_offset),
      x_(x) {
  y_ = plan.alloc(x.n, out_features, 1, 1, f32_output ? Precision::fp32 : plan.precision());
  plan.forward(name_, [this, &plan]() {
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType_t ct = cuda_type(plan.precision());
    DTB_CUBLAS(cublas_api().gemm_ex(plan.ctx().cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out_, x_.n, in_, &one,
                                    plan.param_c(weight_offset_), ct, in_, x_.data, ct, in_, &zero, y_.data,
                                    cuda_type(y_.dt), out_, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    kernels::add_bias_rows(y_.data, y_.dt, plan.weights().params + bias_offset_, x_.n, out_, plan.stream());
  });
}

Tensor Linear::backward(GpuPlan& plan, const Tensor& dy, bool need_dx) {
  // dy in the compute precision for the gemms (a rounded copy when it arrives as fp32 in fp16/bf16 plans).
  Tensor dyc = dy;
  if (dy.dt != plan.precision()) dyc = plan.alloc(dy.n, dy.c, dy.h, dy.w, plan.precision());
  plan.backward(name_ + ".bwd_weights", [this, &plan, dy, dyc]() {
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType_t ct = cuda_type(plan.precision());
    if (dyc.data != dy.data) {
      kernels::cast_from_f32(dyc.data, dyc.dt, static_cast<const float*>(dy.data), dy.count(), plan.stream());
    }
    float* g = plan.weights().grads;
    DTB_CUBLAS(cublas_api().gemm_ex(plan.ctx().cublas(), CUBLAS_OP_N, CUBLAS_OP_T, in_, out_, x_.n, &one, x_.data,
                                    ct, in_, dyc.data, ct, out_, &zero, g + weight_offset_, CUDA_R_32F, in_,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    kernels::bias_grad_rows(g + bias_offset_, dy.data, dy.dt, x_.n, out_, plan.stream());
  });
  plan.announce(bias_offset_, size_t(out_), false);
  plan.announce(weight_offset_, size_t(out_) * size_t(in_), false);
  if (!need_dx) return {};
  Tensor dx = plan.alloc(x_.n, x_.c, x_.h, x_.w, x_.dt);
  plan.backward(name_ + ".bwd_data", [this, &plan, dyc, dx]() {
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType_t ct = cuda_type(plan.precision());
    DTB_CUBLAS(cublas_api().gemm_ex(plan.ctx().cublas(), CUBLAS_OP_N, CUBLAS_OP_N, in_, x_.n, out_, &one,
                                    plan.param_c(weight_offset_), ct, in_, dyc.data, ct, out_, &zero, dx.data,
                                    cuda_type(dx.dt), in_, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
  return dx;
}

}  // namespace dtbench::gpu
