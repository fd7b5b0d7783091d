// NAdam (Dozat 2016, "Incorporating Nesterov momentum into Adam"), as documented for torch.optim.NAdam
// with momentum decay psi:
//     mu_t = beta1 (1 - 0.5 * 0.96^(t psi))          (momentum schedule)
//     d = g + lambda w
//     m = beta1 m + (1 - beta1) d,   v = beta2 v + (1 - beta2) d^2
//     denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//     w = w - eta (1 - mu_t) / (1 - prod_{i<=t} mu_i) * d / denom
//           - eta mu_{t+1} / (1 - prod_{i<=t+1} mu_i) * m / denom
// PyTorch 1.13's default single-tensor code multiplies mu_t into the second product twice
// (mu_product * mu * mu_next; fixed in later releases); its foreach code and its documentation follow
// the formula above, which is what we implement and what optim/reference compares against.
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct NadamOptions {
  double beta1 = 0.9;              // [0, 1)
  double beta2 = 0.999;            // [0, 1)
  double eps = 1e-8;               // > 0
  double momentum_decay = 0.004;   // psi >= 0
};

class Nadam final : public Optimizer {
 public:
  Nadam(ParamTable table, CommonOptions common, NadamOptions options = {});
  size_t bytes_per_param() const override { return 28; }  // w rw, g r, m rw, v rw

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  NadamOptions options_;
  double mu_product_ = 1.0;  // prod_{i<=t} mu_i
  std::vector<float> m_, v_;
};

}  // namespace dtbench::optim
