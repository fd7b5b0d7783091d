// Fused optimizers on the GPU: the CPU optimizers' semantics (optim/optimizer.hpp and one file each for
// SGD, Adam/AdamW, LARS, LAMB) over flat device buffers, with one kernel pass per update (LARS and LAMB:
// per-tensor norms first, then the update pass; kernels in optim_kernels.cu). Library dtbench_optim_gpu.
//
// What the base class takes from optim/ (optimizer.hpp, state_io.hpp, options.hpp, registry.hpp), so the
// two backends give the same steps:
//   - the same ParamTable, chunks (split_into_chunks, kChunkElements inside tensors) and per-tensor
//     weight decay (weight_decay_table: none on bias and bn tensors with no_decay_bn_bias);
//   - clipping by global norm and by value as a per-element transform inside the fused pass
//     (optim/clip.hpp);
//   - the non-finite check: before anything is written, the per-tensor sums of squares of the raw
//     gradient are computed on the device and copied to the host (one small copy, the only wait of a
//     step); a non-finite sum makes optim::report_non_finite throw NonFiniteGradient naming the first bad
//     tensor, element and step, in table order, and nothing is changed;
//   - state save/restore in the CPU optimizers' byte format (state_io.hpp: the common header, then the
//     state arrays as length-prefixed floats), so a state moves between the backends;
//   - option reading (optim/options.hpp: the registry's keys and defaults) and the option checks.
// step() enqueues on the stream given at construction and returns after the check; the update runs on
// the device afterwards, in stream order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/cuda/device.hpp"
#include "core/json.hpp"
#include "optim/optimizer.hpp"
#include "optim/gpu/optim_kernels.hpp"

namespace dtbench::gpu {

class GpuOptimizer {
 public:
  static constexpr size_t kChunkElements = optim::Optimizer::kChunkElements;

  // Needs a usable device (the calling thread's current one).
  GpuOptimizer(std::string name, optim::ParamTable table, optim::CommonOptions common, cudaStream_t stream);
  virtual ~GpuOptimizer();
  GpuOptimizer(const GpuOptimizer&) = delete;
  GpuOptimizer& operator=(const GpuOptimizer&) = delete;

  const std::string& name() const { return name_; }
  const optim::ParamTable& table() const { return table_; }
  const optim::CommonOptions& common() const { return common_; }
  int64_t steps_taken() const { return t_; }
  double weight_decay(size_t i) const { return decay_[i]; }
  cudaStream_t stream() const { return stream_; }

  // One update of every tensor. params and grads are device buffers of table().buffer_size() floats; grads
  // is not modified. lr finite and >= 0. Throws optim::NonFiniteGradient (nothing written) on NaN/Inf.
  void step(std::span<float> params, std::span<const float> grads, double lr);

  std::vector<uint8_t> save_state() const;
  void load_state(std::span<const uint8_t> bytes);

  virtual size_t bytes_per_param() const = 0;

 protected:
  struct StepContext {
    double lr = 0.0;
    int64_t t = 0;  // 1-based number of this step
    optim_kernels::Clip clip;
  };
  // A state array for save/restore (count 0 and data null: an empty array, still written).
  struct StateArray {
    const char* what;
    float* data;
    size_t count;
  };

  virtual void update(float* w, const float* g, const StepContext& ctx) = 0;
  virtual std::vector<StateArray> state_arrays() const = 0;

  const optim_kernels::Chunks& chunks() const { return chunks_; }
  const optim_kernels::Sums& sums() const { return sums_; }
  const double* device_decay() const { return decay_dev_.as<const double>(); }
  // Per-tensor masks for the trust-ratio exclusions: 1 for bias and bn tensors / all 0.
  const uint8_t* device_bn_or_bias() const { return bn_or_bias_dev_.as<const uint8_t>(); }
  const uint8_t* device_no_tensors() const { return none_dev_.as<const uint8_t>(); }
  // A zero-filled device array of table().buffer_size() floats (optimizer state).
  DeviceBuffer state_buffer() const;
  // A device array of one double per tensor, all 1 (trust ratios before the first step).
  DeviceBuffer per_tensor_ones() const;
  // A device array of one double per tensor, copied to the host (waits for the stream first).
  std::vector<double> per_tensor_to_host(const double* device) const;

 private:
  std::string name_;
  optim::ParamTable table_;
  optim::CommonOptions common_;
  cudaStream_t stream_;
  std::vector<double> decay_;
  DeviceBuffer chunk_begin_, chunk_end_, chunk_tensor_, tensor_first_, tensor_count_;
  DeviceBuffer decay_dev_, bn_or_bias_dev_, none_dev_, scratch_;
  PinnedBuffer host_sums_;
  optim_kernels::Chunks chunks_;
  optim_kernels::Sums sums_;
  int64_t t_ = 0;
};

// Builds the GPU optimizer named by the resolved "/optimizer" section (one of optim::gpu_optimizer_names(),
// the registry entries with a fused kernel), with the CPU factory's keys and defaults (optim/registry.cpp).
// BadInput naming the key for a bad value, and for an optimizer without GPU kernels, before the device is
// touched.
std::unique_ptr<GpuOptimizer> make_gpu_optimizer(const Json& section, optim::ParamTable table, cudaStream_t stream);

}  // namespace dtbench::gpu
