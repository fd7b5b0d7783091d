// RMSProp (Hinton, Coursera lecture 6e) and its centred form (Graves 2013), PyTorch 1.13 semantics:
//     d = g + lambda w
//     v = alpha v + (1 - alpha) d^2
//     centred:  a = alpha a + (1 - alpha) d;  r = sqrt(max(v - a^2, 0)) + eps
//     plain:    r = sqrt(v) + eps
//     momentum: b = mu b + d / r;  w = w - eta b
//     else:     w = w - eta d / r
// The max(., 0) only differs from torch where rounding makes v - a^2 negative (torch gives NaN there).
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct RmspropOptions {
  double alpha = 0.99;    // [0, 1)
  double eps = 1e-8;      // > 0
  double momentum = 0.0;  // [0, 1)
  bool centered = false;
};

class Rmsprop final : public Optimizer {
 public:
  Rmsprop(ParamTable table, CommonOptions common, RmspropOptions options = {});
  // w rw, g r, v rw; + a rw when centred; + b rw with momentum.
  size_t bytes_per_param() const override {
    return 20 + (options_.centered ? 8 : 0) + (options_.momentum > 0.0 ? 8 : 0);
  }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  RmspropOptions options_;
  std::vector<float> v_;    // mean square
  std::vector<float> avg_;  // mean gradient (centred only)
  std::vector<float> buf_;  // momentum (momentum > 0 only)
};

}  // namespace dtbench::optim
