#include "optim/clip.hpp"

namespace dtbench::optim {

double clip_norm_scale(double global_norm, double max_norm) {
  if (max_norm <= 0.0) return 1.0;
  // The 1e-6 keeps a zero gradient finite and matches torch.nn.utils.clip_grad_norm_.
  const double coef = max_norm / (global_norm + 1e-6);
  return coef < 1.0 ? coef : 1.0;
}

GradTransform make_grad_transform(double clip_norm, double clip_value, double global_norm) {
  GradTransform t;
  t.scale = static_cast<float>(clip_norm_scale(global_norm, clip_norm));
  if (clip_value > 0.0) t.limit = static_cast<float>(clip_value);
  return t;
}

}  // namespace dtbench::optim
