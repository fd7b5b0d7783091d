#include "workloads/train/noise_scale.hpp"

#include <cmath>

namespace dtbench {

NoiseScaleEstimator::NoiseScaleEstimator(double small_batch, double big_batch, double decay)
    : b_small_(small_batch), b_big_(big_batch), decay_(decay) {}

void NoiseScaleEstimator::observe(double small_norm_sq, double big_norm_sq) {
  if (b_big_ <= b_small_) return;
  // A step whose gradients overflowed (fp16's loss scaler skips it and the run goes on) says nothing of the noise:
  // taken in, its Inf would make both averages NaN for the rest of the run.
  if (!std::isfinite(small_norm_sq) || !std::isfinite(big_norm_sq)) return;
  double g2 = (b_big_ * big_norm_sq - b_small_ * small_norm_sq) / (b_big_ - b_small_);
  double trace = (small_norm_sq - big_norm_sq) / (1.0 / b_small_ - 1.0 / b_big_);
  g2_ = decay_ * g2_ + (1 - decay_) * g2;
  trace_ = decay_ * trace_ + (1 - decay_) * trace;
  weight_ = decay_ * weight_ + (1 - decay_);
}

std::optional<double> NoiseScaleEstimator::b_simple() const {
  if (weight_ <= 0 || g2_ <= 0) return std::nullopt;
  // The bias corrections of numerator and denominator cancel in the ratio.
  return trace_ / g2_;
}

}  // namespace dtbench
