#include <algorithm>
#include <cmath>

#include "core/cuda/cuda_check.hpp"
#include "optim/gpu/optim_kernels.hpp"

namespace dtbench::gpu::optim_kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 65535;

int chunk_blocks(const Chunks& c) { return std::max(1, std::min(c.num_chunks, kMaxBlocks)); }
int tensor_blocks(const Chunks& c) { return std::max(1, (c.num_tensors + kThreads - 1) / kThreads); }

__device__ __forceinline__ float clip_g(float g, Clip c) {
  const float x = g * c.scale;
  const float lo = x < -c.limit ? -c.limit : x;
  return lo > c.limit ? c.limit : lo;
}

// The block's threads each hold (a, b); thread 0 gets the block sums, added in a fixed tree.
__device__ void block_sum2(double& a, double& b) {
  __shared__ double sa[kThreads], sb[kThreads];
  sa[threadIdx.x] = a;
  sb[threadIdx.x] = b;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) {
      sa[threadIdx.x] += sa[threadIdx.x + half];
      sb[threadIdx.x] += sb[threadIdx.x + half];
    }
    __syncthreads();
  }
  a = sa[0];
  b = sb[0];
  __syncthreads();  // the shared arrays are reused by the block's next chunk
}

#define FOR_CHUNKS(ch, c) for (int ch = blockIdx.x; ch < (c).num_chunks; ch += gridDim.x)
#define FOR_ELEMENTS(i, c, ch) for (uint64_t i = (c).begin[ch] + threadIdx.x; i < (c).end[ch]; i += blockDim.x)

// Per-tensor sums of the chunk sums, in chunk order.
__global__ void tensor_sums_kernel(Chunks c, Sums s) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < c.num_tensors; k += gridDim.x * blockDim.x) {
    double a = 0.0, b = 0.0;
    for (int j = c.first[k], e = c.first[k] + c.count[k]; j < e; ++j) {
      a += s.chunk_a[j];
      b += s.chunk_b[j];
    }
    s.tensor_a[k] = a;
    s.tensor_b[k] = b;
  }
}

__global__ void grad_sumsq_kernel(const float* g, Chunks c, Sums s) {
  FOR_CHUNKS(ch, c) {
    double a = 0.0, b = 0.0;
    FOR_ELEMENTS(i, c, ch) a += double(g[i]) * double(g[i]);
    block_sum2(a, b);
    if (threadIdx.x == 0) {
      s.chunk_a[ch] = a;
      s.chunk_b[ch] = 0.0;
    }
  }
}

__global__ void sgd_kernel(float* w, const float* g, float* b, Chunks c, const double* lambda, double lr, float mu,
                           float damp, bool first, bool nesterov, bool decoupled, Clip clip) {
  const float lrf = float(lr);
  FOR_CHUNKS(ch, c) {
    const double lam = lambda[c.tensor[ch]];
    // L2: wd enters the gradient; decoupled: it shrinks the weight (the seeds' factor 2).
    const float wd = decoupled ? 0.0f : float(lam);
    const float keep = decoupled ? float(1.0 - 2.0 * lr * lam) : 1.0f;
    FOR_ELEMENTS(i, c, ch) {
      const float d = clip_g(g[i], clip) + wd * w[i];
      if (b == nullptr) {
        w[i] = keep * w[i] - lrf * d;
        continue;
      }
      const float bi = first ? d : mu * b[i] + damp * d;
      b[i] = bi;
      const float step = nesterov ? d + mu * bi : bi;
      w[i] = keep * w[i] - lrf * step;
    }
  }
}

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, Chunks c, const double* lambda, double lr,
                            float b1, float one_minus_b1, float b2, float one_minus_b2, float step_size,
                            float bc2_sqrt, float eps, bool decoupled, Clip clip) {
  FOR_CHUNKS(ch, c) {
    const double lam = lambda[c.tensor[ch]];
    const float wd = decoupled ? 0.0f : float(lam);
    const float keep = decoupled ? float(1.0 - lr * lam) : 1.0f;
    FOR_ELEMENTS(i, c, ch) {
      const float d = clip_g(g[i], clip) + wd * w[i];
      const float mi = b1 * m[i] + one_minus_b1 * d;
      const float vi = b2 * v[i] + one_minus_b2 * d * d;
      m[i] = mi;
      v[i] = vi;
      w[i] = keep * w[i] - step_size * (mi / (sqrtf(vi) / bc2_sqrt + eps));
    }
  }
}

__global__ void lars_norms_kernel(const float* w, const float* g, Chunks c, Clip clip, Sums s) {
  FOR_CHUNKS(ch, c) {
    double ws = 0.0, gs = 0.0;
    FOR_ELEMENTS(i, c, ch) {
      const double wi = w[i];
      const double gi = clip_g(g[i], clip);
      ws += wi * wi;
      gs += gi * gi;
    }
    block_sum2(ws, gs);
    if (threadIdx.x == 0) {
      s.chunk_a[ch] = ws;
      s.chunk_b[ch] = gs;
    }
  }
}

__global__ void lars_trust_kernel(Chunks c, Sums s, const double* lambda, const uint8_t* excluded, double eta,
                                  double eps, double* trust) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < c.num_tensors; k += gridDim.x * blockDim.x) {
    const double w_norm = sqrt(s.tensor_a[k]);
    const double g_norm = sqrt(s.tensor_b[k]);
    trust[k] = (excluded[k] || w_norm <= 0.0 || g_norm <= 0.0) ? 1.0 : eta * w_norm / (g_norm + lambda[k] * w_norm + eps);
  }
}

__global__ void lars_update_kernel(float* w, const float* g, float* v, Chunks c, const double* lambda, double lr,
                                   float mu, const double* trust, Clip clip) {
  FOR_CHUNKS(ch, c) {
    const int k = c.tensor[ch];
    const float scaled_lr = float(lr * trust[k]);
    const float wd = float(lambda[k]);
    FOR_ELEMENTS(i, c, ch) {
      const float vi = mu * v[i] + scaled_lr * (clip_g(g[i], clip) + wd * w[i]);
      v[i] = vi;
      w[i] = w[i] - vi;
    }
  }
}

struct Direction {
  float inv_bc1, inv_bc2, eps;
  __device__ float operator()(float m, float v, float w, float wd) const {
    return (m * inv_bc1) / (sqrtf(v * inv_bc2) + eps) + wd * w;
  }
};

__global__ void lamb_moments_kernel(const float* w, const float* g, float* m, float* v, Chunks c, const double* lambda,
                                    float b1, float one_minus_b1, float b2, float one_minus_b2, Direction dir,
                                    Clip clip, Sums s) {
  FOR_CHUNKS(ch, c) {
    const float wd = float(lambda[c.tensor[ch]]);
    double ws = 0.0, us = 0.0;
    FOR_ELEMENTS(i, c, ch) {
      const float gi = clip_g(g[i], clip);
      const float mi = b1 * m[i] + one_minus_b1 * gi;
      const float vi = b2 * v[i] + one_minus_b2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      const double u = dir(mi, vi, w[i], wd);
      ws += double(w[i]) * double(w[i]);
      us += u * u;
    }
    block_sum2(ws, us);
    if (threadIdx.x == 0) {
      s.chunk_a[ch] = ws;
      s.chunk_b[ch] = us;
    }
  }
}

__global__ void lamb_trust_kernel(Chunks c, Sums s, const uint8_t* excluded, double trust_clip, double* trust) {
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < c.num_tensors; k += gridDim.x * blockDim.x) {
    const double w_norm = sqrt(s.tensor_a[k]);
    const double u_norm = sqrt(s.tensor_b[k]);
    double t = (excluded[k] || w_norm <= 0.0 || u_norm <= 0.0) ? 1.0 : w_norm / u_norm;
    if (!excluded[k] && trust_clip > 0.0) t = t < trust_clip ? t : trust_clip;
    trust[k] = t;
  }
}

__global__ void lamb_apply_kernel(float* w, const float* m, const float* v, Chunks c, const double* lambda, double lr,
                                  const double* trust, Direction dir) {
  FOR_CHUNKS(ch, c) {
    const int k = c.tensor[ch];
    const float step = float(lr * trust[k]);
    const float wd = float(lambda[k]);
    FOR_ELEMENTS(i, c, ch) w[i] = w[i] - step * dir(m[i], v[i], w[i], wd);
  }
}

}  // namespace

void grad_sumsq(const float* g, const Chunks& c, const Sums& s, cudaStream_t stream) {
  if (c.num_chunks == 0) return;
  grad_sumsq_kernel<<<chunk_blocks(c), kThreads, 0, stream>>>(g, c, s);
  DTB_LAUNCHED("grad_sumsq_kernel");
  tensor_sums_kernel<<<tensor_blocks(c), kThreads, 0, stream>>>(c, s);
  DTB_LAUNCHED("tensor_sums_kernel");
}

void sgd(float* w, const float* g, float* b, const Chunks& c, const double* lambda, double lr, float mu, float damp,
         bool first, bool nesterov, bool decoupled, Clip clip, cudaStream_t stream) {
  if (c.num_chunks == 0) return;
  sgd_kernel<<<chunk_blocks(c), kThreads, 0, stream>>>(w, g, b, c, lambda, lr, mu, damp, first, nesterov, decoupled,
                                                       clip);
  DTB_LAUNCHED("sgd_kernel");
}

void adam(float* w, const float* g, float* m, float* v, const Chunks& c, const double* lambda, double lr, float b1,
          float one_minus_b1, float b2, float one_minus_b2, float step_size, float bc2_sqrt, float eps,
          bool decoupled, Clip clip, cudaStream_t stream) {
  if (c.num_chunks == 0) return;
  adam_kernel<<<chunk_blocks(c), kThreads, 0, stream>>>(w, g, m, v, c, lambda, lr, b1, one_minus_b1, b2, one_minus_b2,
                                                        step_size, bc2_sqrt, eps, decoupled, clip);
  DTB_LAUNCHED("adam_kernel");
}

void lars(float* w, const float* g, float* v, const Chunks& c, const double* lambda, const uint8_t* excluded,
          double lr, float mu, double eta, double eps, Clip clip, const Sums& s, double* trust, cudaStream_t stream) {
  if (c.num_chunks == 0) return;
  lars_norms_kernel<<<chunk_blocks(c), kThreads, 0, stream>>>(w, g, c, clip, s);
  DTB_LAUNCHED("lars_norms_kernel");
  tensor_sums_kernel<<<tensor_blocks(c), kThreads, 0, stream>>>(c, s);
  DTB_LAUNCHED("tensor_sums_kernel");
  lars_trust_kernel<<<tensor_blocks(c), kThreads, 0, stream>>>(c, s, lambda, excluded, eta, eps, trust);
  DTB_LAUNCHED("lars_trust_kernel");
  lars_update_kernel<<<chunk_blocks(c), kThreads, 0, stream>>>(w, g, v, c, lambda, lr, mu, trust, clip);
  DTB_LAUNCHED("lars_update_kernel");
}

void lamb(float* w, const float* g, float* m, float* v, const Chunks& c, const double* lambda,
          const uint8_t* excluded, double lr, float b1, float one_minus_b1, float b2, float one_minus_b2,
          float inv_bc1, float inv_bc2, float eps, double trust_clip, Clip clip, const Sums& s, double* trust,
          cudaStream_t stream) {
  if (c.num_chunks == 0) return;
  const Direction dir{inv_bc1, inv_bc2, eps};
  lamb_moments_kernel<<<chunk_blocks(c), kThreads, 0, stream>>>(w, g, m, v, c, lambda, b1, one_minus_b1, b2,
                                                                one_minus_b2, dir, clip, s);
  DTB_LAUNCHED("lamb_moments_kernel");
  tensor_sums_kernel<<<tensor_blocks(c), kThreads, 0, stream>>>(c, s);
  DTB_LAUNCHED("tensor_sums_kernel");
  lamb_trust_kernel<<<tensor_blocks(c), kThreads, 0, stream>>>(c, s, excluded, trust_clip, trust);
  DTB_LAUNCHED("lamb_trust_kernel");
  lamb_apply_kernel<<<chunk_blocks(c), kThreads, 0, stream>>>(w, m, v, c, lambda, lr, trust, dir);
  DTB_LAUNCHED("lamb_apply_kernel");
}

}  // namespace dtbench::gpu::optim_kernels
