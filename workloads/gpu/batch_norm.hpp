// Batch normalisation through cuDNN (CUDNN_BATCHNORM_SPATIAL), optionally followed by ReLU: the GPU twin
// of workloads/cpu/batch_norm.hpp, with the same definition (Ioffe and Szegedy 2015) and PyTorch's running
// averages: running = (1 - momentum) running + momentum batch_statistic, the variance unbiased
// (s2 m / (m - 1), m = N H W), which is what cudnnBatchNormalizationForwardTraining keeps.
//
// Training plans normalise with the batch statistics (cudnnBatchNormalizationForwardTraining, which also
// saves the mean and inverse standard deviation for the backward); evaluation plans with the running
// averages (cudnnBatchNormalizationForwardInference). gamma, beta, their gradients and the running
// statistics are fp32 in every precision (cuDNN's scale/bias descriptor is fp32 for fp16 and bf16 data)
// and are read and written in the flat buffers directly. The fused ReLU runs in place on y (cuDNN
// activation) and its backward comes first in the layer's backward.
#pragma once

#include <cudnn.h>

#include <string>

#include "workloads/gpu/activation.hpp"
#include "workloads/gpu/plan.hpp"

namespace dtbench::gpu {

struct BatchNormShape {
  int channels = 0;
  bool fuse_relu = false;
  double eps = 1e-5;
  double momentum = 0.1;
};

class BatchNorm {
 public:
  // gamma and beta index the flat parameter (and gradient) buffers; running_offset the buffer array
  // (running mean, then running variance, `channels` floats each).
  BatchNorm(GpuPlan& plan, std::string name, const BatchNormShape& shape, size_t gamma_offset, size_t beta_offset,
            size_t running_offset, const Tensor& x);
  BatchNorm(const BatchNorm&) = delete;
  BatchNorm& operator=(const BatchNorm&) = delete;

  const Tensor& y() const { return y_; }
  // Appends the backward (training plans): dgamma and dbeta into the gradient buffer, announced; returns dx.
  Tensor backward(GpuPlan& plan, const Tensor& dy);

 private:
  std::string name_;
  BatchNormShape shape_;
  size_t gamma_offset_, beta_offset_, running_offset_;
  Tensor x_, y_;
  CudnnTensorDesc bn_desc_;
  float* saved_ = nullptr;  // saved mean, then saved inverse standard deviation (training plans)
  ReluDesc relu_;
};

}  // namespace dtbench::gpu
