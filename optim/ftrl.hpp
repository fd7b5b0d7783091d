// FTRL-Proximal (McMahan et al. 2013, "Ad click prediction: a view from the trenches", Algorithm 1),
// per coordinate, with the learning-rate power of tf.keras.optimizers.Ftrl (its documented update rule;
// p = lr_power, -0.5 gives the paper's sqrt):
//     d = g + lambda w                       (weight_decay as L2 in the gradient, as for SGD/Adam)
//     n' = n + d^2                           (n starts at initial_accumulator_value)
//     sigma = (n'^(-p) - n^(-p)) / eta
//     z = z + d - sigma w
//     n = n'
//     w = 0                                          if |z| <= l1
//     w = (sign(z) l1 - z) / ((beta + n^(-p)) / eta + l2)   otherwise
// l1 and l2 are the paper's lambda_1 and lambda_2 (as in the Keras documentation and MXNet's Ftrl;
// TensorFlow's ApplyFtrl kernel uses 2 l2 in the denominator instead: we follow the paper). beta is the
// paper's beta (MXNet's default 1; Keras' 0). The initial weights only enter through sigma w: from the
// first step on, w is a function of z and n.
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct FtrlOptions {
  double l1 = 0.0;                         // >= 0
  double l2 = 0.0;                         // >= 0
  double beta = 1.0;                       // >= 0
  double lr_power = -0.5;                  // <= 0
  double initial_accumulator_value = 0.1;  // >= 0
};

class Ftrl final : public Optimizer {
 public:
  Ftrl(ParamTable table, CommonOptions common, FtrlOptions options = {});
  size_t bytes_per_param() const override { return 28; }  // w rw, g r, z rw, n rw

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  FtrlOptions options_;
  std::vector<float> z_, n_;
};

}  // namespace dtbench::optim
