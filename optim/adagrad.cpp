#include "optim/adagrad.hpp"

#include <cmath>

namespace dtbench::optim {

Adagrad::Adagrad(ParamTable table, CommonOptions common, AdagradOptions options)
    : Optimizer("adagrad", std::move(table), common), options_(options) {
  require_nonnegative(options_.lr_decay, "/optimizer/lr_decay");
  require_nonnegative(options_.initial_accumulator_value, "/optimizer/initial_accumulator_value");
  require_positive(options_.eps, "/optimizer/eps");
  sum_.assign(this->table().buffer_size(), static_cast<float>(options_.initial_accumulator_value));
}

void Adagrad::update(float* w, const float* g, const StepContext& ctx) {
  const float clr = static_cast<float>(ctx.lr / (1.0 + static_cast<double>(ctx.t - 1) * options_.lr_decay));
  const float eps = static_cast<float>(options_.eps);
  for_each_chunk([&](const Chunk& c) {
    const float wd = decay_f(c.tensor);
    float* __restrict wp = w + c.begin;
    const float* __restrict gp = g + c.begin;
    float* __restrict sp = sum_.data() + c.begin;
    const GradTransform clip = ctx.clip;
    for (size_t i = 0, n = c.end - c.begin; i < n; ++i) {
      const float d = clip(gp[i]) + wd * wp[i];
      const float s = sp[i] + d * d;
      sp[i] = s;
      wp[i] = wp[i] - clr * (d / (std::sqrt(s) + eps));
    }
  });
}

void Adagrad::save_extra(StateWriter& out) const { out.put_floats(sum_); }

void Adagrad::load_extra(StateReader& in) { in.get_floats(sum_, "squared-gradient sum"); }

}  // namespace dtbench::optim
