#include "optim/nadam.hpp"

#include <cmath>

namespace dtbench::optim {

namespace {

void nadam_pass(float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict v, size_t n,
                float b1, float one_minus_b1, float b2, float one_minus_b2, float bc2_sqrt, float eps, float coef_g,
                float coef_m, float wd, GradTransform clip) {
  for (size_t i = 0; i < n; ++i) {
    const float d = clip(g[i]) + wd * w[i];
    const float mi = b1 * m[i] + one_minus_b1 * d;
    const float vi = b2 * v[i] + one_minus_b2 * d * d;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / bc2_sqrt + eps;
    w[i] = (w[i] - coef_g * (d / denom)) - coef_m * (mi / denom);
  }
}

}  // namespace

Nadam::Nadam(ParamTable table, CommonOptions common, NadamOptions options)
    : Optimizer("nadam", std::move(table), common), options_(options) {
  require_in_unit_open(options_.beta1, "/optimizer/beta1");
  require_in_unit_open(options_.beta2, "/optimizer/beta2");
  require_positive(options_.eps, "/optimizer/eps");
  require_nonnegative(options_.momentum_decay, "/optimizer/momentum_decay");
  m_.assign(this->table().buffer_size(), 0.0f);
  v_.assign(this->table().buffer_size(), 0.0f);
}

void Nadam::update(float* w, const float* g, const StepContext& ctx) {
  const double t = static_cast<double>(ctx.t);
  const double psi = options_.momentum_decay;
  const double mu = options_.beta1 * (1.0 - 0.5 * std::pow(0.96, t * psi));
  const double mu_next = options_.beta1 * (1.0 - 0.5 * std::pow(0.96, (t + 1.0) * psi));
  const double mu_product = mu_product_ * mu;
  const float coef_g = static_cast<float>(ctx.lr * (1.0 - mu) / (1.0 - mu_product));
  const float coef_m = static_cast<float>(ctx.lr * mu_next / (1.0 - mu_product * mu_next));
  const float b1 = static_cast<float>(options_.beta1);
  const float b2 = static_cast<float>(options_.beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - options_.beta1);
  const float one_minus_b2 = static_cast<float>(1.0 - options_.beta2);
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(options_.beta2, t)));
  const float eps = static_cast<float>(options_.eps);
  for_each_chunk([&](const Chunk& c) {
    nadam_pass(w + c.begin, g + c.begin, m_.data() + c.begin, v_.data() + c.begin, c.end - c.begin, b1, one_minus_b1,
               b2, one_minus_b2, bc2_sqrt, eps, coef_g, coef_m, decay_f(c.tensor), ctx.clip);
  });
  mu_product_ = mu_product;
}

void Nadam::save_extra(StateWriter& out) const {
  out.put_f64(mu_product_);
  out.put_floats(m_);
  out.put_floats(v_);
}

void Nadam::load_extra(StateReader& in) {
  mu_product_ = in.get_f64();
  in.get_floats(m_, "first moment");
  in.get_floats(v_, "second moment");
}

}  // namespace dtbench::optim
