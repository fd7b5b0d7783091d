// Softmax cross-entropy with label smoothing, averaged over the batch (host code on N x K fp32 logits).
//
// For logits z (one row, K classes) and label y: log p_k = z_k - log sum_j exp z_j; with smoothing eps the
// target is q = (1 - eps) onehot(y) + eps / K (Szegedy et al. 2016, as PyTorch's CrossEntropyLoss(
// label_smoothing=eps)), the loss is -sum_k q_k log p_k, and the mean over the batch is reported. Its gradient
// is dz = (p - q) / N. Sums are taken in double; the max is subtracted before exponentiating.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/cpu/plan.hpp"

namespace dtbench::cpu {

class SoftmaxCrossEntropy {
 public:
  // logits: N x K plain fp32 (e.g. a Linear with plain_f32_output). Construct through Plan::keep (the
  // operations refer to this object).
  SoftmaxCrossEntropy(Plan& plan, std::string name, const dnnl::memory& logits, float label_smoothing);
  // Copies N labels for the next forward; each must be in [0, K) (the caller validates).
  void set_labels(const int32_t* labels);
  double loss() const { return loss_; }
  int correct() const { return correct_; }
  const float* logits() const { return static_cast<const float*>(logits_.get_data_handle()); }
  // Appends the backward (the first operation of a training backward); returns dz, N x K plain fp32.
  dnnl::memory backward(Plan& plan);

 private:
  void forward();
  int n_, k_;
  float smoothing_;
  dnnl::memory logits_;
  std::vector<int32_t> labels_;
  std::vector<float> prob_;
  double loss_ = 0.0;
  int correct_ = 0;
};

}  // namespace dtbench::cpu
