// Pooling through cuDNN (cudnnPoolingForward / Backward), the GPU twins of workloads/cpu/max_pool.hpp and
// global_avg_pool.hpp:
//   - max pooling over kernel x kernel windows with stride and padding (CUDNN_POOLING_MAX_DETERMINISTIC,
//     whose backward routes each dy to one maximum, deterministically);
//   - global average pooling: y[n,c] = mean over the H x W positions (an average pooling whose window is
//     the whole image, N x C x 1 x 1 out); the backward spreads dy / (H W) over every position.
// The ResNets pool only ReLU outputs (>= 0), so whether padding counts as 0 or as -infinity cannot change
// a maximum there.
#pragma once

#include <cudnn.h>

#include <string>

#include "workloads/gpu/plan.hpp"

namespace dtbench::gpu {

struct PoolShape {
  int kernel = 3;
  int stride = 2;
  int pad = 1;
  int out_size(int in) const { return (in + 2 * pad - kernel) / stride + 1; }
};

class Pooling {
 public:
  // A max pooling layer.
  static Pooling& max(GpuPlan& plan, std::string name, const PoolShape& shape, const Tensor& x);
  // A global average pooling layer.
  static Pooling& global_average(GpuPlan& plan, std::string name, const Tensor& x);

  Pooling(GpuPlan& plan, std::string name, cudnnPoolingMode_t mode, int window_h, int window_w, int pad, int stride,
          const Tensor& x);
  Pooling(const Pooling&) = delete;
  Pooling& operator=(const Pooling&) = delete;

  const Tensor& y() const { return y_; }
  Tensor backward(GpuPlan& plan, const Tensor& dy);

 private:
  std::string name_;
  CudnnPoolingDesc desc_;
  Tensor x_, y_;
};

}  // namespace dtbench::gpu
