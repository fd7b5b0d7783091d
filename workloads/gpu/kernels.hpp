// Our own CUDA kernels (kernels.cu), called from host code through these launchers. Every launcher
// enqueues on `stream` and returns at once; element counts are size_t; `dt` is the element type of the
// activation tensors (fp32, bf16 or fp16), the arithmetic is fp32 (double where noted).
//
// Kernels are grid-stride loops. None uses atomics where the order of additions would matter: sums are
// taken by one thread in a fixed order (per row or per column) or by fixed-shape block reductions, so a
// result is the same bits on every run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "workloads/gpu/precision.hpp"

namespace dtbench::gpu::kernels {

// dst[i] = src[i] rounded to dt (round to nearest even).
void cast_from_f32(void* dst, Precision dt, const float* src, size_t n, cudaStream_t stream);
// dst[i] = scale * float(src[i]) (scale 1: a plain widening copy; dt fp32 with dst == src scales in place).
void cast_to_f32(float* dst, const void* src, Precision dt, size_t n, float scale, cudaStream_t stream);
// x[i] *= s.
void scale_f32(float* x, size_t n, float s, cudaStream_t stream);
// *flag = 1 if any x[i] is Inf or NaN (flag is left alone otherwise; clear it first). Every writer writes
// the same value, so the race is benign and the result exact.
void flag_nonfinite(const float* x, size_t n, unsigned int* flag, cudaStream_t stream);

// *out = sum of x[i]^2 in double, by a fixed grid of kSumBlocks blocks (partial: kSumBlocks doubles of
// scratch) whose partial sums one thread then adds in block order: the same bits on every run.
constexpr int kSumBlocks = 256;
void sum_squares(const float* x, size_t n, double* partial, double* out, cudaStream_t stream);

// Residual addition (in place into a): a[i] = a[i] + b[i], then max(., 0) when relu.
void add_relu(void* a, const void* b, size_t n, bool relu, Precision dt, cudaStream_t stream);
// dx[i] = y[i] > 0 ? dy[i] : 0: the gradient through a ReLU, read from its output (dx may be dy).
void relu_backward(void* dx, const void* dy, const void* y, size_t n, Precision dt, cudaStream_t stream);
// into[i] += other[i]: where two branches' gradients meet.
void accumulate(void* into, const void* other, size_t n, Precision dt, cudaStream_t stream);

// y[r, o] += bias[o] for rows r < rows, o < cols (y row-major in ydt, bias fp32).
void add_bias_rows(void* y, Precision ydt, const float* bias, int rows, int cols, cudaStream_t stream);
// db[o] = sum over r in order of dy[r, o] (dy row-major rows x cols in dydt), written in fp32.
void bias_grad_rows(float* db, const void* dy, Precision dydt, int rows, int cols, cudaStream_t stream);
// A convolution's bias: y[n, c, p] += bias[c] (y images x channels x plane in ydt, NCHW with plane = H W; bias
// fp32), and db[c] = the sum of dy[n, c, p] over the images and positions, in fp32, in a fixed order.
void add_bias_channels(void* y, Precision ydt, const float* bias, int images, int channels, size_t plane,
                       cudaStream_t stream);
void bias_grad_channels(float* db, const void* dy, Precision dydt, int images, int channels, size_t plane,
                        cudaStream_t stream);

// Softmax cross-entropy with label smoothing eps over n rows of k fp32 logits (the formulas of
// workloads/cpu/softmax_cross_entropy.hpp, in double): per row the log-sum-exp lse[r], the loss
// lse - (1 - eps) z_y - eps / k sum_j z_j and whether argmax (first maximum) == label; then, in one
// thread and in row order, result[0] = mean loss and result[1] = correct count (as a double). A label
// outside [0, k) sets result[2] to 1 + its row (0 when all are valid) and contributes nothing.
void softmax_xent_forward(const float* logits, const int32_t* labels, int n, int k, float smoothing, double* lse,
                          double* row_loss, int* row_correct, double* result, cudaStream_t stream);
// dz[r, j] = scale * (p_rj - q_rj) / n with p = exp(z - lse) and q the smoothed one-hot target.
void softmax_xent_backward(float* dz, const float* logits, const double* lse, const int32_t* labels, int n, int k,
                           float smoothing, float scale, cudaStream_t stream);

// Inverted dropout: y[i] = mask[i] ? x[i] * scale : 0 (also its own backward, on dy).
void dropout_apply(void* y, const void* x, const uint8_t* mask, size_t n, float scale, Precision dt,
                   cudaStream_t stream);

}  // namespace dtbench::gpu::kernels
