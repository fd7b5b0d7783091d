#include <cmath>

#include "optim/gpu/lamb.hpp"

namespace dtbench::gpu {

GpuLamb::GpuLamb(optim::ParamTable table, optim::CommonOptions common, optim::LambOptions options, cudaStream_t stream)
    : GpuOptimizer("lamb", std::move(table), common, stream), options_(options) {
  optim::check_options(options_);
  m_ = state_buffer();
  v_ = state_buffer();
  trust_ = per_tensor_ones();
}

void GpuLamb::update(float* w, const float* g, const StepContext& ctx) {
  const double t = static_cast<double>(ctx.t);
  const bool bc = options_.bias_correction;
  optim_kernels::lamb(w, g, m_.as<float>(), v_.as<float>(), chunks(), device_decay(),
                      options_.trust_exclude_bn_bias ? device_bn_or_bias() : device_no_tensors(), ctx.lr,
                      static_cast<float>(options_.beta1), static_cast<float>(1.0 - options_.beta1),
                      static_cast<float>(options_.beta2), static_cast<float>(1.0 - options_.beta2),
                      static_cast<float>(bc ? 1.0 / (1.0 - std::pow(options_.beta1, t)) : 1.0),
                      static_cast<float>(bc ? 1.0 / (1.0 - std::pow(options_.beta2, t)) : 1.0),
                      static_cast<float>(options_.eps), options_.trust_clip, ctx.clip, sums(), trust_.as<double>(),
                      stream());
}

std::vector<GpuOptimizer::StateArray> GpuLamb::state_arrays() const {
  return {{"first moment", m_.as<float>(), table().buffer_size()},
          {"second moment", v_.as<float>(), table().buffer_size()}};
}

}  // namespace dtbench::gpu
