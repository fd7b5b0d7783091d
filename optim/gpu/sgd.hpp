// Fused SGD on the GPU: optim/sgd.hpp's update (PyTorch's torch.optim.SGD: momentum, dampening, Nesterov,
// L2 or decoupled weight decay) in one kernel pass; options, defaults and checks are the CPU optimizer's.
#pragma once

#include "optim/gpu/fused_optimizer.hpp"
#include "optim/sgd.hpp"

namespace dtbench::gpu {

class GpuSgd final : public GpuOptimizer {
 public:
  GpuSgd(optim::ParamTable table, optim::CommonOptions common, optim::SgdOptions options, cudaStream_t stream);
  size_t bytes_per_param() const override { return options_.momentum > 0.0 ? 20 : 12; }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  std::vector<StateArray> state_arrays() const override;
  optim::SgdOptions options_;
  DeviceBuffer buf_;  // momentum buffer; empty without momentum
};

}  // namespace dtbench::gpu
