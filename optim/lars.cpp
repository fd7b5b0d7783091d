#include "optim/lars.hpp"

#include <cmath>

namespace dtbench::optim {

namespace {

// Sums of squares of the weights and of the clipped gradient over one chunk.
std::pair<double, double> norms_pass(const float* __restrict w, const float* __restrict g, size_t n,
                                     GradTransform clip) {
  double ws = 0.0, gs = 0.0;
#pragma omp simd reduction(+ : ws, gs)
  for (size_t i = 0; i < n; ++i) {
    const double wi = w[i];
    const double gi = clip(g[i]);
    ws += wi * wi;
    gs += gi * gi;
  }
  return {ws, gs};
}

void update_pass(float* __restrict w, const float* __restrict g, float* __restrict v, size_t n, float mu,
                 float scaled_lr, float wd, GradTransform clip) {
  for (size_t i = 0; i < n; ++i) {
    const float vi = mu * v[i] + scaled_lr * (clip(g[i]) + wd * w[i]);
    v[i] = vi;
    w[i] = w[i] - vi;
  }
}

}  // namespace

void check_options(const LarsOptions& o) {
  require_in_unit_open(o.momentum, "/optimizer/momentum");
  require_positive(o.eta, "/optimizer/eta");
  require_nonnegative(o.eps, "/optimizer/eps");
}

Lars::Lars(ParamTable table, CommonOptions common, LarsOptions options)
    : Optimizer("lars", std::move(table), common), options_(options) {
  check_options(options_);
  v_.assign(this->table().buffer_size(), 0.0f);
  trust_.assign(this->table().num_tensors(), 1.0);
}

void Lars::update(float* w, const float* g, const StepContext& ctx) {
  const GradTransform clip = ctx.clip;
  sum_per_tensor([&](const Chunk& c) { return norms_pass(w + c.begin, g + c.begin, c.end - c.begin, clip); },
                 w_sumsq_, g_sumsq_);
  for (size_t k = 0; k < table().num_tensors(); ++k) {
    const double w_norm = std::sqrt(w_sumsq_[k]);
    const double g_norm = std::sqrt(g_sumsq_[k]);
    const bool excluded = options_.trust_exclude_bn_bias && is_bn_or_bias(table()[k].kind);
    trust_[k] = (excluded || w_norm <= 0.0 || g_norm <= 0.0)
                    ? 1.0
                    : options_.eta * w_norm / (g_norm + weight_decay(k) * w_norm + options_.eps);
  }
  const float mu = static_cast<float>(options_.momentum);
  for_each_chunk([&](const Chunk& c) {
    const float scaled_lr = static_cast<float>(ctx.lr * trust_[c.tensor]);
    update_pass(w + c.begin, g + c.begin, v_.data() + c.begin, c.end - c.begin, mu, scaled_lr, decay_f(c.tensor), clip);
  });
}

void Lars::save_extra(StateWriter& out) const { out.put_floats(v_); }

void Lars::load_extra(StateReader& in) { in.get_floats(v_, "momentum buffer"); }

}  // namespace dtbench::optim
