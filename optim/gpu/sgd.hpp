// The four fused GPU optimizers (one .cpp each; kernels in optim_kernels.cu). Their options, defaults and
// checks are the CPU optimizers' (optim/sgd.hpp, adam.hpp, lars.hpp, lamb.hpp), and so are their
// formulas; see those headers for the definitions and references.
#pragma once

#include "optim/adam.hpp"
#include "optim/lamb.hpp"
#include "optim/lars.hpp"
#include "optim/sgd.hpp"
#include "workloads/gpu/fused_optimizer.hpp"

namespace dtbench::gpu {

// SGD with momentum, dampening, Nesterov and L2 or decoupled weight decay (PyTorch's torch.optim.SGD).
class GpuSgd final : public GpuOptimizer {
 public:
  GpuSgd(optim::ParamTable table, optim::CommonOptions common, optim::SgdOptions options, cudaStream_t stream);
  // The CPU optimizer's checks (BadInput naming the key); needs no device.
  static void check(const optim::SgdOptions& options);
  size_t bytes_per_param() const override { return options_.momentum > 0.0 ? 20 : 12; }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  std::vector<StateArray> state_arrays() const override;
  optim::SgdOptions options_;
  DeviceBuffer buf_;  // momentum buffer; empty without momentum
};

// Adam, and AdamW with options.decoupled_weight_decay.
class GpuAdam final : public GpuOptimizer {
 public:
  GpuAdam(optim::ParamTable table, optim::CommonOptions common, optim::AdamOptions options, cudaStream_t stream);
  // The CPU optimizer's checks (BadInput naming the key); needs no device.
  static void check(const optim::AdamOptions& options);
  size_t bytes_per_param() const override { return 28; }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  std::vector<StateArray> state_arrays() const override;
  optim::AdamOptions options_;
  DeviceBuffer m_, v_;
};

// LARS (You, Gitman and Ginsburg 2017), as the MLPerf ResNet reference applies it.
class GpuLars final : public GpuOptimizer {
 public:
  GpuLars(optim::ParamTable table, optim::CommonOptions common, optim::LarsOptions options, cudaStream_t stream);
  // The CPU optimizer's checks (BadInput naming the key); needs no device.
  static void check(const optim::LarsOptions& options);
  size_t bytes_per_param() const override { return 20; }
  // The trust ratio of each tensor at the last step (copied from the device).
  std::vector<double> last_trust() const;

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  std::vector<StateArray> state_arrays() const override;
  optim::LarsOptions options_;
  DeviceBuffer v_, trust_;
};

// LAMB (You et al. 2019, Algorithm 2).
class GpuLamb final : public GpuOptimizer {
 public:
  GpuLamb(optim::ParamTable table, optim::CommonOptions common, optim::LambOptions options, cudaStream_t stream);
  // The CPU optimizer's checks (BadInput naming the key); needs no device.
  static void check(const optim::LambOptions& options);
  size_t bytes_per_param() const override { return 28; }
  std::vector<double> last_trust() const;

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  std::vector<StateArray> state_arrays() const override;
  optim::LambOptions options_;
  DeviceBuffer m_, v_, trust_;
};

// Copies n doubles of a device array to the host (waits for `stream` first).
std::vector<double> download_doubles(const double* device, size_t n, cudaStream_t stream);

}  // namespace dtbench::gpu
