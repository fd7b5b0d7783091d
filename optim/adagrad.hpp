// AdaGrad (Duchi, Hazan and Singer 2011), PyTorch 1.13 semantics:
//     eta_t = eta / (1 + (t - 1) lr_decay)
//     d = g + lambda w
//     s = s + d^2                      (s starts at initial_accumulator_value)
//     w = w - eta_t d / (sqrt(s) + eps)
// The seeds' "eta_ij(t) = eta_0 / sqrt(K + sum g^2)" is the same preconditioner with K folded into the
// initial accumulator.
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct AdagradOptions {
  double lr_decay = 0.0;                   // >= 0
  double initial_accumulator_value = 0.0;  // >= 0
  double eps = 1e-10;                      // > 0
};

class Adagrad final : public Optimizer {
 public:
  Adagrad(ParamTable table, CommonOptions common, AdagradOptions options = {});
  size_t bytes_per_param() const override { return 20; }  // w rw, g r, s rw

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  AdagradOptions options_;
  std::vector<float> sum_;
};

}  // namespace dtbench::optim
