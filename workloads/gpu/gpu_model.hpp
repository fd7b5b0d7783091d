// The models on the GPU backend: the same architectures, parameter table and initial weights as
// workloads/models/model.hpp (CPU), built from cuDNN, cuBLAS and our own kernels.
//
// Parameters (fp32 master weights), gradients (fp32) and batch-norm running statistics live in one flat
// device buffer each, in the CPU model's canonical layout and order with the same names, so weights copy
// 1:1 between the backends (upload_* / download_*) and a reducer sees one device pointer and a count. The
// weights are initialised by building the CPU model with the same spec and seed and copying its buffers
// (initial_state in gpu_model.cpp, the one place that knows where they come from).
//
// Precisions: fp32; bf16 and fp16 compute with fp32 master weights (a compute-precision copy of the
// weights is refreshed at every forward; conv weight gradients are computed in the compute precision and
// widened into the fp32 gradient buffer as each tensor finishes). fp16 needs loss scaling: set_loss_scale
// multiplies the gradient of the logits, and each gradient tensor is divided by the same factor in fp32
// before it is announced, so grads() always holds true (unscaled) gradients; an overflow shows as Inf or
// NaN there (grads_finite).
//
// A training step is forward(...) then backward(on_ready). forward returns the mean loss, which waits
// for the device; backward only enqueues (on_ready follows each tensor's enqueued producer, see plan.hpp),
// so read gradients after synchronize() or order other streams after stream().
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "workloads/gpu/plan.hpp"
#include "workloads/gpu/precision.hpp"
#include "workloads/models/dropout_mask.hpp"
#include "workloads/models/model_spec.hpp"

namespace dtbench::gpu {

// models::validate, with precision fp32, bf16 or fp16 (BadInput naming the field).
void validate(const models::ModelSpec& spec);

class GpuModel {
 public:
  // Needs a usable device (BadInput "gpu model: no CUDA device: ..." otherwise) and uses the calling
  // thread's current device (select_device first).
  GpuModel(const models::ModelSpec& spec, uint64_t seed);
  ~GpuModel();
  GpuModel(GpuModel&&) noexcept;
  GpuModel& operator=(GpuModel&&) noexcept;

  const models::ModelSpec& spec() const;
  Precision precision() const;
  int device() const;
  cudaStream_t stream() const;

  // Device buffers (fp32): spans over device memory, for reducers and the fused optimizers. Never read or
  // write their elements on the host.
  std::span<float> params();
  std::span<float> grads();
  std::span<float> buffers();
  const std::vector<models::ParamInfo>& param_table() const;
  const std::vector<models::ParamInfo>& buffer_table() const;

  // Host copies (they synchronise the stream). Sizes must match (std::invalid_argument otherwise).
  void upload_params(std::span<const float> host);
  void download_params(std::span<float> host) const;
  void upload_buffers(std::span<const float> host);
  void download_buffers(std::span<float> host) const;
  void download_grads(std::span<float> host) const;

  // x: n images N x C x H x W fp32 on the host; labels: n ints in [0, classes). Returns the mean loss (waits
  // for the device). train = false: running statistics, no dropout. Throws BadInput on n < 1 or a label
  // out of range, before any work.
  double forward(const float* x, const int32_t* labels, int n, bool train);
  // Where the next training forward sits, as cpu::Model::set_batch_position (dropout masks; required before
  // every training forward of a model with dropout).
  void set_batch_position(const models::BatchPosition& at);
  // The same from device memory (e.g. a BatchStager batch, ordered on stream() already). A bad label is
  // found by the loss kernel and reported as BadInput after the forward.
  double forward_device(const float* x, const int32_t* labels, int n, bool train);
  const float* logits();  // n x classes of the last forward, copied to the host
  int correct() const;    // images of the last forward whose argmax logit is the label
  int last_batch() const;

  // Enqueues the gradients of the last training forward's mean loss (unscaled fp32, overwriting grads()).
  // on_ready(offset, size) once per tensor, in reverse layer order, after its producer is enqueued.
  void backward(const OnReady& on_ready = {});

  // fp16 loss scaling (1 for fp32 and bf16 unless set); used by the next backward.
  void set_loss_scale(float scale);
  float loss_scale() const;
  // Whether every gradient element is finite (waits for the device).
  bool grads_finite();
  // Sum of squares of the gradients, in double, over a fixed order (waits for the device).
  double grads_norm_sq();
  // The sum of squares of grads()[offset, offset + n) into slot `slot` (< the number of parameter tensors), enqueued
  // on the stream, so that it reads the range before anything enqueued later (an allreduce) overwrites it; and the
  // sum of slots 0..slots-1 (waits for the device).
  void range_norm_sq(size_t slot, size_t offset, size_t n);
  double slots_sum(size_t slots);

  void synchronize() const;

  double flops_per_sample_train() const;
  double macs_per_sample() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtbench::gpu
