// Fused LAMB on the GPU (You et al. 2019, Algorithm 2): optim/lamb.hpp's update in two kernel passes (the
// trust ratio is the norm of the update itself); options, defaults and checks are the CPU optimizer's.
#pragma once

#include "optim/gpu/fused_optimizer.hpp"
#include "optim/lamb.hpp"

namespace dtbench::gpu {

class GpuLamb final : public GpuOptimizer {
 public:
  GpuLamb(optim::ParamTable table, optim::CommonOptions common, optim::LambOptions options, cudaStream_t stream);
  size_t bytes_per_param() const override { return 28; }
  // The trust ratio of each tensor at the last step (copied from the device).
  std::vector<double> last_trust() const { return per_tensor_to_host(trust_.as<const double>()); }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  std::vector<StateArray> state_arrays() const override;
  optim::LambOptions options_;
  DeviceBuffer m_, v_, trust_;
};

}  // namespace dtbench::gpu
