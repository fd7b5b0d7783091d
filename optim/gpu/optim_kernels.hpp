// The fused optimizer kernels (optim_kernels.cu) behind fused_optimizer.hpp. Each update is one pass over
// the flat buffers (LAMB: two), with the CPU optimizers' formulas (optim/sgd.hpp, adam.hpp, lars.hpp,
// lamb.hpp) in the same float arithmetic; norms are summed in double.
//
// Work split: the buffer is cut into the CPU optimizers' chunks (optim::split_into_chunks: at most
// optim::Optimizer::kChunkElements inside tensors); one thread block takes one chunk (grid-stride over
// chunks). Per-tensor sums are deterministic: each block reduces its chunk in a fixed-shape tree (per-chunk
// partial sums), then one thread per tensor adds its chunks' partial sums in chunk order. No atomics.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dtbench::gpu::optim_kernels {

// Device arrays describing the chunks (chunks of one tensor are consecutive, in tensor order).
struct Chunks {
  const uint64_t* begin = nullptr;   // flat element range [begin, end) of each chunk
  const uint64_t* end = nullptr;
  const int32_t* tensor = nullptr;   // tensor index of each chunk
  const int32_t* first = nullptr;    // first chunk of each tensor
  const int32_t* count = nullptr;    // number of chunks of each tensor
  int num_chunks = 0;
  int num_tensors = 0;
};

// optim::GradTransform: g' = min(max(g * scale, -limit), limit).
struct Clip {
  float scale = 1.0f;
  float limit = 0.0f;  // +inf when off (set by the caller)
};

// Scratch for per-chunk and per-tensor sums of two quantities (device doubles).
struct Sums {
  double* chunk_a = nullptr;
  double* chunk_b = nullptr;
  double* tensor_a = nullptr;
  double* tensor_b = nullptr;
};

// tensor_a[k] = sum of g^2 over tensor k (raw gradient: the non-finite check and the clipping norm).
void grad_sumsq(const float* g, const Chunks& c, const Sums& s, cudaStream_t stream);

// SGD with momentum (PyTorch semantics, optim/sgd.hpp). b may be null (no momentum). lambda: per-tensor
// weight decay (double).
void sgd(float* w, const float* g, float* b, const Chunks& c, const double* lambda, double lr, float mu, float damp,
         bool first, bool nesterov, bool decoupled, Clip clip, cudaStream_t stream);

// Adam / AdamW (optim/adam.hpp). step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t).
void adam(float* w, const float* g, float* m, float* v, const Chunks& c, const double* lambda, double lr, float b1,
          float one_minus_b1, float b2, float one_minus_b2, float step_size, float bc2_sqrt, float eps,
          bool decoupled, Clip clip, cudaStream_t stream);

// LARS (optim/lars.hpp): tensor norms of w and of the clipped g, trust ratios (double, per tensor, into
// trust), then the momentum update with lr * trust.
void lars(float* w, const float* g, float* v, const Chunks& c, const double* lambda, const uint8_t* excluded,
          double lr, float mu, double eta, double eps, Clip clip, const Sums& s, double* trust, cudaStream_t stream);

// LAMB (optim/lamb.hpp): pass 1 updates m and v and sums ||w||^2 and ||u||^2 per tensor; the trust ratios
// (into trust); pass 2 applies w -= lr trust u with u recomputed from the new m and v.
void lamb(float* w, const float* g, float* m, float* v, const Chunks& c, const double* lambda,
          const uint8_t* excluded, double lr, float b1, float one_minus_b1, float b2, float one_minus_b2,
          float inv_bc1, float inv_bc2, float eps, double trust_clip, Clip clip, const Sums& s, double* trust,
          cudaStream_t stream);

}  // namespace dtbench::gpu::optim_kernels
