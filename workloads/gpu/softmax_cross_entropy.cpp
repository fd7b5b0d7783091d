#include "workloads/gpu/softmax_cross_entropy.hpp"

#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "workloads/gpu/kernels.hpp"

namespace dtbench::gpu {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(GpuPlan& plan, std::string name, const Tensor& logits, float label_smoothing)
    : name_(std::move(name)), logits_(logits), smoothing_(label_smoothing), host_(3 * sizeof(double)) {
  if (logits.dt != Precision::fp32 || logits.h != 1 || logits.w != 1) {
    throw std::logic_error(name_ + ": needs N x K fp32 logits");
  }
  const size_t n = size_t(logits.n);
  labels_ = static_cast<int32_t*>(plan.alloc_bytes(n * sizeof(int32_t)));
  lse_ = static_cast<double*>(plan.alloc_bytes(n * sizeof(double)));
  row_loss_ = static_cast<double*>(plan.alloc_bytes(n * sizeof(double)));
  row_correct_ = static_cast<int*>(plan.alloc_bytes(n * sizeof(int)));
  result_ = static_cast<double*>(plan.alloc_bytes(3 * sizeof(double)));
  plan.forward(name_, [this, &plan]() {
    kernels::softmax_xent_forward(static_cast<const float*>(logits_.data), labels_, logits_.n, logits_.c, smoothing_,
                                  lse_, row_loss_, row_correct_, result_, plan.stream());
    DTB_CUDA(cudaMemcpyAsync(host_.get(), result_, 3 * sizeof(double), cudaMemcpyDeviceToHost, plan.stream()));
  });
  // The stream is synchronised in fetch(); the plan's stream is needed there.
  stream_ = plan.stream();
}

bool SoftmaxCrossEntropy::fetch(int* bad_row) {
  DTB_CUDA(cudaStreamSynchronize(stream_));
  const double bad = host_.as<double>()[2];
  if (bad > 0.0) {
    if (bad_row != nullptr) *bad_row = static_cast<int>(bad) - 1;
    return false;
  }
  return true;
}

Tensor SoftmaxCrossEntropy::backward(GpuPlan& plan) {
  Tensor dz = plan.alloc(logits_.n, logits_.c, 1, 1, Precision::fp32);
  plan.backward(name_ + ".bwd", [this, &plan, dz]() {
    kernels::softmax_xent_backward(static_cast<float*>(dz.data), static_cast<const float*>(logits_.data), lse_,
                                   labels_, logits_.n, logits_.c, smoothing_, loss_scale_, plan.stream());
  });
  return dz;
}

}  // namespace dtbench::gpu
