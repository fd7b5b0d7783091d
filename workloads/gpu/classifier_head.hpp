// The fully connected end of the MLP and of the Simple CNN on the GPU backend, the twin of
// workloads/cpu/classifier_head.hpp: x (N x anything, flattened) -> fc1 (hidden) -> ReLU -> [dropout] -> fc2
// (classes), with the parameters fc1.weight, fc1.bias, fc2.weight, fc2.bias.
#pragma once

#include <cstdint>
#include <functional>

#include "workloads/gpu/network.hpp"

namespace dtbench::gpu {

class ClassifierHead {
 public:
  struct Built {
    Tensor logits;  // N x classes fp32
    // Appends the backward given the gradient of the logits; returns dx when need_dx (else an empty tensor).
    std::function<Tensor(GpuPlan&, const Tensor& dlogits, bool need_dx)> backward;
  };

  // `features`: the number of inputs per image (fc1's fan-in).
  ClassifierHead(const models::ModelSpec& spec, const TableIndex& t, int64_t features, DropoutSource dropout);
  Built build(GpuPlan& plan, const Tensor& x) const;

 private:
  int hidden_, classes_;
  float dropout_;
  DropoutSource dropout_source_;
  size_t fc1_weight_ = 0, fc1_bias_ = 0, fc2_weight_ = 0, fc2_bias_ = 0;
};

}  // namespace dtbench::gpu
