// Softmax cross-entropy with label smoothing, averaged over the batch: our own kernels (kernels.hpp) with
// the formulas and the order of workloads/cpu/softmax_cross_entropy.hpp (double sums, the maximum
// subtracted before exponentiating, the first maximum as the prediction). Logits are N x K fp32.
//
// The forward ends with the mean loss, the correct count and a label check in three doubles on the
// device; fetch() copies them to the host (it waits for the stream). The backward's gradient is multiplied
// by the loss scale, read when the operation runs.
#pragma once

#include <cstdint>
#include <string>

#include "core/cuda/device.hpp"
#include "workloads/gpu/plan.hpp"

namespace dtbench::gpu {

class SoftmaxCrossEntropy {
 public:
  SoftmaxCrossEntropy(GpuPlan& plan, std::string name, const Tensor& logits, float label_smoothing);
  // The device array the plan's labels are copied into (n int32).
  int32_t* labels() const { return labels_; }
  const Tensor& logits() const { return logits_; }

  // Waits for the stream; returns false when some label was outside [0, K), with its row in *bad_row.
  bool fetch(int* bad_row);
  double loss() const { return host_.as<double>()[0]; }
  int correct() const { return static_cast<int>(host_.as<double>()[1]); }

  // Appends the backward (the first operation of a training backward); returns dz, N x K fp32.
  Tensor backward(GpuPlan& plan);
  void set_loss_scale(float s) { loss_scale_ = s; }

 private:
  std::string name_;
  Tensor logits_;
  float smoothing_;
  float loss_scale_ = 1.0f;
  int32_t* labels_ = nullptr;
  double* lse_ = nullptr;
  double* row_loss_ = nullptr;
  int* row_correct_ = nullptr;
  double* result_ = nullptr;  // mean loss, correct count, 1 + first bad row (0: none)
  PinnedBuffer host_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace dtbench::gpu
