// Delay-compensated asynchronous SGD (Zheng et al. 2017, "Asynchronous stochastic gradient descent
// with delay compensation", DC-ASGD-c: constant lambda), in MXNet's DCASGD form with momentum mu:
//     d = g + wd w + lambda g * g * (w - w_bak)          (elementwise products)
//     v = mu v - eta d                                   (v = -eta d without momentum)
//     w = w + v
// g was computed at the weights w_bak, and w has moved on since (other workers' updates); the term
// lambda g.g.(w - w_bak) is the paper's cheap diagonal approximation of the Hessian correction
// H (w - w_bak), with g.g standing in for the Hessian diagonal.
//
// Where w_bak comes from:
//   - step(params, grads, lr, weights_at_grad): the asynchronous trainer passes the copy of the weights
//     the worker computed the gradient on (the paper's per-worker backup);
//   - step(params, grads, lr): MXNet's behaviour, w_bak = the weights before the previous update (the
//     optimizer keeps them; on the first step w_bak = w, so there is no compensation).
// Either way the weights before this update are kept, so the two calls can be mixed.
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct DcasgdOptions {
  double momentum = 0.0;  // [0, 1)
  double lambda = 0.04;   // >= 0
};

class Dcasgd final : public Optimizer {
 public:
  Dcasgd(ParamTable table, CommonOptions common, DcasgdOptions options = {});
  bool uses_weight_backup() const override { return true; }
  // w rw, g r, previous weights rw; + v rw with momentum. (A passed backup adds 4 more reads.)
  size_t bytes_per_param() const override { return options_.momentum > 0.0 ? 28 : 20; }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  DcasgdOptions options_;
  std::vector<float> previous_;  // weights before the last update
  std::vector<float> v_;         // momentum (momentum > 0 only)
};

}  // namespace dtbench::optim
