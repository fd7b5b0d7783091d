// 2-D convolution (cross-correlation, as in every deep-learning framework), forward and backward.
//
// Shapes: x N x C x H x W -> y N x K x P x Q with P = (H + 2 pad - kernel) / stride + 1 (likewise Q);
// weight K x C x kernel x kernel (OIHW, canonical in the flat buffer), optional bias K.
// y[n,k,p,q] = b[k] + sum_{c,r,s} w[k,c,r,s] x[n,c, p*stride - pad + r, q*stride - pad + s] (zero outside).
// Backward: dx by the transposed convolution (backward data), dw and db by backward weights. Weights are
// reordered from the canonical flat buffer into the primitive's layout at the start of every forward (and
// for backward data when that primitive wants another layout); dw is reordered back into the flat gradient
// buffer and announced.
#pragma once

#include <string>

#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

struct ConvShape {
  int in_c = 0;
  int out_c = 0;
  int kernel = 3;
  int stride = 1;
  int pad = 0;
  bool bias = false;

  int out_size(int in) const { return (in + 2 * pad - kernel) / stride + 1; }
  size_t weight_size() const { return size_t(out_c) * size_t(in_c) * size_t(kernel) * size_t(kernel); }
  // Multiply-accumulates of one image's forward pass for an input of h x w.
  double macs(int h, int w) const {
    return double(out_size(h)) * double(out_size(w)) * double(weight_size());
  }
};

class Conv {
 public:
  // Appends the forward to `plan` (x: N x in_c x H x W in any layout). weight_offset / bias_offset index the
  // flat parameter and gradient buffers (bias_offset is ignored without bias).
  Conv(Plan& plan, std::string name, const ConvShape& shape, size_t weight_offset, size_t bias_offset,
       const dnnl::memory& x);
  const dnnl::memory& y() const { return y_; }
  // Appends the backward: dw (and db) into the gradient buffer, announced; returns dx when need_dx.
  dnnl::memory backward(Plan& plan, const dnnl::memory& dy, bool need_dx);

 private:
  std::string name_;
  ConvShape shape_;
  size_t weight_offset_;
  size_t bias_offset_;
  dnnl::memory::dims weight_dims_, strides_, padding_;
  dnnl::convolution_forward::primitive_desc fwd_pd_;
  dnnl::memory x_;  // the input in the forward primitive's layout
  dnnl::memory w_;  // the weights in the forward primitive's layout
  dnnl::memory y_;
};

}  // namespace dtbench::cpu
