#include "core/cuda/cuda_check.hpp"
#include "workloads/gpu/gpu_optimizers.hpp"

namespace dtbench::gpu {

std::vector<double> download_doubles(const double* device, size_t n, cudaStream_t stream) {
  std::vector<double> out(n);
  DTB_CUDA(cudaStreamSynchronize(stream));
  if (n > 0) DTB_CUDA(cudaMemcpy(out.data(), device, n * sizeof(double), cudaMemcpyDeviceToHost));
  return out;
}

GpuLars::GpuLars(optim::ParamTable table, optim::CommonOptions common, optim::LarsOptions options, cudaStream_t stream)
    : GpuOptimizer("lars", std::move(table), common, stream), options_(options) {
  check(options_);
  v_ = state_buffer();
  std::vector<double> ones(std::max<size_t>(this->table().num_tensors(), 1), 1.0);
  trust_ = DeviceBuffer(ones.size() * sizeof(double));
  DTB_CUDA(cudaMemcpy(trust_.get(), ones.data(), ones.size() * sizeof(double), cudaMemcpyHostToDevice));
}

void GpuLars::check(const optim::LarsOptions& o) {
  optim::require_in_unit_open(o.momentum, "/optimizer/momentum");
  optim::require_positive(o.eta, "/optimizer/eta");
  optim::require_nonnegative(o.eps, "/optimizer/eps");
}

void GpuLars::update(float* w, const float* g, const StepContext& ctx) {
  // With trust_exclude_bn_bias off no tensor is excluded from the trust ratio.
  optim_kernels::lars(w, g, v_.as<float>(), chunks(), device_decay(),
                      options_.trust_exclude_bn_bias ? device_bn_or_bias() : device_no_tensors(), ctx.lr,
                      static_cast<float>(options_.momentum), options_.eta, options_.eps, ctx.clip, sums(),
                      trust_.as<double>(), stream());
}

std::vector<double> GpuLars::last_trust() const {
  return download_doubles(trust_.as<const double>(), table().num_tensors(), stream());
}

std::vector<GpuOptimizer::StateArray> GpuLars::state_arrays() const {
  return {{"momentum buffer", v_.as<float>(), table().buffer_size()}};
}

}  // namespace dtbench::gpu
