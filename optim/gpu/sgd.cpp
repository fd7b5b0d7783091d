#include "optim/gpu/sgd.hpp"

namespace dtbench::gpu {

GpuSgd::GpuSgd(optim::ParamTable table, optim::CommonOptions common, optim::SgdOptions options, cudaStream_t stream)
    : GpuOptimizer("sgd", std::move(table), common, stream), options_(options) {
  optim::check_options(options_);
  if (options_.momentum > 0.0) buf_ = state_buffer();
}

void GpuSgd::update(float* w, const float* g, const StepContext& ctx) {
  optim_kernels::sgd(w, g, buf_.as<float>(), chunks(), device_decay(), ctx.lr, static_cast<float>(options_.momentum),
                     static_cast<float>(1.0 - options_.dampening), ctx.t == 1, options_.nesterov,
                     options_.decoupled_weight_decay, ctx.clip, stream());
}

std::vector<GpuOptimizer::StateArray> GpuSgd::state_arrays() const {
  const size_t n = buf_.get() == nullptr ? 0 : table().buffer_size();
  return {{"momentum buffer", buf_.as<float>(), n}};
}

}  // namespace dtbench::gpu
