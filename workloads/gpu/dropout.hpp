// Inverted dropout (Srivastava et al. 2014), the GPU twin of workloads/cpu/dropout.hpp: in training each
// element is kept with probability 1 - p and scaled by 1 / (1 - p).
//
// The keep mask of a forward is drawn on the host by models::dropout_keep_mask (workloads/models/dropout_mask.hpp)
// at the caller's BatchPosition, each sample's features in CHW order, exactly as the CPU layer draws it; it is
// copied to the device from a pinned buffer. So each sample's mask is a function of the seed, the step and its
// position in the global batch, and equals the CPU backend's wherever the CPU tensor is in plain layout.
// Training plans only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/cuda/device.hpp"
#include "core/cuda/owned.hpp"
#include "workloads/gpu/plan.hpp"
#include "workloads/models/dropout_mask.hpp"

namespace dtbench::gpu {

class Dropout {
 public:
  Dropout(GpuPlan& plan, std::string name, float p, uint64_t seed, const models::BatchPosition* position,
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
  uint64_t seed_;
  const models::BatchPosition* position_;
  Tensor x_, y_;
  PinnedBuffer host_mask_;
  uint8_t* mask_ = nullptr;  // device
  Event copied_;  // on the compute stream, after the last copy of the pinned mask
};

}  // namespace dtbench::gpu
