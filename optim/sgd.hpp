// Stochastic gradient descent with momentum, dampening, Nesterov momentum (NAG) and weight decay,
// with PyTorch's torch.optim.SGD semantics (1.13):
//     d = g + lambda w                          (L2 weight decay, the default form)
//     b = d                      on the first step with momentum
//     b = mu b + (1 - dampening) d              afterwards
//     d = d + mu b  (Nesterov)   or   d = b
//     w = w - eta d
// The momentum buffer holds gradients, not steps, so a change of eta takes effect at once (unlike
// the seeds' "s <- mu s + eta g + eta lambda w" form, which LARS keeps).
//
// decoupled_weight_decay replaces the L2 term by the seeds' form (MXNet Gluon notes):
//     w = (1 - 2 eta lambda) w - eta d          with d computed from g alone
// The factor 2 is the seeds': lambda is the coefficient of lambda ||w||^2 in the loss, whose gradient
// is 2 lambda w. The L2 form adds lambda w, i.e. it regularises with (lambda / 2) ||w||^2. So the same
// weight_decay value decays twice as fast in the decoupled form; a config that switches forms should
// halve it.
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct SgdOptions {
  double momentum = 0.9;   // [0, 1)
  double dampening = 0.0;  // [0, 1]
  bool nesterov = false;   // needs momentum > 0 and dampening 0 (as torch)
  bool decoupled_weight_decay = false;
};

// Checks the options (BadInput naming the key); the CPU and the fused GPU optimizer (optim/gpu) both call it.
void check_options(const SgdOptions& options);

class Sgd final : public Optimizer {
 public:
  Sgd(ParamTable table, CommonOptions common, SgdOptions options = {});
  // w read+write, g read, and the momentum buffer read+write when there is one.
  size_t bytes_per_param() const override { return options_.momentum > 0.0 ? 20 : 12; }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  SgdOptions options_;
  std::vector<float> buf_;  // momentum buffer; empty without momentum
  bool fresh_buffer_ = false;  // buf_ starts at the next step (a restored state had no buffer)
};

}  // namespace dtbench::optim
