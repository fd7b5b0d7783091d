// Fused LARS on the GPU (You, Gitman and Ginsburg 2017, as the MLPerf ResNet reference applies it):
// optim/lars.hpp's update (per-tensor norms, then one update pass); options, defaults and checks are the
// CPU optimizer's.
#pragma once

#include "optim/gpu/fused_optimizer.hpp"
#include "optim/lars.hpp"

namespace dtbench::gpu {

class GpuLars final : public GpuOptimizer {
 public:
  GpuLars(optim::ParamTable table, optim::CommonOptions common, optim::LarsOptions options, cudaStream_t stream);
  size_t bytes_per_param() const override { return 20; }
  // The trust ratio of each tensor at the last step (copied from the device).
  std::vector<double> last_trust() const { return per_tensor_to_host(trust_.as<const double>()); }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  std::vector<StateArray> state_arrays() const override;
  optim::LarsOptions options_;
  DeviceBuffer v_, trust_;
};

}  // namespace dtbench::gpu
