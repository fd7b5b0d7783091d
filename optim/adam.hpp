// Adam (Kingma and Ba 2015) and AdamW (Loshchilov and Hutter 2019), with PyTorch 1.13 semantics:
//     d = g + lambda w            (Adam: L2 weight decay in the gradient)
//     w = (1 - eta lambda) w      (AdamW: decoupled decay, before the moment update; d = g)
//     m = beta1 m + (1 - beta1) d
//     v = beta2 v + (1 - beta2) d^2
//     w = w - eta / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The two share this file because the weight-decay form is their only difference. AdamW's factor is
// eta lambda (Loshchilov and Hutter, torch.optim.AdamW), not the seeds' 2 eta lambda of SGD's
// decoupled option.
#pragma once

#include <vector>

#include "optim/optimizer.hpp"

namespace dtbench::optim {

struct AdamOptions {
  double beta1 = 0.9;    // [0, 1)
  double beta2 = 0.999;  // [0, 1)
  double eps = 1e-8;     // > 0
  bool decoupled_weight_decay = false;  // true: AdamW
};

// Checks the options (BadInput naming the key); the CPU and the fused GPU optimizer (optim/gpu) both call it.
void check_options(const AdamOptions& options);

class Adam final : public Optimizer {
 public:
  // Named "adamw" when options.decoupled_weight_decay is set, else "adam".
  Adam(ParamTable table, CommonOptions common, AdamOptions options = {});
  // w read+write, g read, m and v read+write.
  size_t bytes_per_param() const override { return 28; }

 private:
  void update(float* w, const float* g, const StepContext& ctx) override;
  void save_extra(StateWriter& out) const override;
  void load_extra(StateReader& in) override;

  AdamOptions options_;
  std::vector<float> m_, v_;
};

}  // namespace dtbench::optim
