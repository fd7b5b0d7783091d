// LARS: layer-wise adaptive rate scaling (You, Gitman and Ginsburg 2017, arXiv:1708.03888, Algorithm 1),
// as the MLPerf ResNet reference applies it (mlcommons/training, image_classification
// tensorflow2/lars_optimizer.py). Per tensor, with beta = the tensor's weight decay:
//     trust = eta ||w|| / (||g|| + beta ||w|| + eps)   if ||w|| > 0 and ||g|| > 0, else 1
//     v = mu v + lr trust (g + beta w)
//     w = w - v
// ||g|| is the norm of the (clipped) gradient before weight decay. Bias and batch-norm tensors are
// skipped: with trust_exclude_bn_bias their trust is 1, and with no_decay_bn_bias (the common key)
// their beta is 0, so by default they get plain momentum SGD, as in the MLPerf reference. The learning
// rate sits inside the momentum buffer (the seeds' and MLPerf's form), unlike torch's SGD.
//
// The norms need one read-only pass over w and g before the fused update pass.
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct LarsOptions {
  double momentum = 0.9;              // [0, 1)
  double eta = 0.001;                 // trust coefficient, > 0
  double eps = 0.0;                   // >= 0
  bool trust_exclude_bn_bias = true;  // trust 1 for bias and bn tensors
};

// Checks the options (BadInput naming the key); the CPU and the fused GPU optimizer (optim/gpu) both call it.
void check_options(const LarsOptions& options);

class Lars final : public Optimizer {
 public:
  Lars(ParamTable table, CommonOptions common, LarsOptions options = {});
  // The update pass: w rw, g r, v rw (the norm pass reads w and g once more: 8 bytes).
  size_t bytes_per_param() const override { return 20; }
  // The trust ratio each tensor got at the last step (1 for excluded tensors), for logging and tests.
  const std::vector<double>& last_trust() const { return trust_; }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  LarsOptions options_;
  std::vector<float> v_;
  std::vector<double> trust_;
  std::vector<double> w_sumsq_, g_sumsq_;  // scratch
};

}  // namespace dtbench::optim
