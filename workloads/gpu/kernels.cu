#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/cuda/cuda_check.hpp"
#include "workloads/gpu/kernels.hpp"

namespace dtbench::gpu::kernels {

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;  // grid-stride loops cover the rest

int blocks_for(size_t n) { return static_cast<int>(std::max<size_t>(1, std::min(kMaxBlocks, (n + kThreads - 1) / kThreads))); }

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

template <class T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }

// Calls f(T{}) with T the element type of dt.
template <class F>
void dispatch(Precision dt, F&& f) {
  switch (dt) {
    case Precision::fp32: f(float{}); return;
    case Precision::bf16: f(__nv_bfloat16{}); return;
    case Precision::fp16: f(__half{}); return;
  }
  throw std::logic_error("kernels: unknown precision");
}

#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < (n); i += size_t(gridDim.x) * blockDim.x)

template <class T>
__global__ void cast_from_f32_kernel(T* dst, const float* src, size_t n) {
  GRID_STRIDE(i, n) dst[i] = from_f32<T>(src[i]);
}

template <class T>
__global__ void cast_to_f32_kernel(float* dst, const T* src, size_t n, float scale) {
  GRID_STRIDE(i, n) dst[i] = scale * to_f32(src[i]);
}

__global__ void scale_kernel(float* x, size_t n, float s) {
  GRID_STRIDE(i, n) x[i] *= s;
}

__global__ void nonfinite_kernel(const float* x, size_t n, unsigned int* flag) {
  GRID_STRIDE(i, n) {
    if (!isfinite(x[i])) *flag = 1u;
  }
}

// Each thread sums a fixed stride of elements, then the block adds its threads' sums in a fixed tree.
__global__ void sum_squares_partial_kernel(const float* x, size_t n, double* partial) {
  __shared__ double s[kThreads];
  double acc = 0.0;
  GRID_STRIDE(i, n) acc += double(x[i]) * double(x[i]);
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) s[threadIdx.x] += s[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

__global__ void sum_in_order_kernel(const double* partial, int n, double* out) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double total = 0.0;
  for (int i = 0; i < n; ++i) total += partial[i];
  *out = total;
}

template <class T>
__global__ void add_relu_kernel(T* a, const T* b, size_t n, bool relu) {
  GRID_STRIDE(i, n) {
    float v = to_f32(a[i]) + to_f32(b[i]);
    if (relu) v = v > 0.0f ? v : 0.0f;
    a[i] = from_f32<T>(v);
  }
}

template <class T>
__global__ void relu_backward_kernel(T* dx, const T* dy, const T* y, size_t n) {
  GRID_STRIDE(i, n) dx[i] = to_f32(y[i]) > 0.0f ? dy[i] : from_f32<T>(0.0f);
}

template <class T>
__global__ void accumulate_kernel(T* into, const T* other, size_t n) {
  GRID_STRIDE(i, n) into[i] = from_f32<T>(to_f32(into[i]) + to_f32(other[i]));
}

template <class T>
__global__ void add_bias_rows_kernel(T* y, const float* bias, int rows, int cols) {
  const size_t n = size_t(rows) * size_t(cols);
  GRID_STRIDE(i, n) y[i] = from_f32<T>(to_f32(y[i]) + bias[i % size_t(cols)]);
}

// One thread per column, rows in order: deterministic and exact in its order.
template <class T>
__global__ void bias_grad_rows_kernel(float* db, const T* dy, int rows, int cols) {
  for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < cols; o += gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += to_f32(dy[size_t(r) * size_t(cols) + size_t(o)]);
    db[o] = s;
  }
}

template <class T>
__global__ void add_bias_channels_kernel(T* y, const float* bias, int channels, size_t plane, size_t n) {
  GRID_STRIDE(i, n) y[i] = from_f32<T>(to_f32(y[i]) + bias[(i / plane) % size_t(channels)]);
}

// One block per channel: each thread sums a fixed stride of the channel's images and positions, then a tree in
// shared memory adds the threads' sums in a fixed order: the same bits on every run.
template <class T>
__global__ void bias_grad_channels_kernel(float* db, const T* dy, int images, int channels, size_t plane) {
  __shared__ float s[kThreads];
  const size_t per_channel = size_t(images) * plane;
  for (int c = blockIdx.x; c < channels; c += gridDim.x) {
    float acc = 0.0f;
    for (size_t k = threadIdx.x; k < per_channel; k += blockDim.x) {
      const size_t image = k / plane, at = k % plane;
      acc += to_f32(dy[(image * size_t(channels) + size_t(c)) * plane + at]);
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (int(threadIdx.x) < half) s[threadIdx.x] += s[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) db[c] = s[0];
    __syncthreads();  // s is reused by the block's next channel
  }
}

// One thread per row, the CPU layer's arithmetic in its order.
__global__ void softmax_xent_rows_kernel(const float* z, const int32_t* labels, int n, int k, float smoothing,
                                         double* lse_out, double* row_loss, int* row_correct) {
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < n; r += gridDim.x * blockDim.x) {
    const float* row = z + size_t(r) * size_t(k);
    const int y = labels[r];
    int arg = 0;
    for (int j = 1; j < k; ++j) {
      if (row[j] > row[arg]) arg = j;
    }
    const double zmax = row[arg];
    double sum = 0.0, zsum = 0.0;
    for (int j = 0; j < k; ++j) {
      sum += exp(double(row[j]) - zmax);
      zsum += double(row[j]);
    }
    const double lse = zmax + log(sum);
    lse_out[r] = lse;
    if (y < 0 || y >= k) {
      row_loss[r] = 0.0;
      row_correct[r] = -1;  // marks the invalid label for the reduction
      continue;
    }
    const double eps = smoothing;
    row_loss[r] = lse - (1.0 - eps) * double(row[y]) - eps / double(k) * zsum;
    row_correct[r] = arg == y ? 1 : 0;
  }
}

__global__ void softmax_xent_reduce_kernel(const double* row_loss, const int* row_correct, int n, double* result) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double total = 0.0, correct = 0.0, bad = 0.0;
  for (int r = 0; r < n; ++r) {
    if (row_correct[r] < 0) {
      if (bad == 0.0) bad = 1.0 + r;
      continue;
    }
    total += row_loss[r];
    correct += row_correct[r];
  }
  result[0] = total / double(n);
  result[1] = correct;
  result[2] = bad;
}

__global__ void softmax_xent_backward_kernel(float* dz, const float* z, const double* lse, const int32_t* labels,
                                             int n, int k, float smoothing, float scale) {
  const float inv_n = 1.0f / float(n);
  const float off = smoothing / float(k);
  const float on = 1.0f - smoothing + off;
  const size_t total = size_t(n) * size_t(k);
  GRID_STRIDE(i, total) {
    const int r = int(i / size_t(k)), j = int(i % size_t(k));
    const float p = float(exp(double(z[i]) - lse[r]));
    dz[i] = scale * ((p - (j == labels[r] ? on : off)) * inv_n);
  }
}

template <class T>
__global__ void dropout_kernel(T* y, const T* x, const uint8_t* mask, size_t n, float scale) {
  GRID_STRIDE(i, n) y[i] = mask[i] ? from_f32<T>(to_f32(x[i]) * scale) : from_f32<T>(0.0f);
}

}  // namespace

void cast_from_f32(void* dst, Precision dt, const float* src, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    cast_from_f32_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), src, n);
  });
  DTB_LAUNCHED("cast_from_f32_kernel");
}

void cast_to_f32(float* dst, const void* src, Precision dt, size_t n, float scale, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    cast_to_f32_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(dst, static_cast<const T*>(src), n, scale);
  });
  DTB_LAUNCHED("cast_to_f32_kernel");
}

void scale_f32(float* x, size_t n, float s, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, s);
  DTB_LAUNCHED("scale_kernel");
}

void flag_nonfinite(const float* x, size_t n, unsigned int* flag, cudaStream_t stream) {
  if (n == 0) return;
  nonfinite_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, flag);
  DTB_LAUNCHED("nonfinite_kernel");
}

void sum_squares(const float* x, size_t n, double* partial, double* out, cudaStream_t stream) {
  sum_squares_partial_kernel<<<kSumBlocks, kThreads, 0, stream>>>(x, n, partial);
  DTB_LAUNCHED("sum_squares_partial_kernel");
  sum_in_order_kernel<<<1, 1, 0, stream>>>(partial, kSumBlocks, out);
  DTB_LAUNCHED("sum_in_order_kernel");
}

void add_relu(void* a, const void* b, size_t n, bool relu, Precision dt, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    add_relu_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(a), static_cast<const T*>(b), n, relu);
  });
  DTB_LAUNCHED("add_relu_kernel");
}

void relu_backward(void* dx, const void* dy, const void* y, size_t n, Precision dt, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    relu_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dx), static_cast<const T*>(dy),
                                                                      static_cast<const T*>(y), n);
  });
  DTB_LAUNCHED("relu_backward_kernel");
}

void accumulate(void* into, const void* other, size_t n, Precision dt, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    accumulate_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(into), static_cast<const T*>(other), n);
  });
  DTB_LAUNCHED("accumulate_kernel");
}

void add_bias_rows(void* y, Precision ydt, const float* bias, int rows, int cols, cudaStream_t stream) {
  const size_t n = size_t(rows) * size_t(cols);
  if (n == 0) return;
  dispatch(ydt, [&](auto t) {
    using T = decltype(t);
    add_bias_rows_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(y), bias, rows, cols);
  });
  DTB_LAUNCHED("add_bias_rows_kernel");
}

void bias_grad_rows(float* db, const void* dy, Precision dydt, int rows, int cols, cudaStream_t stream) {
  if (cols <= 0) return;
  dispatch(dydt, [&](auto t) {
    using T = decltype(t);
    bias_grad_rows_kernel<T><<<blocks_for(size_t(cols)), kThreads, 0, stream>>>(db, static_cast<const T*>(dy), rows, cols);
  });
  DTB_LAUNCHED("bias_grad_rows_kernel");
}

void add_bias_channels(void* y, Precision ydt, const float* bias, int images, int channels, size_t plane,
                       cudaStream_t stream) {
  const size_t n = size_t(images) * size_t(channels) * plane;
  if (n == 0) return;
  dispatch(ydt, [&](auto t) {
    using T = decltype(t);
    add_bias_channels_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(y), bias, channels, plane, n);
  });
  DTB_LAUNCHED("add_bias_channels_kernel");
}

void bias_grad_channels(float* db, const void* dy, Precision dydt, int images, int channels, size_t plane,
                        cudaStream_t stream) {
  if (channels <= 0) return;
  const int blocks = std::min(channels, int(kMaxBlocks));
  dispatch(dydt, [&](auto t) {
    using T = decltype(t);
    bias_grad_channels_kernel<T><<<blocks, kThreads, 0, stream>>>(db, static_cast<const T*>(dy), images, channels,
                                                                  plane);
  });
  DTB_LAUNCHED("bias_grad_channels_kernel");
}

void softmax_xent_forward(const float* logits, const int32_t* labels, int n, int k, float smoothing, double* lse,
                          double* row_loss, int* row_correct, double* result, cudaStream_t stream) {
  // Small blocks spread the rows over the multiprocessors (a row is one thread's work).
  const int threads = 32;
  const int blocks = std::max(1, (n + threads - 1) / threads);
  softmax_xent_rows_kernel<<<blocks, threads, 0, stream>>>(logits, labels, n, k, smoothing, lse, row_loss, row_correct);
  DTB_LAUNCHED("softmax_xent_rows_kernel");
  softmax_xent_reduce_kernel<<<1, 1, 0, stream>>>(row_loss, row_correct, n, result);
  DTB_LAUNCHED("softmax_xent_reduce_kernel");
}

void softmax_xent_backward(float* dz, const float* logits, const double* lse, const int32_t* labels, int n, int k,
                           float smoothing, float scale, cudaStream_t stream) {
  const size_t total = size_t(n) * size_t(k);
  if (total == 0) return;
  softmax_xent_backward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(dz, logits, lse, labels, n, k, smoothing,
                                                                           scale);
  DTB_LAUNCHED("softmax_xent_backward_kernel");
}

void dropout_apply(void* y, const void* x, const uint8_t* mask, size_t n, float scale, Precision dt,
                   cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    dropout_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(x), mask, n,
                                                                scale);
  });
  DTB_LAUNCHED("dropout_kernel");
}

}  // namespace dtbench::gpu::kernels
