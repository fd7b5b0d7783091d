#include "optim/adam.hpp"

#include <cmath>

namespace dtbench::optim {

namespace {

// One chunk. wd is the L2 coefficient (Adam) and keep = 1 - eta lambda the decoupled shrink (AdamW).
void adam_pass(float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict v, size_t n,
               float b1, float one_minus_b1, float b2, float one_minus_b2, float step_size, float bc2_sqrt, float eps,
               float wd, float keep, GradTransform clip) {
  for (size_t i = 0; i < n; ++i) {
    const float d = clip(g[i]) + wd * w[i];
    const float mi = b1 * m[i] + one_minus_b1 * d;
    const float vi = b2 * v[i] + one_minus_b2 * d * d;
    m[i] = mi;
    v[i] = vi;
    w[i] = keep * w[i] - step_size * (mi / (std::sqrt(vi) / bc2_sqrt + eps));
  }
}

}  // namespace

void check_options(const AdamOptions& o) {
  require_in_unit_open(o.beta1, "/optimizer/beta1");
  require_in_unit_open(o.beta2, "/optimizer/beta2");
  require_positive(o.eps, "/optimizer/eps");
}

Adam::Adam(ParamTable table, CommonOptions common, AdamOptions options)
    : Optimizer(options.decoupled_weight_decay ? "adamw" : "adam", std::move(table), common), options_(options) {
  check_options(options_);
  m_.assign(this->table().buffer_size(), 0.0f);
  v_.assign(this->table().buffer_size(), 0.0f);
}

void Adam::update(float* w, const float* g, const StepContext& ctx) {
  const double t = static_cast<double>(ctx.t);
  const float b1 = static_cast<float>(options_.beta1);
  const float b2 = static_cast<float>(options_.beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - options_.beta1);
  const float one_minus_b2 = static_cast<float>(1.0 - options_.beta2);
  const float step_size = static_cast<float>(ctx.lr / (1.0 - std::pow(options_.beta1, t)));
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(options_.beta2, t)));
  const float eps = static_cast<float>(options_.eps);
  const bool decoupled = options_.decoupled_weight_decay;
  for_each_chunk([&](const Chunk& c) {
    const double lambda = weight_decay(c.tensor);
    const float wd = decoupled ? 0.0f : static_cast<float>(lambda);
    const float keep = decoupled ? static_cast<float>(1.0 - ctx.lr * lambda) : 1.0f;
    adam_pass(w + c.begin, g + c.begin, m_.data() + c.begin, v_.data() + c.begin, c.end - c.begin, b1, one_minus_b1,
              b2, one_minus_b2, step_size, bc2_sqrt, eps, wd, keep, ctx.clip);
  });
}

void Adam::save_extra(StateWriter& out) const {
  out.put_floats(m_);
  out.put_floats(v_);
}

void Adam::load_extra(StateReader& in) {
  in.get_floats(m_, "first moment");
  in.get_floats(v_, "second moment");
}

}  // namespace dtbench::optim
