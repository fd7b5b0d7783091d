#include <cmath>

#include "optim/gpu/adam.hpp"

namespace dtbench::gpu {

GpuAdam::GpuAdam(optim::ParamTable table, optim::CommonOptions common, optim::AdamOptions options, cudaStream_t stream)
    : GpuOptimizer(options.decoupled_weight_decay ? "adamw" : "adam", std::move(table), common, stream),
      options_(options) {
  optim::check_options(options_);
  m_ = state_buffer();
  v_ = state_buffer();
}

void GpuAdam::update(float* w, const float* g, const StepContext& ctx) {
  const double t = static_cast<double>(ctx.t);
  optim_kernels::adam(w, g, m_.as<float>(), v_.as<float>(), chunks(), device_decay(), ctx.lr,
                      static_cast<float>(options_.beta1), static_cast<float>(1.0 - options_.beta1),
                      static_cast<float>(options_.beta2), static_cast<float>(1.0 - options_.beta2),
                      static_cast<float>(ctx.lr / (1.0 - std::pow(options_.beta1, t))),
                      static_cast<float>(std::sqrt(1.0 - std::pow(options_.beta2, t))),
                      static_cast<float>(options_.eps), options_.decoupled_weight_decay, ctx.clip, stream());
}

std::vector<GpuOptimizer::StateArray> GpuAdam::state_arrays() const {
  return {{"first moment", m_.as<float>(), table().buffer_size()},
          {"second moment", v_.as<float>(), table().buffer_size()}};
}

}  // namespace dtbench::gpu
