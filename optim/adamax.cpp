#include "optim/adamax.hpp"

#include <cmath>

namespace dtbench::optim {

namespace {

void adamax_pass(float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict u, size_t n,
                 float b1, float one_minus_b1, float b2, float eps, float step_size, float wd, GradTransform clip) {
  for (size_t i = 0; i < n; ++i) {
    const float d = clip(g[i]) + wd * w[i];
    const float mi = b1 * m[i] + one_minus_b1 * d;
    const float decayed = b2 * u[i];
    const float fresh = std::abs(d) + eps;
    const float ui = decayed > fresh ? decayed : fresh;
    m[i] = mi;
    u[i] = ui;
    w[i] = w[i] - step_size * (mi / ui);
  }
}

}  // namespace

Adamax::Adamax(ParamTable table, CommonOptions common, AdamaxOptions options)
    : Optimizer("adamax", std::move(table), common), options_(options) {
  require_in_unit_open(options_.beta1, "/optimizer/beta1");
  require_in_unit_open(options_.beta2, "/optimizer/beta2");
  require_positive(options_.eps, "/optimizer/eps");
  m_.assign(this->table().buffer_size(), 0.0f);
  u_.assign(this->table().buffer_size(), 0.0f);
}

void Adamax::update(float* w, const float* g, const StepContext& ctx) {
  const float b1 = static_cast<float>(options_.beta1);
  const float b2 = static_cast<float>(options_.beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - options_.beta1);
  const float eps = static_cast<float>(options_.eps);
  const float step_size = static_cast<float>(ctx.lr / (1.0 - std::pow(options_.beta1, static_cast<double>(ctx.t))));
  for_each_chunk([&](const Chunk& c) {
    adamax_pass(w + c.begin, g + c.begin, m_.data() + c.begin, u_.data() + c.begin, c.end - c.begin, b1, one_minus_b1,
                b2, eps, step_size, decay_f(c.tensor), ctx.clip);
  });
}

void Adamax::save_extra(StateWriter& out) const {
  out.put_floats(m_);
  out.put_floats(u_);
}

void Adamax::load_extra(StateReader& in) {
  in.get_floats(m_, "first moment");
  in.get_floats(u_, "infinity norm");
}

}  // namespace dtbench::optim
