#include "optim/adadelta.hpp"

#include <cmath>

namespace dtbench::optim {

namespace {

void adadelta_pass(float* __restrict w, const float* __restrict g, float* __restrict v, float* __restrict u, size_t n,
                   float lr, float rho, float one_minus_rho, float eps, float wd, GradTransform clip) {
  for (size_t i = 0; i < n; ++i) {
    const float d = clip(g[i]) + wd * w[i];
    const float vi = rho * v[i] + one_minus_rho * d * d;
    const float delta = std::sqrt(u[i] + eps) / std::sqrt(vi + eps) * d;
    v[i] = vi;
    u[i] = rho * u[i] + one_minus_rho * delta * delta;
    w[i] = w[i] - lr * delta;
  }
}

}  // namespace

Adadelta::Adadelta(ParamTable table, CommonOptions common, AdadeltaOptions options)
    : Optimizer("adadelta", std::move(table), common), options_(options) {
  require_in_unit_open(options_.rho, "/optimizer/rho");
  require_positive(options_.eps, "/optimizer/eps");
  v_.assign(this->table().buffer_size(), 0.0f);
  u_.assign(this->table().buffer_size(), 0.0f);
}

void Adadelta::update(float* w, const float* g, const StepContext& ctx) {
  const float lr = static_cast<float>(ctx.lr);
  const float rho = static_cast<float>(options_.rho);
  const float one_minus_rho = static_cast<float>(1.0 - options_.rho);
  const float eps = static_cast<float>(options_.eps);
  for_each_chunk([&](const Chunk& c) {
    adadelta_pass(w + c.begin, g + c.begin, v_.data() + c.begin, u_.data() + c.begin, c.end - c.begin, lr, rho,
                  one_minus_rho, eps, decay_f(c.tensor), ctx.clip);
  });
}

void Adadelta::save_extra(StateWriter& out) const {
  out.put_floats(v_);
  out.put_floats(u_);
}

void Adadelta::load_extra(StateReader& in) {
  in.get_floats(v_, "mean squared gradient");
  in.get_floats(u_, "mean squared update");
}

}  // namespace dtbench::optim
