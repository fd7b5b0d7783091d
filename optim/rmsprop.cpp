#include "optim/rmsprop.hpp"

#include <algorithm>

#include <cmath>

namespace dtbench::optim {

namespace {

template <bool kCentered, bool kMomentum>
void rmsprop_pass(float* __restrict w, const float* __restrict g, float* __restrict v, float* __restrict a,
                  float* __restrict b, size_t n, float lr, float alpha, float one_minus_alpha, float eps, float mu,
                  float wd, GradTransform clip) {
  for (size_t i = 0; i < n; ++i) {
    const float d = clip(g[i]) + wd * w[i];
    const float vi = alpha * v[i] + one_minus_alpha * d * d;
    v[i] = vi;
    float r;
    if constexpr (kCentered) {
      const float ai = alpha * a[i] + one_minus_alpha * d;
      a[i] = ai;
      const float var = vi - ai * ai;
      r = std::sqrt(var > 0.0f ? var : 0.0f) + eps;
    } else {
      r = std::sqrt(vi) + eps;
    }
    if constexpr (kMomentum) {
      const float bi = mu * b[i] + d / r;
      b[i] = bi;
      w[i] = w[i] - lr * bi;
    } else {
      w[i] = w[i] - lr * (d / r);
    }
  }
}

}  // namespace

Rmsprop::Rmsprop(ParamTable table, CommonOptions common, RmspropOptions options)
    : Optimizer("rmsprop", std::move(table), common), options_(options) {
  require_in_unit_open(options_.alpha, "/optimizer/alpha");
  require_positive(options_.eps, "/optimizer/eps");
  require_in_unit_open(options_.momentum, "/optimizer/momentum");
  const size_t n = this->table().buffer_size();
  v_.assign(n, 0.0f);
  if (options_.centered) avg_.assign(n, 0.0f);
  if (options_.momentum > 0.0) buf_.assign(n, 0.0f);
}

void Rmsprop::update(float* w, const float* g, const StepContext& ctx) {
  const float lr = static_cast<float>(ctx.lr);
  const float alpha = static_cast<float>(options_.alpha);
  const float one_minus_alpha = static_cast<float>(1.0 - options_.alpha);
  const float eps = static_cast<float>(options_.eps);
  const float mu = static_cast<float>(options_.momentum);
  const bool centered = options_.centered;
  const bool momentum = options_.momentum > 0.0;
  for_each_chunk([&](const Chunk& c) {
    const size_t n = c.end - c.begin;
    float* vp = v_.data() + c.begin;
    float* ap = centered ? avg_.data() + c.begin : nullptr;
    float* bp = momentum ? buf_.data() + c.begin : nullptr;
    const float wd = decay_f(c.tensor);
    float* wp = w + c.begin;
    const float* gp = g + c.begin;
    if (centered && momentum) rmsprop_pass<true, true>(wp, gp, vp, ap, bp, n, lr, alpha, one_minus_alpha, eps, mu, wd, ctx.clip);
    else if (centered) rmsprop_pass<true, false>(wp, gp, vp, ap, bp, n, lr, alpha, one_minus_alpha, eps, mu, wd, ctx.clip);
    else if (momentum) rmsprop_pass<false, true>(wp, gp, vp, ap, bp, n, lr, alpha, one_minus_alpha, eps, mu, wd, ctx.clip);
    else rmsprop_pass<false, false>(wp, gp, vp, ap, bp, n, lr, alpha, one_minus_alpha, eps, mu, wd, ctx.clip);
  });
}

void Rmsprop::save_extra(StateWriter& out) const {
  out.put_floats(v_);
  out.put_floats(avg_);
  out.put_floats(buf_);
}

void Rmsprop::load_extra(StateReader& in) {
  in.get_floats(v_, "mean square");
  if (!in.get_switched_floats(avg_, "mean gradient")) std::fill(avg_.begin(), avg_.end(), 0.0f);  // torch starts it at 0
  if (!in.get_switched_floats(buf_, "momentum buffer")) std::fill(buf_.begin(), buf_.end(), 0.0f);  // torch starts it at 0
}

}  // namespace dtbench::optim
