// AdaDelta (Zeiler 2012, Algorithm 1), PyTorch 1.13 semantics (with a learning rate, 1.0 = the paper):
//     d = g + lambda w
//     v = rho v + (1 - rho) d^2
//     delta = sqrt(u + eps) / sqrt(v + eps) * d
//     u = rho u + (1 - rho) delta^2
//     w = w - eta delta
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct AdadeltaOptions {
  double rho = 0.9;   // [0, 1)
  double eps = 1e-6;  // > 0
};

class Adadelta final : public Optimizer {
 public:
  Adadelta(ParamTable table, CommonOptions common, AdadeltaOptions options = {});
  size_t bytes_per_param() const override { return 28; }  // w rw, g r, v rw, u rw

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  AdadeltaOptions options_;
  std::vector<float> v_;  // mean squared gradient
  std::vector<float> u_;  // mean squared update
};

}  // namespace dtbench::optim
