// Fused Adam and AdamW (options.decoupled_weight_decay) on the GPU: optim/adam.hpp's update in one kernel
// pass; options, defaults and checks are the CPU optimizer's.
#pragma once

#include "optim/adam.hpp"
#include "optim/gpu/fused_optimizer.hpp"

namespace dtbench::gpu {

class GpuAdam final : public GpuOptimizer {
 public:
  GpuAdam(optim::ParamTable table, optim::CommonOptions common, optim::AdamOptions options, cudaStream_t stream);
  size_t bytes_per_param() const override { return 28; }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  std::vector<StateArray> state_arrays() const override;
  optim::AdamOptions options_;
  DeviceBuffer m_, v_;
};

}  // namespace dtbench::gpu
