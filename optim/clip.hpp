// Gradient clipping by global norm and by value.
//
// Clipping never rewrites the caller's gradient buffer: it becomes a per-element transform
//     g' = clamp(scale * g, -limit, +limit)
// that each optimizer applies inside its one fused pass. The order follows Keras (clipnorm, then
// clipvalue): the norm scale is computed from the raw gradient, then values are clamped.
//   - by global norm (torch.nn.utils.clip_grad_norm_): scale = max_norm / (||g|| + 1e-6) when that is
//     below 1, else 1; ||g|| is the 2-norm over all tensors together.
//   - by value (torch.nn.utils.clip_grad_value_): limit = clip_value.
// With both off, scale = 1 and limit = +inf, and g' = g bit for bit (for finite g).
#pragma once

#include <algorithm>
#include <limits>

namespace dtbench::optim {

struct GradTransform {
  float scale = 1.0f;
  float limit = std::numeric_limits<float>::infinity();

  float operator()(float g) const { return std::min(std::max(g * scale, -limit), limit); }
};

// The global-norm scale factor: 1 when max_norm is 0 (off) or the norm is within it.
double clip_norm_scale(double global_norm, double max_norm);

// The transform for a step from the clipping options (0 = off) and the raw gradient's global 2-norm
// (only read when clip_norm > 0).
GradTransform make_grad_transform(double clip_norm, double clip_value, double global_norm);

}  // namespace dtbench::optim
