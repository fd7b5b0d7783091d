// 2-D convolution through cuDNN (cudnnConvolutionForward / BackwardData / BackwardFilter), the GPU twin
// of workloads/cpu/conv.hpp: x N x C x H x W -> y N x K x P x Q, P = (H + 2 pad - kernel) / stride + 1,
// weight K x C x kernel x kernel (OIHW, canonical in the flat buffer), and a bias of K when a bias offset is given
// (the Simple CNN's; the ResNets' convolutions have none, a batch norm follows each): added after the convolution
// (kernels::add_bias_channels, from the fp32 master weights), its gradient summed over images and positions into
// the fp32 gradient (kernels::bias_grad_channels) and announced as such.
//
// Algorithms come from cuDNN's heuristics (cudnnGet...Algorithm_v7), asked after the descriptor's math type
// is set (fp32: CUDNN_FMA_MATH, no TF32; bf16 and fp16: CUDNN_TENSOR_OP_MATH, tensor cores with fp32
// accumulation), taking the first one that succeeds, is deterministic (so runs repeat bit for bit) and whose
// workspace, asked with cudnnGet...WorkspaceSize for that algorithm and math type, is at most
// kMaxWorkspaceBytes. In fp32 the FFT and Winograd algorithms are left out too (they round in a transformed
// domain), so results match the CPU backend to fp32 rounding. Weights are read from the
// compute-precision copy; the weight gradient is written into the compute-precision gradient copy and
// announced (the plan turns it into fp32).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>

#include "workloads/gpu/plan.hpp"

namespace dtbench::gpu {

struct ConvShape {
  int in_c = 0;
  int out_c = 0;
  int kernel = 3;
  int stride = 1;
  int pad = 0;

  int out_size(int in) const { return (in + 2 * pad - kernel) / stride + 1; }
  size_t weight_size() const { return size_t(out_c) * size_t(in_c) * size_t(kernel) * size_t(kernel); }
};

class Conv {
 public:
  static constexpr size_t kMaxWorkspaceBytes = size_t{1} << 30;

  static constexpr size_t kNoBias = SIZE_MAX;

  // Appends the forward (x: N x in_c x H x W in the plan's precision).
  Conv(GpuPlan& plan, std::string name, const ConvShape& shape, size_t weight_offset, const Tensor& x,
       size_t bias_offset = kNoBias);
  Conv(const Conv&) = delete;
  Conv& operator=(const Conv&) = delete;

  const Tensor& y() const { return y_; }
  // Appends the backward: dw and the bias's gradient (announced), then dx when need_dx (else the returned tensor is
  // empty).
  Tensor backward(GpuPlan& plan, const Tensor& dy, bool need_dx);

  // The chosen algorithms, for tests and logs (the backward ones are set only when the plan trains).
  cudnnConvolutionFwdAlgo_t forward_algo() const { return fwd_algo_; }
  cudnnConvolutionBwdDataAlgo_t backward_data_algo() const { return bwd_data_algo_; }
  cudnnConvolutionBwdFilterAlgo_t backward_filter_algo() const { return bwd_filter_algo_; }

 private:
  std::string name_;
  ConvShape shape_;
  size_t weight_offset_;
  size_t bias_offset_;
  Tensor x_, y_;
  CudnnFilterDesc w_desc_;
  CudnnConvDesc fwd_conv_, bwd_data_conv_, bwd_filter_conv_;
  cudnnConvolutionFwdAlgo_t fwd_algo_{};
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo_{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo_{};
};

}  // namespace dtbench::gpu
