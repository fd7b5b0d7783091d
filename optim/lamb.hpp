// LAMB: layer-wise adaptive moments (You et al. 2019, arXiv:1904.00962, Algorithm 2). Per tensor, with
// lambda = the tensor's weight decay (decoupled, as in AdamW):
//     m = beta1 m + (1 - beta1) g,   v = beta2 v + (1 - beta2) g^2
//     m^ = m / (1 - beta1^t),  v^ = v / (1 - beta2^t)      (only with bias_correction; else m, v)
//     u = m^ / (sqrt(v^) + eps) + lambda w
//     trust = ||w|| / ||u||   if both are > 0, else 1;  clamped at trust_clip when that is > 0
//     w = w - lr trust u
// Bias correction is a flag because implementations differ (the paper's Algorithm 2 has it; NVIDIA's
// and several others allow turning it off), and so is the clamp (the paper's phi; some clamp the ratio
// at 10). With trust_exclude_bn_bias, bias and bn tensors get trust 1 (and, by no_decay_bn_bias, no
// weight decay).
//
// The trust ratio is the norm of the update itself, so LAMB takes two passes: the first updates m and
// v and sums ||w||^2 and ||u||^2; the second recomputes u from the new m and v with the same function
// and applies it (recomputing costs less memory traffic than storing u).
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct LambOptions {
  double beta1 = 0.9;                 // [0, 1)
  double beta2 = 0.999;               // [0, 1)
  double eps = 1e-6;                  // > 0
  bool bias_correction = true;
  double trust_clip = 0.0;            // >= 0, 0 = no clamp
  bool trust_exclude_bn_bias = true;  // trust 1 for bias and bn tensors
};

// Checks the options (BadInput naming the key); the CPU and the fused GPU optimizer (optim/gpu) both call it.
void check_options(const LambOptions& options);

class Lamb final : public Optimizer {
 public:
  Lamb(ParamTable table, CommonOptions common, LambOptions options = {});
  // The least any LAMB must stream: w rw, g r, m rw, v rw (the second pass reads w, m, v and writes w
  // again: 16 more bytes).
  size_t bytes_per_param() const override { return 28; }
  const std::vector<double>& last_trust() const { return trust_; }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  LambOptions options_;
  std::vector<float> m_, v_;
  std::vector<double> trust_;
  std::vector<double> w_sumsq_, u_sumsq_;  // scratch
};

}  // namespace dtbench::optim
