// Online estimate of the gradient noise scale B_simple = tr(Sigma) / |G|^2 (McCandlish et al. 2018,
// "An Empirical Model of Large-Batch Training", arXiv:1812.06162, appendix A.1), at no extra
// communication: data-parallel training already has gradients at two batch sizes.
//
//   B_small = b (one rank's batch): |G_small|^2 is the mean over ranks of each rank's local gradient
//             norm squared, taken before the allreduce;
//   B_big   = K b (the global batch): |G_big|^2 is the norm squared of the averaged gradient.
// Unbiased estimates of the true gradient norm and the trace of the per-example covariance:
//   |G|^2    ~ (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)
//   tr(Sigma) ~ (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big)
// Both are noisy step to step, so each is smoothed with an exponential moving average separately and
// only then divided (as the paper recommends). Needs K >= 2.
#pragma once

#include <limits>
#include <optional>

#include "core/json.hpp"

namespace dtbench {

class NoiseScaleEstimator {
 public:
  // decay: EMA factor per step (0.99 averages over about 100 steps).
  NoiseScaleEstimator(double small_batch, double big_batch, double decay = 0.99);
  // A step with a non-finite norm (an fp16 overflow the loss scaler skips) is not observed.
  void observe(double small_norm_sq, double big_norm_sq);
  // The current B_simple, or nothing before the first observation or while |G|^2 estimate <= 0.
  std::optional<double> b_simple() const;
  double ema_gradient_norm_sq() const { return g2_; }
  double ema_trace_sigma() const { return trace_; }
  // Exact state for checkpoints (JSON numbers round-trip doubles exactly).
  Json save_state() const { return {{"g2", g2_}, {"trace", trace_}, {"weight", weight_}}; }
  // A state of the shape save_state writes (run_state.cpp checks it); JSON writes a NaN as null, read back as NaN.
  void load_state(const Json& s) {
    if (!s.is_object() || !s.contains("g2")) return;
    const auto number = [&](const char* key) {
      return s.contains(key) && s[key].is_number() ? s[key].get<double>() : std::numeric_limits<double>::quiet_NaN();
    };
    g2_ = number("g2"), trace_ = number("trace"), weight_ = number("weight");
  }

 private:
  double b_small_, b_big_, decay_;
  double g2_ = 0, trace_ = 0, weight_ = 0;  // weight_: bias correction of the EMAs (as in Adam)
};

}  // namespace dtbench
