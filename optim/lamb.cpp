#include "optim/lamb.hpp"

#include <algorithm>
#include <cmath>

namespace dtbench::optim {

namespace {

// The update direction u of one element, shared by both passes.
struct Direction {
  float inv_bc1, inv_bc2, eps;
  float operator()(float m, float v, float w, float wd) const {
    return (m * inv_bc1) / (std::sqrt(v * inv_bc2) + eps) + wd * w;
  }
};

// Pass 1 over one chunk: the moment updates, and the sums of squares of w and of u.
std::pair<double, double> moments_pass(const float* __restrict w, const float* __restrict g, float* __restrict m,
                                       float* __restrict v, size_t n, float b1, float one_minus_b1, float b2,
                                       float one_minus_b2, Direction dir, float wd, GradTransform clip) {
  double ws = 0.0, us = 0.0;
#pragma omp simd reduction(+ : ws, us)
  for (size_t i = 0; i < n; ++i) {
    const float gi = clip(g[i]);
    const float mi = b1 * m[i] + one_minus_b1 * gi;
    const float vi = b2 * v[i] + one_minus_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const double u = dir(mi, vi, w[i], wd);
    ws += static_cast<double>(w[i]) * w[i];
    us += u * u;
  }
  return {ws, us};
}

// Pass 2: w -= step * u.
void apply_pass(float* __restrict w, const float* __restrict m, const float* __restrict v, size_t n, float step,
                Direction dir, float wd) {
  for (size_t i = 0; i < n; ++i) w[i] = w[i] - step * dir(m[i], v[i], w[i], wd);
}

}  // namespace

void check_options(const LambOptions& o) {
  require_in_unit_open(o.beta1, "/optimizer/beta1");
  require_in_unit_open(o.beta2, "/optimizer/beta2");
  require_positive(o.eps, "/optimizer/eps");
  require_nonnegative(o.trust_clip, "/optimizer/trust_clip");
}

Lamb::Lamb(ParamTable table, CommonOptions common, LambOptions options)
    : Optimizer("lamb", std::move(table), common), options_(options) {
  check_options(options_);
  m_.assign(this->table().buffer_size(), 0.0f);
  v_.assign(this->table().buffer_size(), 0.0f);
  trust_.assign(this->table().num_tensors(), 1.0);
}

void Lamb::update(float* w, const float* g, const StepContext& ctx) {
  const double t = static_cast<double>(ctx.t);
  const bool bc = options_.bias_correction;
  const Direction dir{static_cast<float>(bc ? 1.0 / (1.0 - std::pow(options_.beta1, t)) : 1.0),
                      static_cast<float>(bc ? 1.0 / (1.0 - std::pow(options_.beta2, t)) : 1.0),
                      static_cast<float>(options_.eps)};
  const float b1 = static_cast<float>(options_.beta1);
  const float b2 = static_cast<float>(options_.beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - options_.beta1);
  const float one_minus_b2 = static_cast<float>(1.0 - options_.beta2);
  const GradTransform clip = ctx.clip;

  // Pass 1: moments, ||w||^2 and ||u||^2 per tensor.
  sum_per_tensor(
      [&](const Chunk& c) {
        return moments_pass(w + c.begin, g + c.begin, m_.data() + c.begin, v_.data() + c.begin, c.end - c.begin, b1,
                            one_minus_b1, b2, one_minus_b2, dir, decay_f(c.tensor), clip);
      },
      w_sumsq_, u_sumsq_);

  for (size_t k = 0; k < table().num_tensors(); ++k) {
    const double w_norm = std::sqrt(w_sumsq_[k]);
    const double u_norm = std::sqrt(u_sumsq_[k]);
    const bool excluded = options_.trust_exclude_bn_bias && is_bn_or_bias(table()[k].kind);
    double trust = (excluded || w_norm <= 0.0 || u_norm <= 0.0) ? 1.0 : w_norm / u_norm;
    if (!excluded && options_.trust_clip > 0.0) trust = std::min(trust, options_.trust_clip);
    trust_[k] = trust;
  }

  // Pass 2: apply.
  for_each_chunk([&](const Chunk& c) {
    const float step = static_cast<float>(ctx.lr * trust_[c.tensor]);
    apply_pass(w + c.begin, m_.data() + c.begin, v_.data() + c.begin, c.end - c.begin, step, dir, decay_f(c.tensor));
  });
}

void Lamb::save_extra(StateWriter& out) const {
  out.put_floats(m_);
  out.put_floats(v_);
}

void Lamb::load_extra(StateReader& in) {
  in.get_floats(m_, "first moment");
  in.get_floats(v_, "second moment");
}

}  // namespace dtbench::optim
