#include "optim/gpu/lars.hpp"

namespace dtbench::gpu {

GpuLars::GpuLars(optim::ParamTable table, optim::CommonOptions common, optim::LarsOptions options, cudaStream_t stream)
    : GpuOptimizer("lars", std::move(table), common, stream), options_(options) {
  optim::check_options(options_);
  v_ = state_buffer();
  trust_ = per_tensor_ones();
}

void GpuLars::update(float* w, const float* g, const StepContext& ctx) {
  // With trust_exclude_bn_bias off no tensor is excluded from the trust ratio.
  optim_kernels::lars(w, g, v_.as<float>(), chunks(), device_decay(),
                      options_.trust_exclude_bn_bias ? device_bn_or_bias() : device_no_tensors(), ctx.lr,
                      static_cast<float>(options_.momentum), options_.eta, options_.eps, ctx.clip, sums(),
                      trust_.as<double>(), stream());
}

std::vector<GpuOptimizer::StateArray> GpuLars::state_arrays() const {
  return {{"momentum buffer", v_.as<float>(), table().buffer_size()}};
}

}  // namespace dtbench::gpu
