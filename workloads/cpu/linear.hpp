// Fully connected layer (oneDNN inner product): y[n,o] = b[o] + sum_i w[o,i] x[n,i].
//
// x may be N x I or N x C x H x W (then i runs over C, H, W in that order, i.e. PyTorch's flatten of NCHW, and
// the weight is O x C x H x W in the primitive, which is the same memory as PyTorch's O x (C H W) matrix).
// The canonical weight in the flat buffer is O x I row-major, the bias O. Backward: dx = dy w, dw = dy^T x,
// db = sum_n dy.
#pragma once

#include <string>

#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

class Linear {
 public:
  // plain_f32_output: y is N x O row-major fp32 whatever the compute type (logits that the host reads).
  Linear(Plan& plan, std::string name, int out_features, size_t weight_offset, size_t bias_offset,
         const dnnl::memory& x, bool plain_f32_output);
  const dnnl::memory& y() const { return y_; }
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy, bool need_dx);
  static size_t in_features(const dnnl::memory::dims& x_dims);

 private:
  std::string name_;
  int out_;
  size_t weight_offset_, bias_offset_;
  dnnl::memory::dims weight_dims_;
  dnnl::inner_product_forward::primitive_desc fwd_pd_;
  dnnl::memory x_, w_, y_;
};

}  // namespace dtbench::cpu
