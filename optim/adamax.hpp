// Adamax (Kingma and Ba 2015, section 7.1: Adam with the infinity norm), PyTorch 1.13 semantics:
//     d = g + lambda w
//     m = beta1 m + (1 - beta1) d
//     u = max(beta2 u, |d| + eps)
//     w = w - eta / (1 - beta1^t) * m / u
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct AdamaxOptions {
  double beta1 = 0.9;    // [0, 1)
  double beta2 = 0.999;  // [0, 1)
  double eps = 1e-8;     // > 0
};

class Adamax final : public Optimizer {
 public:
  Adamax(ParamTable table, CommonOptions common, AdamaxOptions options = {});
  size_t bytes_per_param() const override { return 28; }  // w rw, g r, m rw, u rw

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  AdamaxOptions options_;
  std::vector<float> m_, u_;
};

}  // namespace dtbench::optim
