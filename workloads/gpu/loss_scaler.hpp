// Dynamic loss scaling for fp16 training (Micikevicius et al. 2018, "Mixed precision training", section
// 3.2), with the rule and defaults of PyTorch's torch.cuda.amp.GradScaler (1.13):
//   - the loss (in practice: the gradient of the logits) is multiplied by the scale S before backward, so
//     small gradients do not flush to zero in fp16; gradients are divided by S again in fp32;
//   - if any gradient element is Inf or NaN after the allreduce (every rank then sees the same), the step
//     is skipped and S is multiplied by backoff_factor; the run of good steps restarts;
//   - after growth_interval good steps in a row, S is multiplied by growth_factor.
// bf16 has fp32's exponent range and needs no scaling (a disabled scaler keeps S = 1 and never skips).
// Host-only: the caller finds the overflow (GpuModel::grads_finite) and asks update() what to do.
#pragma once

#include <cstdint>

#include "core/json.hpp"

namespace dtbench::gpu {

struct LossScalerOptions {
  bool enabled = true;
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;   // > 1
  double backoff_factor = 0.5;  // in (0, 1)
  int64_t growth_interval = 2000;  // >= 1
};

class LossScaler {
 public:
  // BadInput naming the option when a value is out of range.
  explicit LossScaler(const LossScalerOptions& options = {});

  double scale() const { return scale_; }
  // After backward and the allreduce: found_overflow is whether any gradient element is Inf or NaN.
  // Returns true when the optimizer step should be applied, false when it must be skipped. Adjusts S.
  bool update(bool found_overflow);

  int64_t skipped_steps() const { return skipped_; }
  int64_t consecutive_skips() const { return consecutive_skips_; }
  const LossScalerOptions& options() const { return options_; }

  // The state a checkpoint carries (scale, growth tracker, counters), restored exactly.
  Json save_state() const;
  void load_state(const Json& state);

 private:
  LossScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;  // good steps since the last change of S
  int64_t skipped_ = 0;
  int64_t consecutive_skips_ = 0;
};

}  // namespace dtbench::gpu
