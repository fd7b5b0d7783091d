// Fully connected layer through cuBLAS (cublasGemmEx, fp32 accumulation: CUBLAS_COMPUTE_32F, which never
// uses TF32 for fp32 data), the GPU twin of workloads/cpu/linear.hpp:
//   y[n,o] = b[o] + sum_i w[o,i] x[n,i],   dx = dy w,   dw = dy^T x,   db[o] = sum_n dy[n,o].
// x is N x I or N x C x H x W (i runs over C, H, W: PyTorch's flatten of NCHW); w is O x I row-major in
// the flat buffer (its compute-precision copy is read), b and the gradients dw, db are fp32 and written
// into the flat gradient buffer directly.
//
// Row-major matrices are cuBLAS's column-major transposes, so with W = w (O x I), X = x (N x I):
//   y^T (O x N)  = W X^T        gemm(T, N, m=O, n=N, k=I, A=w lda=I, B=x ldb=I, C=y ldc=O)
//   dx^T (I x N) = W^T dy^T     gemm(N, N, m=I, n=N, k=O, A=w lda=I, B=dy ldb=O, C=dx ldc=I)
//   dw^T (I x O) = X^T dy       gemm(N, T, m=I, n=O, k=N, A=x lda=I, B=dy ldb=O, C=dw ldc=I)
// The bias is added, and its gradient summed over rows in order, by our own kernels.
//
// f32_output: y is fp32 whatever the compute precision (the logits); its backward then rounds dy to the
// compute precision for the two gemms (as autocast does) and sums db from the fp32 dy.
#pragma once

#include <string>

#include "workloads/gpu/plan.hpp"

namespace dtbench::gpu {

class Linear {
 public:
  Linear(GpuPlan& plan, std::string name, int out_features, size_t weight_offset, size_t bias_offset, const Tensor& x,
         bool f32_output);
  const Tensor& y() const { return y_; }  // N x O x 1 x 1
  // Appends the backward: dw and db (announced), then dx (shaped like x) when need_dx.
  Tensor backward(GpuPlan& plan, const Tensor& dy, bool need_dx);

 private:
  std::string name_;
  int out_, in_;
  size_t weight_offset_, bias_offset_;
  Tensor x_, y_;
};

}  // namespace dtbench::gpu
