// Inverted dropout (Srivastava et al. 2014), the GPU twin of workloads/cpu/dropout.hpp: in training each
// element is kept with probability 1 - p and scaled by 1 / (1 - p).
//
// The keep mask of a step is drawn on the host from dtbench::Rng(seed, {stream, step}), one uniform per
// element in NCHW order (kept when u >= p), exactly as the CPU layer draws it; it is copied to the device
// from a pinned buffer. So a run's masks are a function of its seed, and equal the CPU backend's wherever
// the CPU tensor is in plain layout. Training plans only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/cuda/device.hpp"
#include "core/cuda/owned.hpp"
#include "workloads/gpu/plan.hpp"

namespace dtbench::gpu {

class Dropout {
 public:
  Dropout(GpuPlan& plan, std::string name, float p, uint64_t seed, uint64_t stream, const uint64_t* step,
          const Tensor& x);
  Dropout(const Dropout&) = delete;
  Dropout& operator=(const Dropout&) = delete;

  const Tensor& y() const { return y_; }
  Tensor backward(GpuPlan& plan, const Tensor& dy);
  // The mask of the last forward (host copy; valid once the forward's copy has been enqueued).
  const uint8_t* host_mask() const { return host_mask_.as<const uint8_t>(); }

 private:
  std::string name_;
  float p_;
  uint64_t seed_, stream_id_;
  const uint64_t* step_;
  Tensor x_, y_;
  PinnedBuffer host_mask_;
  uint8_t* mask_ = nullptr;  // device
  Event copied_;  // on the compute stream, after the last copy of the pinned mask
};

}  // namespace dtbench::gpu
